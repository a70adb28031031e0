package extension

import (
	"fmt"
)

// AnnotationPodCPUBurst overrides, for one pod, the node's CPU burst
// configuration (NodeSLO cpuBurstStrategy): Koordinator's pod annotation.
const AnnotationPodCPUBurst = DomainPrefix + "cpuBurst"

// PodCPUBurst is the value of koordinator.sh/cpuBurst; fields left out keep
// the node's value.
type PodCPUBurst struct {
	// Policy is none, cpuBurstOnly, cfsQuotaBurstOnly or auto.
	Policy                     string `json:"policy,omitempty"`
	CPUBurstPercent            *int64 `json:"cpuBurstPercent,omitempty"`
	CFSQuotaBurstPercent       *int64 `json:"cfsQuotaBurstPercent,omitempty"`
	CFSQuotaBurstPeriodSeconds *int64 `json:"cfsQuotaBurstPeriodSeconds,omitempty"`
}

// GetPodCPUBurst parses a pod's koordinator.sh/cpuBurst; nil when absent.
func GetPodCPUBurst(annotations map[string]string) (*PodCPUBurst, error) {
	v, ok := annotations[AnnotationPodCPUBurst]
	if !ok {
		return nil, nil
	}
	var b PodCPUBurst
	if err := decodeJSON(v, &b); err != nil {
		return nil, annotationError(AnnotationPodCPUBurst, err)
	}
	switch b.Policy {
	case "", "none", "cpuBurstOnly", "cfsQuotaBurstOnly", "auto":
	default:
		return nil, annotationError(AnnotationPodCPUBurst, fmt.Errorf("policy %q is not one of none, cpuBurstOnly, cfsQuotaBurstOnly, auto", b.Policy))
	}
	switch {
	case b.CPUBurstPercent != nil && *b.CPUBurstPercent < 0:
		return nil, annotationError(AnnotationPodCPUBurst, fmt.Errorf("cpuBurstPercent %d is negative", *b.CPUBurstPercent))
	case b.CFSQuotaBurstPercent != nil && *b.CFSQuotaBurstPercent < 100:
		return nil, annotationError(AnnotationPodCPUBurst, fmt.Errorf("cfsQuotaBurstPercent %d is below 100", *b.CFSQuotaBurstPercent))
	case b.CFSQuotaBurstPeriodSeconds != nil && *b.CFSQuotaBurstPeriodSeconds < -1:
		return nil, annotationError(AnnotationPodCPUBurst, fmt.Errorf("cfsQuotaBurstPeriodSeconds %d is below -1", *b.CFSQuotaBurstPeriodSeconds))
	}
	return &b, nil
}
