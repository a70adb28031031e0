package extension

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"
)

// NUMANodeResource is what a pod takes from one NUMA node.
type NUMANodeResource struct {
	Node      int32               `json:"node"`
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// ResourceStatus is the value of scheduling.koordinator.sh/resource-status,
// the CPUs and NUMA resources the scheduler allocated to a pod.
type ResourceStatus struct {
	CPUSet            string             `json:"cpuset,omitempty"`
	NUMANodeResources []NUMANodeResource `json:"numaNodeResources,omitempty"`

	cpus cpuset.CPUSet
}

// CPUs is the parsed cpuset.
func (s *ResourceStatus) CPUs() cpuset.CPUSet { return s.cpus }

// SetCPUs records an allocation in both its parsed and its text form.
func (s *ResourceStatus) SetCPUs(cpus cpuset.CPUSet) {
	s.cpus = cpus
	s.CPUSet = cpus.String()
}

// GetResourceStatus parses the pod's resource-status annotation; absent is an
// empty status (no CPUs bound).
func GetResourceStatus(annotations map[string]string) (*ResourceStatus, error) {
	status := &ResourceStatus{}
	v, ok := annotations[AnnotationResourceStatus]
	if !ok {
		return status, nil
	}
	if err := decodeJSON(v, status); err != nil {
		return nil, annotationError(AnnotationResourceStatus, err)
	}
	cpus, err := ParseCPUSet(status.CPUSet)
	if err != nil {
		return nil, annotationError(AnnotationResourceStatus, fmt.Errorf("cpuset %q: %w", status.CPUSet, err))
	}
	status.cpus = cpus
	seen := map[int32]bool{}
	for _, r := range status.NUMANodeResources {
		if r.Node < 0 {
			return nil, annotationError(AnnotationResourceStatus, fmt.Errorf("numaNodeResources: node %d is negative", r.Node))
		}
		if seen[r.Node] {
			return nil, annotationError(AnnotationResourceStatus, fmt.Errorf("numaNodeResources: node %d listed twice", r.Node))
		}
		seen[r.Node] = true
		for name, q := range r.Resources {
			if q.Sign() < 0 {
				return nil, annotationError(AnnotationResourceStatus, fmt.Errorf("numaNodeResources: node %d: %s is negative", r.Node, name))
			}
		}
	}
	return status, nil
}

// NUMAMemory is the memory allocated on each NUMA node, in bytes by node id;
// nil when none is.
func (s *ResourceStatus) NUMAMemory() map[int]int64 {
	var out map[int]int64
	for _, r := range s.NUMANodeResources {
		if m, ok := r.Resources[corev1.ResourceMemory]; ok && !m.IsZero() {
			if out == nil {
				out = map[int]int64{}
			}
			out[int(r.Node)] += m.Value()
		}
	}
	return out
}

// Marshal is the annotation value for this status.
func (s *ResourceStatus) Marshal() (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}
