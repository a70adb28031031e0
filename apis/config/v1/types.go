package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// ScoringStrategy is LeastUsed (spread by usage) or MostUsed (pack by usage).
type ScoringStrategy string

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LoadAwareSchedulingArgs configures the LoadAwareScheduling plugin.
type LoadAwareSchedulingArgs struct {
	metav1.TypeMeta `json:",inline"`

	FilterExpiredNodeMetrics             *bool                              `json:"filterExpiredNodeMetrics,omitempty"`
	NodeMetricExpirationSeconds          *int64                             `json:"nodeMetricExpirationSeconds,omitempty"`
	EnableScheduleWhenNodeMetricsExpired *bool                              `json:"enableScheduleWhenNodeMetricsExpired,omitempty"`
	ResourceWeights                      map[corev1.ResourceName]int64      `json:"resourceWeights,omitempty"`
	UsageThresholds                      map[corev1.ResourceName]int64      `json:"usageThresholds,omitempty"`
	ProdUsageThresholds                  map[corev1.ResourceName]int64      `json:"prodUsageThresholds,omitempty"`
	ScoreAccordingProdUsage              *bool                              `json:"scoreAccordingProdUsage,omitempty"`
	EstimatedScalingFactors              map[corev1.ResourceName]int64      `json:"estimatedScalingFactors,omitempty"`
	Aggregated                           *LoadAwareSchedulingAggregatedArgs `json:"aggregated,omitempty"`
	ScoringStrategy                      ScoringStrategy                    `json:"scoringStrategy,omitempty"`
}

// LoadAwareSchedulingAggregatedArgs picks aggregated usages from NodeMetric.
type LoadAwareSchedulingAggregatedArgs struct {
	UsageThresholds         map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	UsageAggregationType    slov1alpha1.AggregationType   `json:"usageAggregationType,omitempty"`
	UsageAggregatedDuration *metav1.Duration              `json:"usageAggregatedDuration,omitempty"`
	ScoreAggregationType    slov1alpha1.AggregationType   `json:"scoreAggregationType,omitempty"`
	ScoreAggregatedDuration *metav1.Duration              `json:"scoreAggregatedDuration,omitempty"`
}
