package extension

import "fmt"

// NUMATopologyPolicy is how strictly a pod's resources must come from few NUMA nodes.
type NUMATopologyPolicy string

const (
	NUMATopologyPolicyNone           NUMATopologyPolicy = ""
	NUMATopologyPolicyBestEffort     NUMATopologyPolicy = "BestEffort"
	NUMATopologyPolicyRestricted     NUMATopologyPolicy = "Restricted"
	NUMATopologyPolicySingleNUMANode NUMATopologyPolicy = "SingleNUMANode"
)

func parseNUMATopologyPolicy(v string) (NUMATopologyPolicy, error) {
	switch p := NUMATopologyPolicy(v); p {
	case NUMATopologyPolicyNone, NUMATopologyPolicyBestEffort, NUMATopologyPolicyRestricted, NUMATopologyPolicySingleNUMANode:
		return p, nil
	case "None":
		return NUMATopologyPolicyNone, nil
	}
	return NUMATopologyPolicyNone, fmt.Errorf("numaTopologyPolicy %q is not one of None, BestEffort, Restricted, SingleNUMANode", v)
}

// NUMATopologySpec is the value of scheduling.koordinator.sh/numa-topology-spec.
type NUMATopologySpec struct {
	NUMATopologyPolicy NUMATopologyPolicy `json:"numaTopologyPolicy,omitempty"`
}

// GetNUMATopologySpec parses the pod's numa-topology-spec annotation; absent is policy None.
func GetNUMATopologySpec(annotations map[string]string) (*NUMATopologySpec, error) {
	spec := &NUMATopologySpec{}
	v, ok := annotations[AnnotationNUMATopologySpec]
	if !ok {
		return spec, nil
	}
	if err := decodeJSON(v, spec); err != nil {
		return nil, annotationError(AnnotationNUMATopologySpec, err)
	}
	p, err := parseNUMATopologyPolicy(string(spec.NUMATopologyPolicy))
	if err != nil {
		return nil, annotationError(AnnotationNUMATopologySpec, err)
	}
	spec.NUMATopologyPolicy = p
	return spec, nil
}

// GetNodeNUMATopologyPolicy parses the node's numa-topology-policy label; absent is None.
func GetNodeNUMATopologyPolicy(labels map[string]string) (NUMATopologyPolicy, error) {
	v, ok := labels[LabelNodeNUMATopologyPolicy]
	if !ok {
		return NUMATopologyPolicyNone, nil
	}
	p, err := parseNUMATopologyPolicy(v)
	if err != nil {
		return NUMATopologyPolicyNone, labelError(LabelNodeNUMATopologyPolicy, err)
	}
	return p, nil
}
