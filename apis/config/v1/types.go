package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
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

	// EstimatedSecondsAfterPodScheduled and EstimatedSecondsAfterInitialized
	// count a new pod at its estimate even once measured; with
	// AllowCustomizeEstimation a pod's annotations may set its own.
	EstimatedSecondsAfterPodScheduled *int64 `json:"estimatedSecondsAfterPodScheduled,omitempty"`
	EstimatedSecondsAfterInitialized  *int64 `json:"estimatedSecondsAfterInitialized,omitempty"`
	AllowCustomizeEstimation          bool   `json:"allowCustomizeEstimation,omitempty"`

	// DominantResourceWeight weighs, on top of resourceWeights, the score
	// of the resource the node uses most of.
	DominantResourceWeight int64 `json:"dominantResourceWeight,omitempty"`
	// ProdUsageIncludeSys counts the system's usage in prod usage.
	ProdUsageIncludeSys bool `json:"prodUsageIncludeSys,omitempty"`
	// Estimator is Koordinator's estimator name; only "default" exists.
	Estimator string `json:"estimator,omitempty"`

	// Koordinator's args Koord accepts and keeps but does not act on yet
	// (the plugin names the ones set at start).
	SupportedResources []corev1.ResourceName `json:"supportedResources,omitempty"`
}

// LoadAwareSchedulingAggregatedArgs picks aggregated usages from NodeMetric.
type LoadAwareSchedulingAggregatedArgs struct {
	UsageThresholds         map[corev1.ResourceName]int64 `json:"usageThresholds,omitempty"`
	UsageAggregationType    slov1alpha1.AggregationType   `json:"usageAggregationType,omitempty"`
	UsageAggregatedDuration *metav1.Duration              `json:"usageAggregatedDuration,omitempty"`
	ScoreAggregationType    slov1alpha1.AggregationType   `json:"scoreAggregationType,omitempty"`
	ScoreAggregatedDuration *metav1.Duration              `json:"scoreAggregatedDuration,omitempty"`
}

// ScoringType is LeastAllocated or MostAllocated.
type ScoringType string

// ResourceSpec weighs one resource in a scoring strategy.
type ResourceSpec struct {
	Name   corev1.ResourceName `json:"name"`
	Weight int64               `json:"weight,omitempty"`
}

// ResourceScoringStrategy is a scoring type and the resources it weighs.
type ResourceScoringStrategy struct {
	Type      ScoringType    `json:"type,omitempty"`
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// TopologySource is ConfigMap or NodeResourceTopology.
type TopologySource string

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeNUMAResourceArgs configures the NodeNUMAResource plugin.
type NodeNUMAResourceArgs struct {
	metav1.TypeMeta `json:",inline"`

	DefaultCPUBindPolicy extension.CPUBindPolicy  `json:"defaultCPUBindPolicy,omitempty"`
	ScoringStrategy      *ResourceScoringStrategy `json:"scoringStrategy,omitempty"`
	NUMAScoringStrategy  *ResourceScoringStrategy `json:"numaScoringStrategy,omitempty"`
	TopologySource       TopologySource           `json:"topologySource,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReservationArgs are Koordinator's Reservation plugin args, under their
// own names: accepted and kept, not acted on yet.
type ReservationArgs struct {
	metav1.TypeMeta `json:",inline"`

	EnablePreemption            *bool                           `json:"enablePreemption,omitempty"`
	MinCandidateNodesPercentage *int32                          `json:"minCandidateNodesPercentage,omitempty"`
	MinCandidateNodesAbsolute   *int32                          `json:"minCandidateNodesAbsolute,omitempty"`
	ControllerWorkers           *int32                          `json:"controllerWorkers,omitempty"`
	GCDurationSeconds           int64                           `json:"gcDurationSeconds,omitempty"`
	GCIntervalSeconds           int64                           `json:"gcIntervalSeconds,omitempty"`
	DisableGarbageCollection    bool                            `json:"disableGarbageCollection,omitempty"`
	ResyncIntervalSeconds       int64                           `json:"resyncIntervalSeconds,omitempty"`
	PreAllocationConfig         *ReservationPreAllocationConfig `json:"preAllocationConfig,omitempty"`
	IgnoredResources            []string                        `json:"ignoredResources,omitempty"`
	IgnoredResourceGroups       []string                        `json:"ignoredResourceGroups,omitempty"`
	ReservationSelectorIndex    *ReservationSelectorIndexArgs   `json:"reservationSelectorIndex,omitempty"`
}

// ReservationPreAllocationConfig is Koordinator's pre-allocation setting.
type ReservationPreAllocationConfig struct {
	EnableClusterMode            bool   `json:"enableClusterMode,omitempty"`
	ClusterLabelKey              string `json:"clusterLabelKey,omitempty"`
	ClusterPriorityAnnotationKey string `json:"clusterPriorityAnnotationKey,omitempty"`
	PreferNoPreAllocatedPods     bool   `json:"preferNoPreAllocatedPods,omitempty"`
}

// ReservationSelectorIndexArgs is Koordinator's reservation index setting.
type ReservationSelectorIndexArgs struct {
	Enabled     bool     `json:"enabled,omitempty"`
	KeyPrefixes []string `json:"keyPrefixes,omitempty"`
	Keys        []string `json:"keys,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CoschedulingArgs are Koordinator's Coscheduling (gang) plugin args.
type CoschedulingArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DefaultTimeout is a gang's wait at Permit when it does not say (600s).
	DefaultTimeout *metav1.Duration `json:"defaultTimeout,omitempty"`
	// ControllerWorkers: Koordinator's gang controller's workers (default 1;
	// Koord has none in the scheduler, so another value is reported).
	ControllerWorkers *int64 `json:"controllerWorkers,omitempty"`
	// SkipCheckScheduleCycle, EnablePreemption and AwareNetworkTopology are
	// Koordinator's; accepted, reported, not acted on.
	SkipCheckScheduleCycle *bool `json:"skipCheckScheduleCycle,omitempty"`
	EnablePreemption       *bool `json:"enablePreemption,omitempty"`
	AwareNetworkTopology   *bool `json:"awareNetworkTopology,omitempty"`
	// DefaultMatchPolicy is once-satisfied (default), only-waiting or
	// waiting-and-running.
	DefaultMatchPolicy *string `json:"defaultMatchPolicy,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ElasticQuotaArgs are Koordinator's ElasticQuota plugin args.
type ElasticQuotaArgs struct {
	metav1.TypeMeta `json:",inline"`

	// EnableRuntimeQuota (default true) checks pods against their quota's
	// runtime; false, against its max.
	EnableRuntimeQuota *bool `json:"enableRuntimeQuota,omitempty"`
	// EnableCheckParentQuota (default false) checks the ancestors too.
	EnableCheckParentQuota *bool `json:"enableCheckParentQuota,omitempty"`

	// Koordinator's; accepted, and reported when they differ from its
	// defaults.
	DefaultQuotaGroupMax          corev1.ResourceList `json:"defaultQuotaGroupMax,omitempty"`
	SystemQuotaGroupMax           corev1.ResourceList `json:"systemQuotaGroupMax,omitempty"`
	QuotaGroupNamespace           *string             `json:"quotaGroupNamespace,omitempty"`
	MonitorAllQuotas              *bool               `json:"monitorAllQuotas,omitempty"`
	DelayEvictTime                *metav1.Duration    `json:"delayEvictTime,omitempty"`
	RevokePodInterval             *metav1.Duration    `json:"revokePodInterval,omitempty"`
	EnableMinQuotaScale           *bool               `json:"enableMinQuotaScale,omitempty"`
	DisableDefaultQuotaPreemption *bool               `json:"disableDefaultQuotaPreemption,omitempty"`
	EnableQueueHint               *bool               `json:"enableQueueHint,omitempty"`
	QuotaSnapshotUpdateInterval   *metav1.Duration    `json:"quotaSnapshotUpdateInterval,omitempty"`
	HookPlugins                   []HookPluginConf    `json:"hookPlugins,omitempty"`
}

// HookPluginConf is Koordinator's ElasticQuota hook plugin entry (accepted,
// reported by key).
type HookPluginConf struct {
	Key         string `json:"key,omitempty"`
	FactoryKey  string `json:"factoryKey,omitempty"`
	FactoryArgs string `json:"factoryArgs,omitempty"`
}
