package extension

import (
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CustomAggregatedUsage overrides the aggregated-usage thresholds of LoadAwareScheduling.
type CustomAggregatedUsage struct {
	UsageThresholds map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	// UsageAggregationType is avg, p50, p90, p95 or p99.
	UsageAggregationType    string           `json:"usageAggregationType,omitempty"`
	UsageAggregatedDuration *metav1.Duration `json:"usageAggregatedDuration,omitempty"`
}

// CustomUsageThresholds is the value of the node annotation
// scheduling.koordinator.sh/usage-thresholds: per-node LoadAwareScheduling
// thresholds, in percent of allocatable.
type CustomUsageThresholds struct {
	UsageThresholds     map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	ProdUsageThresholds map[corev1.ResourceName]int64 `json:"prodUsageThresholds,omitempty"`
	AggregatedUsage     *CustomAggregatedUsage        `json:"aggregatedUsage,omitempty"`
}

// aggregationTypes mirrors slo/v1alpha1.AggregationTypes (that package imports this one).
var aggregationTypes = map[string]bool{"avg": true, "p50": true, "p90": true, "p95": true, "p99": true}

func validatePercentages(field string, m map[corev1.ResourceName]int64) error {
	for _, name := range SortedResourceNames(m) {
		if v := m[name]; v < 0 || v > 100 {
			return fmt.Errorf("%s.%s: %d is not a percentage in [0, 100]", field, name, v)
		}
	}
	return nil
}

// Validate checks every threshold is a percentage and the aggregation is known.
func (t *CustomUsageThresholds) Validate() error {
	if err := validatePercentages("usageThresholds", t.UsageThresholds); err != nil {
		return err
	}
	if err := validatePercentages("prodUsageThresholds", t.ProdUsageThresholds); err != nil {
		return err
	}
	if a := t.AggregatedUsage; a != nil {
		if err := validatePercentages("aggregatedUsage.usageThresholds", a.UsageThresholds); err != nil {
			return err
		}
		if a.UsageAggregationType != "" && !aggregationTypes[a.UsageAggregationType] {
			return fmt.Errorf("aggregatedUsage.usageAggregationType %q is not one of avg, p50, p90, p95, p99", a.UsageAggregationType)
		}
		if a.UsageAggregatedDuration != nil && a.UsageAggregatedDuration.Duration < 0 {
			return fmt.Errorf("aggregatedUsage.usageAggregatedDuration %s is negative", a.UsageAggregatedDuration.Duration)
		}
	}
	return nil
}

// GetCustomUsageThresholds parses the node's usage-thresholds annotation; nil
// without error when the node has none.
func GetCustomUsageThresholds(annotations map[string]string) (*CustomUsageThresholds, error) {
	v, ok := annotations[AnnotationCustomUsageThresholds]
	if !ok {
		return nil, nil
	}
	t := &CustomUsageThresholds{}
	if err := decodeJSON(v, t); err != nil {
		return nil, annotationError(AnnotationCustomUsageThresholds, err)
	}
	if err := t.Validate(); err != nil {
		return nil, annotationError(AnnotationCustomUsageThresholds, err)
	}
	return t, nil
}

// MaxEstimatedScalingFactor bounds a pod's own scaling factors: an estimate
// of more than ten times the request is a typo, not a forecast.
const MaxEstimatedScalingFactor = 1000

// GetCustomEstimatedScalingFactors parses a pod's
// load-estimated-scaling-factors annotation (percent per resource); nil
// without error when the pod has none.
func GetCustomEstimatedScalingFactors(annotations map[string]string) (map[corev1.ResourceName]int64, error) {
	v, ok := annotations[AnnotationCustomEstimatedScalingFactors]
	if !ok {
		return nil, nil
	}
	factors := map[corev1.ResourceName]int64{}
	if err := decodeJSON(v, &factors); err != nil {
		return nil, annotationError(AnnotationCustomEstimatedScalingFactors, err)
	}
	for _, name := range SortedResourceNames(factors) {
		if f := factors[name]; f < 0 || f > MaxEstimatedScalingFactor {
			return nil, annotationError(AnnotationCustomEstimatedScalingFactors, fmt.Errorf("%s: %d is not within 0-%d", name, f, MaxEstimatedScalingFactor))
		}
	}
	return factors, nil
}

// GetCustomEstimatedSecondsAfterPodScheduled parses a pod's
// load-estimated-seconds-after-pod-scheduled annotation; -1 without error
// when the pod has none.
func GetCustomEstimatedSecondsAfterPodScheduled(annotations map[string]string) (int64, error) {
	v, ok := annotations[AnnotationCustomEstimatedSecondsAfterPodScheduled]
	if !ok {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1, annotationError(AnnotationCustomEstimatedSecondsAfterPodScheduled, fmt.Errorf("%q is not a number of seconds", v))
	}
	return n, nil
}

// SortedResourceNames are m's keys in order, so that errors and vectors
// built from a map come out the same every time.
func SortedResourceNames(m map[corev1.ResourceName]int64) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// GetNodeRawAllocatable parses the node's raw-allocatable annotation; nil
// without error when the node has none.
func GetNodeRawAllocatable(annotations map[string]string) (corev1.ResourceList, error) {
	v, ok := annotations[AnnotationNodeRawAllocatable]
	if !ok {
		return nil, nil
	}
	var raw corev1.ResourceList
	if err := decodeJSON(v, &raw); err != nil {
		return nil, annotationError(AnnotationNodeRawAllocatable, err)
	}
	for name, q := range raw {
		if q.Sign() < 0 {
			return nil, annotationError(AnnotationNodeRawAllocatable, fmt.Errorf("%s: %s is negative", name, q.String()))
		}
	}
	return raw, nil
}
