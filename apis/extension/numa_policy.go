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
	// SingleNUMANodeExclusive is Koordinator's Required or Preferred: kept,
	// not acted on yet (docs/compatibility.md).
	SingleNUMANodeExclusive NUMATopologyExclusive `json:"singleNUMANodeExclusive,omitempty"`
}

// NUMATopologyExclusive is whether single-NUMA and multi-NUMA pods may
// share a NUMA node.
type NUMATopologyExclusive string

const (
	NUMATopologyExclusivePreferred NUMATopologyExclusive = "Preferred"
	NUMATopologyExclusiveRequired  NUMATopologyExclusive = "Required"
)

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
	switch spec.SingleNUMANodeExclusive {
	case "", NUMATopologyExclusivePreferred, NUMATopologyExclusiveRequired:
	default:
		return nil, annotationError(AnnotationNUMATopologySpec, fmt.Errorf("singleNUMANodeExclusive %q is not Required or Preferred", spec.SingleNUMANodeExclusive))
	}
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

// NUMAAllocateStrategy is how a node's NUMA nodes are chosen for a pod:
// the least allocated first (spread) or the most (pack).
type NUMAAllocateStrategy string

const (
	NUMAMostAllocated  NUMAAllocateStrategy = "MostAllocated"
	NUMALeastAllocated NUMAAllocateStrategy = "LeastAllocated"
)

// GetNodeNUMAAllocateStrategy parses the node's numa-allocate-strategy
// label; "" without error when the node has none (the plugin's
// numaScoringStrategy applies).
func GetNodeNUMAAllocateStrategy(labels map[string]string) (NUMAAllocateStrategy, error) {
	v, ok := labels[LabelNodeNUMAAllocateStrategy]
	if !ok {
		return "", nil
	}
	switch s := NUMAAllocateStrategy(v); s {
	case NUMAMostAllocated, NUMALeastAllocated:
		return s, nil
	}
	return "", labelError(LabelNodeNUMAAllocateStrategy, fmt.Errorf("%q is not MostAllocated or LeastAllocated", v))
}
