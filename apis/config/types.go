package config

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// ScoringStrategy says whether LoadAwareScheduling spreads or packs by usage.
type ScoringStrategy string

const (
	// LeastUsed prefers the node with the lowest estimated usage (spreading).
	LeastUsed ScoringStrategy = "LeastUsed"
	// MostUsed prefers the node with the highest estimated usage (packing).
	MostUsed ScoringStrategy = "MostUsed"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LoadAwareSchedulingArgs configures the LoadAwareScheduling plugin. Names and
// defaults follow Koordinator's so existing configurations keep working.
type LoadAwareSchedulingArgs struct {
	metav1.TypeMeta

	// FilterExpiredNodeMetrics rejects nodes whose NodeMetric is older than
	// NodeMetricExpirationSeconds.
	FilterExpiredNodeMetrics bool
	// NodeMetricExpirationSeconds is the age after which a NodeMetric is stale.
	NodeMetricExpirationSeconds int64
	// EnableScheduleWhenNodeMetricsExpired lets pods onto nodes with stale metrics.
	EnableScheduleWhenNodeMetricsExpired bool
	// ResourceWeights weighs each resource in the score.
	ResourceWeights map[corev1.ResourceName]int64
	// UsageThresholds rejects a node whose estimated usage would exceed these
	// percentages of allocatable; 0 disables a resource.
	UsageThresholds map[corev1.ResourceName]int64
	// ProdUsageThresholds applies to prod-priority pods, against prod pods' usage.
	ProdUsageThresholds map[corev1.ResourceName]int64
	// ScoreAccordingProdUsage scores prod pods by prod pods' usage only.
	ScoreAccordingProdUsage bool
	// EstimatedScalingFactors scale a pod's request into its expected usage, in percent.
	EstimatedScalingFactors map[corev1.ResourceName]int64
	// Aggregated uses percentiles over a window instead of the latest usage.
	Aggregated *LoadAwareSchedulingAggregatedArgs
	// ScoringStrategy is LeastUsed (spread) or MostUsed (pack).
	ScoringStrategy ScoringStrategy

	// Koordinator's args Koord accepts and keeps but does not act on yet:
	// a Koordinator configuration loads unchanged, and the plugin names
	// the ones set at start (NotActedOn).
	DominantResourceWeight            int64
	ProdUsageIncludeSys               bool
	Estimator                         string
	EstimatedSecondsAfterPodScheduled *int64
	EstimatedSecondsAfterInitialized  *int64
	AllowCustomizeEstimation          bool
	SupportedResources                []corev1.ResourceName
}

// NotActedOn names the Koordinator args set in a that Koord accepts but
// does not act on yet, each as field=value.
func (a *LoadAwareSchedulingArgs) NotActedOn() []string {
	var out []string
	add := func(set bool, field string, value any) {
		if set {
			out = append(out, fmt.Sprintf("%s=%v", field, value))
		}
	}
	add(a.Estimator != "" && a.Estimator != DefaultEstimator, "estimator", a.Estimator)
	add(len(a.SupportedResources) > 0, "supportedResources", a.SupportedResources)
	return out
}

// DefaultEstimator is Koordinator's estimator, the one Koord's estimate
// follows (requests scaled by estimatedScalingFactors).
const DefaultEstimator = "default"

// LoadAwareSchedulingAggregatedArgs picks aggregated usages from NodeMetric.
type LoadAwareSchedulingAggregatedArgs struct {
	UsageThresholds         map[corev1.ResourceName]int64
	UsageAggregationType    slov1alpha1.AggregationType
	UsageAggregatedDuration metav1.Duration
	ScoreAggregationType    slov1alpha1.AggregationType
	ScoreAggregatedDuration metav1.Duration
}

// ScoringType says whether NodeNUMAResource prefers emptier or fuller nodes.
type ScoringType string

const (
	// LeastAllocated prefers nodes (and NUMA nodes) with the most free CPUs.
	LeastAllocated ScoringType = "LeastAllocated"
	// MostAllocated prefers the fullest ones, packing binding pods.
	MostAllocated ScoringType = "MostAllocated"
)

// ResourceSpec weighs one resource in a scoring strategy.
type ResourceSpec struct {
	Name   corev1.ResourceName
	Weight int64
}

// ResourceScoringStrategy is a scoring type and the resources it weighs.
type ResourceScoringStrategy struct {
	Type      ScoringType
	Resources []ResourceSpec
}

// TopologySource is where NodeNUMAResource reads node topology from.
type TopologySource string

const (
	// TopologySourceConfigMap reads koordlet's kube-system/<node>-numa-info ConfigMaps.
	TopologySourceConfigMap TopologySource = "ConfigMap"
	// TopologySourceNodeResourceTopology reads topology.node.k8s.io/v1alpha2 objects.
	TopologySourceNodeResourceTopology TopologySource = "NodeResourceTopology"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeNUMAResourceArgs configures the NodeNUMAResource plugin.
type NodeNUMAResourceArgs struct {
	metav1.TypeMeta

	// DefaultCPUBindPolicy applies to binding pods that name no policy.
	DefaultCPUBindPolicy extension.CPUBindPolicy
	// ScoringStrategy scores nodes by their free CPUs.
	ScoringStrategy *ResourceScoringStrategy
	// NUMAScoringStrategy scores the NUMA nodes within a node.
	NUMAScoringStrategy *ResourceScoringStrategy
	// TopologySource is where node topology comes from.
	TopologySource TopologySource
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReservationArgs configures the Reservation plugin. Its fields are
// Koordinator's, accepted so that a Koordinator configuration loads
// unchanged; none changes what Koord does yet (NotActedOn names the ones
// set): reservations are placed on free resources only, and koord-manager
// collects finished ones (--reservation-gc-after).
type ReservationArgs struct {
	metav1.TypeMeta

	EnablePreemption            bool
	MinCandidateNodesPercentage int32
	MinCandidateNodesAbsolute   int32
	ControllerWorkers           int32
	GCDurationSeconds           int64
	GCIntervalSeconds           int64
	DisableGarbageCollection    bool
	ResyncIntervalSeconds       int64
	PreAllocationConfig         *ReservationPreAllocationConfig
	IgnoredResources            []string
	IgnoredResourceGroups       []string
	ReservationSelectorIndex    *ReservationSelectorIndexArgs
}

// ReservationPreAllocationConfig is Koordinator's pre-allocation setting.
type ReservationPreAllocationConfig struct {
	EnableClusterMode            bool
	ClusterLabelKey              string
	ClusterPriorityAnnotationKey string
	PreferNoPreAllocatedPods     bool
}

// ReservationSelectorIndexArgs is Koordinator's reservation index setting.
type ReservationSelectorIndexArgs struct {
	Enabled     bool
	KeyPrefixes []string
	Keys        []string
}

// NotActedOn names the args set, as "field=value".
func (a *ReservationArgs) NotActedOn() []string {
	var out []string
	add := func(set bool, field string, value any) {
		if set {
			out = append(out, fmt.Sprintf("%s=%v", field, value))
		}
	}
	add(a.EnablePreemption, "enablePreemption", a.EnablePreemption)
	add(a.MinCandidateNodesPercentage != 0, "minCandidateNodesPercentage", a.MinCandidateNodesPercentage)
	add(a.MinCandidateNodesAbsolute != 0, "minCandidateNodesAbsolute", a.MinCandidateNodesAbsolute)
	add(a.ControllerWorkers != 0, "controllerWorkers", a.ControllerWorkers)
	add(a.GCDurationSeconds != 0, "gcDurationSeconds", a.GCDurationSeconds)
	add(a.GCIntervalSeconds != 0, "gcIntervalSeconds", a.GCIntervalSeconds)
	add(a.DisableGarbageCollection, "disableGarbageCollection", a.DisableGarbageCollection)
	add(a.ResyncIntervalSeconds != 0, "resyncIntervalSeconds", a.ResyncIntervalSeconds)
	add(a.PreAllocationConfig != nil, "preAllocationConfig", "set")
	add(len(a.IgnoredResources) > 0, "ignoredResources", a.IgnoredResources)
	add(len(a.IgnoredResourceGroups) > 0, "ignoredResourceGroups", a.IgnoredResourceGroups)
	add(a.ReservationSelectorIndex != nil, "reservationSelectorIndex", "set")
	return out
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CoschedulingArgs configures the Coscheduling (gang) plugin, under
// Koordinator's names.
type CoschedulingArgs struct {
	metav1.TypeMeta

	// DefaultTimeout is how long a gang's placed members wait at Permit for
	// the others when neither its PodGroup nor its annotations say.
	DefaultTimeout metav1.Duration
	// DefaultMatchPolicy says which members count towards minMember when
	// the gang does not say: once-satisfied, only-waiting,
	// waiting-and-running.
	DefaultMatchPolicy string
	// Koordinator's, accepted and reported (NotActedOn): Koord keeps no gang
	// controller in the scheduler (koord-manager writes PodGroup status), and
	// preempts for gangs and reads network topology not at all.
	ControllerWorkers      int64
	SkipCheckScheduleCycle bool
	EnablePreemption       bool
	AwareNetworkTopology   bool
}

// NotActedOn names the args set that change nothing, as "field=value".
func (a *CoschedulingArgs) NotActedOn() []string {
	var out []string
	if a.ControllerWorkers != 1 {
		out = append(out, fmt.Sprintf("controllerWorkers=%d", a.ControllerWorkers))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"skipCheckScheduleCycle", a.SkipCheckScheduleCycle}, {"enablePreemption", a.EnablePreemption}, {"awareNetworkTopology", a.AwareNetworkTopology}} {
		if f.set {
			out = append(out, f.name+"=true")
		}
	}
	return out
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ElasticQuotaArgs configures the ElasticQuota plugin, under Koordinator's
// names.
type ElasticQuotaArgs struct {
	metav1.TypeMeta

	// EnableRuntimeQuota checks a pod against its quota's runtime (min plus
	// its share of what others leave idle); false checks against max.
	EnableRuntimeQuota bool
	// EnableCheckParentQuota checks the quota's ancestors too. (A child's
	// runtime never passes its parent's, so this matters only with
	// EnableRuntimeQuota off.)
	EnableCheckParentQuota bool

	// Koordinator's, accepted and reported when they differ from its
	// defaults (NotActedOn): Koord keeps pods without a quota outside the
	// tree (no default or system group), gives borrowed capacity back by
	// preemption at the lender's PostFilter rather than by a revoking loop,
	// and always scales mins that pass the cluster's capacity.
	DefaultQuotaGroupMax          corev1.ResourceList
	SystemQuotaGroupMax           corev1.ResourceList
	QuotaGroupNamespace           string
	MonitorAllQuotas              bool
	DelayEvictTime                metav1.Duration
	RevokePodInterval             metav1.Duration
	EnableMinQuotaScale           bool
	DisableDefaultQuotaPreemption bool
	EnableQueueHint               bool
	QuotaSnapshotUpdateInterval   metav1.Duration
	HookPlugins                   []HookPluginConf
}

// HookPluginConf is Koordinator's ElasticQuota hook plugin entry.
type HookPluginConf struct {
	Key         string
	FactoryKey  string
	FactoryArgs string
}

// Koordinator's ElasticQuotaArgs defaults, which NotActedOn compares with.
const (
	DefaultQuotaGroupNamespace         = "koordinator-system"
	DefaultQuotaDelayEvictTime         = 120 * time.Second
	DefaultQuotaRevokePodInterval      = time.Second
	DefaultQuotaSnapshotUpdateInterval = 120 * time.Second
)

// NotActedOn names the args set that change nothing, as "field=value".
func (a *ElasticQuotaArgs) NotActedOn() []string {
	var out []string
	add := func(cond bool, field string, value any) {
		if cond {
			out = append(out, fmt.Sprintf("%s=%v", field, value))
		}
	}
	add(len(a.DefaultQuotaGroupMax) > 0, "defaultQuotaGroupMax", "set")
	add(len(a.SystemQuotaGroupMax) > 0, "systemQuotaGroupMax", "set")
	add(a.QuotaGroupNamespace != "" && a.QuotaGroupNamespace != DefaultQuotaGroupNamespace, "quotaGroupNamespace", a.QuotaGroupNamespace)
	add(a.MonitorAllQuotas, "monitorAllQuotas", true)
	add(a.DelayEvictTime.Duration != 0 && a.DelayEvictTime.Duration != DefaultQuotaDelayEvictTime, "delayEvictTime", a.DelayEvictTime.Duration)
	add(a.RevokePodInterval.Duration != 0 && a.RevokePodInterval.Duration != DefaultQuotaRevokePodInterval, "revokePodInterval", a.RevokePodInterval.Duration)
	add(!a.EnableMinQuotaScale, "enableMinQuotaScale", false)
	add(!a.DisableDefaultQuotaPreemption, "disableDefaultQuotaPreemption", false)
	add(a.EnableQueueHint, "enableQueueHint", true)
	add(a.QuotaSnapshotUpdateInterval.Duration != 0 && a.QuotaSnapshotUpdateInterval.Duration != DefaultQuotaSnapshotUpdateInterval, "quotaSnapshotUpdateInterval", a.QuotaSnapshotUpdateInterval.Duration)
	for _, h := range a.HookPlugins {
		out = append(out, "hookPlugins="+h.Key)
	}
	return out
}
