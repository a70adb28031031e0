package extension

import (
	"fmt"
	"sort"

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
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		if v := m[corev1.ResourceName(name)]; v < 0 || v > 100 {
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
