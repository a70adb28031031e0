package v1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
)

// Koordinator's defaults, so a config that names only what it changes behaves the same here.
var (
	defaultNodeMetricExpirationSeconds int64 = 180
	defaultResourceWeights                   = map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}
	defaultUsageThresholds                   = map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95}
	defaultEstimatedScalingFactors           = map[corev1.ResourceName]int64{corev1.ResourceCPU: 85, corev1.ResourceMemory: 70}
)

func copyMap(m map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetDefaults_LoadAwareSchedulingArgs fills what the operator left out.
func SetDefaults_LoadAwareSchedulingArgs(obj *LoadAwareSchedulingArgs) {
	if obj.FilterExpiredNodeMetrics == nil {
		obj.FilterExpiredNodeMetrics = ptr.To(true)
	}
	if obj.NodeMetricExpirationSeconds == nil {
		obj.NodeMetricExpirationSeconds = ptr.To(defaultNodeMetricExpirationSeconds)
	}
	if obj.EnableScheduleWhenNodeMetricsExpired == nil {
		obj.EnableScheduleWhenNodeMetricsExpired = ptr.To(false)
	}
	if len(obj.ResourceWeights) == 0 {
		obj.ResourceWeights = copyMap(defaultResourceWeights)
	}
	if obj.UsageThresholds == nil {
		obj.UsageThresholds = copyMap(defaultUsageThresholds)
	}
	if obj.ScoreAccordingProdUsage == nil {
		obj.ScoreAccordingProdUsage = ptr.To(false)
	}
	// Factors are defaulted per resource: setting only cpu keeps memory's default.
	if obj.EstimatedScalingFactors == nil {
		obj.EstimatedScalingFactors = map[corev1.ResourceName]int64{}
	}
	for k, v := range defaultEstimatedScalingFactors {
		if _, ok := obj.EstimatedScalingFactors[k]; !ok {
			obj.EstimatedScalingFactors[k] = v
		}
	}
	if obj.ScoringStrategy == "" {
		obj.ScoringStrategy = ScoringStrategy(config.LeastUsed)
	}
}

func defaultScoringStrategy() *ResourceScoringStrategy {
	return &ResourceScoringStrategy{
		Type:      ScoringType(config.LeastAllocated),
		Resources: []ResourceSpec{{Name: corev1.ResourceCPU, Weight: 1}, {Name: corev1.ResourceMemory, Weight: 1}},
	}
}

// SetDefaults_NodeNUMAResourceArgs fills what the operator left out.
func SetDefaults_NodeNUMAResourceArgs(obj *NodeNUMAResourceArgs) {
	if obj.DefaultCPUBindPolicy == "" {
		obj.DefaultCPUBindPolicy = extension.CPUBindPolicyFullPCPUs
	}
	for _, s := range []**ResourceScoringStrategy{&obj.ScoringStrategy, &obj.NUMAScoringStrategy} {
		if *s == nil {
			*s = defaultScoringStrategy()
			continue
		}
		if (*s).Type == "" {
			(*s).Type = ScoringType(config.LeastAllocated)
		}
		if len((*s).Resources) == 0 {
			(*s).Resources = defaultScoringStrategy().Resources
		}
	}
	if obj.TopologySource == "" {
		obj.TopologySource = TopologySource(config.TopologySourceConfigMap)
	}
}

// SetDefaults_CoschedulingArgs fills Koordinator's defaults.
func SetDefaults_CoschedulingArgs(obj *CoschedulingArgs) {
	if obj.DefaultTimeout == nil {
		obj.DefaultTimeout = &metav1.Duration{Duration: 600 * time.Second}
	}
	if obj.ControllerWorkers == nil {
		obj.ControllerWorkers = ptr.To[int64](1)
	}
	for _, b := range []**bool{&obj.SkipCheckScheduleCycle, &obj.EnablePreemption, &obj.AwareNetworkTopology} {
		if *b == nil {
			*b = ptr.To(false)
		}
	}
	if obj.DefaultMatchPolicy == nil {
		obj.DefaultMatchPolicy = ptr.To(extension.GangMatchOnceSatisfied)
	}
}

// SetDefaults_ElasticQuotaArgs fills Koordinator's defaults (its default
// and system group maxima are left empty: Koord has neither group, and an
// empty list is not reported).
func SetDefaults_ElasticQuotaArgs(obj *ElasticQuotaArgs) {
	for _, b := range []struct {
		p   **bool
		def bool
	}{{&obj.EnableRuntimeQuota, true}, {&obj.EnableCheckParentQuota, false}, {&obj.MonitorAllQuotas, false},
		{&obj.EnableMinQuotaScale, true}, {&obj.DisableDefaultQuotaPreemption, true}, {&obj.EnableQueueHint, false}} {
		if *b.p == nil {
			*b.p = ptr.To(b.def)
		}
	}
	if obj.QuotaGroupNamespace == nil {
		obj.QuotaGroupNamespace = ptr.To(config.DefaultQuotaGroupNamespace)
	}
	for _, d := range []struct {
		p   **metav1.Duration
		def time.Duration
	}{{&obj.DelayEvictTime, config.DefaultQuotaDelayEvictTime}, {&obj.RevokePodInterval, config.DefaultQuotaRevokePodInterval},
		{&obj.QuotaSnapshotUpdateInterval, config.DefaultQuotaSnapshotUpdateInterval}} {
		if *d.p == nil {
			*d.p = &metav1.Duration{Duration: d.def}
		}
	}
}
