package extension

import (
	"fmt"
)

// CPUBindPolicy says how the scheduler picks CPUs for a pod.
type CPUBindPolicy string

const (
	// CPUBindPolicyDefault uses the scheduler's defaultCPUBindPolicy.
	CPUBindPolicyDefault CPUBindPolicy = "Default"
	// CPUBindPolicyFullPCPUs binds whole physical cores.
	CPUBindPolicyFullPCPUs CPUBindPolicy = "FullPCPUs"
	// CPUBindPolicySpreadByPCPUs binds one thread per core first.
	CPUBindPolicySpreadByPCPUs CPUBindPolicy = "SpreadByPCPUs"
	// CPUBindPolicyConstrainedBurst binds a set the pod may burst within.
	CPUBindPolicyConstrainedBurst CPUBindPolicy = "ConstrainedBurst"
)

func validCPUBindPolicy(p CPUBindPolicy) bool {
	switch p {
	case "", CPUBindPolicyDefault, CPUBindPolicyFullPCPUs, CPUBindPolicySpreadByPCPUs, CPUBindPolicyConstrainedBurst:
		return true
	}
	return false
}

// CPUExclusivePolicy keeps other exclusive pods off the CPUs a pod gets.
type CPUExclusivePolicy string

const (
	CPUExclusivePolicyNone          CPUExclusivePolicy = "None"
	CPUExclusivePolicyPCPULevel     CPUExclusivePolicy = "PCPULevel"
	CPUExclusivePolicyNUMANodeLevel CPUExclusivePolicy = "NUMANodeLevel"
)

// ResourceSpec is the value of scheduling.koordinator.sh/resource-spec.
type ResourceSpec struct {
	RequiredCPUBindPolicy       CPUBindPolicy      `json:"requiredCPUBindPolicy,omitempty"`
	PreferredCPUBindPolicy      CPUBindPolicy      `json:"preferredCPUBindPolicy,omitempty"`
	PreferredCPUExclusivePolicy CPUExclusivePolicy `json:"preferredCPUExclusivePolicy,omitempty"`
}

// Validate checks every policy is one this scheduler knows.
func (s *ResourceSpec) Validate() error {
	if !validCPUBindPolicy(s.RequiredCPUBindPolicy) {
		return fmt.Errorf("requiredCPUBindPolicy %q is not one of Default, FullPCPUs, SpreadByPCPUs, ConstrainedBurst", s.RequiredCPUBindPolicy)
	}
	if !validCPUBindPolicy(s.PreferredCPUBindPolicy) {
		return fmt.Errorf("preferredCPUBindPolicy %q is not one of Default, FullPCPUs, SpreadByPCPUs, ConstrainedBurst", s.PreferredCPUBindPolicy)
	}
	switch s.PreferredCPUExclusivePolicy {
	case "", CPUExclusivePolicyNone, CPUExclusivePolicyPCPULevel, CPUExclusivePolicyNUMANodeLevel:
	default:
		return fmt.Errorf("preferredCPUExclusivePolicy %q is not one of None, PCPULevel, NUMANodeLevel", s.PreferredCPUExclusivePolicy)
	}
	return nil
}

// GetResourceSpec parses the pod's resource-spec annotation; a pod without it
// gets an empty spec.
func GetResourceSpec(annotations map[string]string) (*ResourceSpec, error) {
	spec := &ResourceSpec{}
	v, ok := annotations[AnnotationResourceSpec]
	if !ok {
		return spec, nil
	}
	if err := decodeJSON(v, spec); err != nil {
		return nil, annotationError(AnnotationResourceSpec, err)
	}
	if err := spec.Validate(); err != nil {
		return nil, annotationError(AnnotationResourceSpec, err)
	}
	return spec, nil
}

// NodeCPUBindPolicy is the value of the node label node.koordinator.sh/cpu-bind-policy.
type NodeCPUBindPolicy string

const (
	NodeCPUBindPolicyNone          NodeCPUBindPolicy = "None"
	NodeCPUBindPolicyFullPCPUsOnly NodeCPUBindPolicy = "FullPCPUsOnly"
	NodeCPUBindPolicySpreadByPCPUs NodeCPUBindPolicy = "SpreadByPCPUs"
)

// GetNodeCPUBindPolicy parses the node's cpu-bind-policy label; absent is None.
func GetNodeCPUBindPolicy(labels map[string]string) (NodeCPUBindPolicy, error) {
	v, ok := labels[LabelNodeCPUBindPolicy]
	if !ok {
		return NodeCPUBindPolicyNone, nil
	}
	switch p := NodeCPUBindPolicy(v); p {
	case "", NodeCPUBindPolicyNone:
		return NodeCPUBindPolicyNone, nil
	case NodeCPUBindPolicyFullPCPUsOnly, NodeCPUBindPolicySpreadByPCPUs:
		return p, nil
	}
	return NodeCPUBindPolicyNone, labelError(LabelNodeCPUBindPolicy, fmt.Errorf("%q is not one of None, FullPCPUsOnly, SpreadByPCPUs", v))
}
