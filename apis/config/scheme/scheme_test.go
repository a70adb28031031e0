package scheme

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/config/validation"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// decode reads a KubeSchedulerConfiguration exactly as kube-scheduler does.
func decode(t *testing.T, doc string) (*schedconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	obj, _, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode([]byte(doc), nil, nil)
	if err != nil {
		return nil, err
	}
	return obj.(*schedconfig.KubeSchedulerConfiguration), nil
}

func loadAwareArgs(t *testing.T, args string) *config.LoadAwareSchedulingArgs {
	t.Helper()
	cfg, err := decode(t, `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    pluginConfig:
      - name: LoadAwareScheduling
        args: `+args+"\n")
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	got, ok := cfg.Profiles[0].PluginConfig[0].Args.(*config.LoadAwareSchedulingArgs)
	if !ok {
		t.Fatalf("args decoded as %T, want *config.LoadAwareSchedulingArgs", cfg.Profiles[0].PluginConfig[0].Args)
	}
	return got
}

func TestLoadAwareSchedulingArgsDefaults(t *testing.T) {
	got := loadAwareArgs(t, "{}")
	want := &config.LoadAwareSchedulingArgs{
		FilterExpiredNodeMetrics:             true,
		NodeMetricExpirationSeconds:          180,
		EnableScheduleWhenNodeMetricsExpired: false,
		ResourceWeights:                      map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1},
		UsageThresholds:                      map[corev1.ResourceName]int64{corev1.ResourceCPU: 65, corev1.ResourceMemory: 95},
		EstimatedScalingFactors:              map[corev1.ResourceName]int64{corev1.ResourceCPU: 85, corev1.ResourceMemory: 70},
		ScoringStrategy:                      config.LeastUsed,
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "TypeMeta" }, cmp.Ignore())); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if err := validation.ValidateLoadAwareSchedulingArgs(field.NewPath("args"), got); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestLoadAwareSchedulingArgsExplicit(t *testing.T) {
	got := loadAwareArgs(t, `
          filterExpiredNodeMetrics: false
          usageThresholds: {cpu: 0}
          estimatedScalingFactors: {cpu: 100}
          scoringStrategy: MostUsed
          aggregated:
            usageThresholds: {cpu: 80}
            usageAggregationType: p95
            usageAggregatedDuration: 5m
            scoreAggregationType: avg`)
	if got.FilterExpiredNodeMetrics {
		t.Error("filterExpiredNodeMetrics: false was overridden by the default")
	}
	// An explicit map replaces the default map; 0 disables a resource.
	if diff := cmp.Diff(map[corev1.ResourceName]int64{corev1.ResourceCPU: 0}, got.UsageThresholds); diff != "" {
		t.Errorf("usageThresholds: %s", diff)
	}
	// Scaling factors are defaulted per resource.
	if diff := cmp.Diff(map[corev1.ResourceName]int64{corev1.ResourceCPU: 100, corev1.ResourceMemory: 70}, got.EstimatedScalingFactors); diff != "" {
		t.Errorf("estimatedScalingFactors: %s", diff)
	}
	want := &config.LoadAwareSchedulingAggregatedArgs{
		UsageThresholds:         map[corev1.ResourceName]int64{corev1.ResourceCPU: 80},
		UsageAggregationType:    slov1alpha1.P95,
		UsageAggregatedDuration: metav1.Duration{Duration: 5 * time.Minute},
		ScoreAggregationType:    slov1alpha1.AVG,
	}
	if diff := cmp.Diff(want, got.Aggregated); diff != "" {
		t.Errorf("aggregated: %s", diff)
	}
	if got.ScoringStrategy != config.MostUsed {
		t.Errorf("scoringStrategy = %q", got.ScoringStrategy)
	}
}

func TestLoadAwareSchedulingArgsValidation(t *testing.T) {
	cases := map[string]string{
		"{usageThresholds: {cpu: 101}}":                "args.usageThresholds[cpu]",
		"{prodUsageThresholds: {memory: -1}}":          "args.prodUsageThresholds[memory]",
		"{resourceWeights: {cpu: 0}}":                  "args.resourceWeights[cpu]",
		"{estimatedScalingFactors: {memory: 0}}":       "args.estimatedScalingFactors[memory]",
		"{nodeMetricExpirationSeconds: 0}":             "args.nodeMetricExpirationSeconds",
		"{scoringStrategy: Balanced}":                  "args.scoringStrategy",
		"{aggregated: {usageAggregationType: p42}}":    "args.aggregated.usageAggregationType",
		"{aggregated: {usageThresholds: {cpu: 200}}}":  "args.aggregated.usageThresholds[cpu]",
		"{aggregated: {scoreAggregatedDuration: -1m}}": "args.aggregated.scoreAggregatedDuration",
	}
	for args, field_ := range cases {
		err := validation.ValidateLoadAwareSchedulingArgs(field.NewPath("args"), loadAwareArgs(t, args))
		if err == nil {
			t.Errorf("%s: accepted", args)
			continue
		}
		if got := err.Error(); len(got) < len(field_) || got[:len(field_)] != field_ {
			t.Errorf("%s: error %q should start with the field %s", args, got, field_)
		}
	}
}

func TestStrictDecoding(t *testing.T) {
	_, err := decode(t, `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - pluginConfig:
      - name: LoadAwareScheduling
        args: {usageThreshold: {cpu: 50}}
`)
	if err == nil {
		t.Fatal("a misspelt field was accepted")
	}
}

func numaArgs(t *testing.T, args string) *config.NodeNUMAResourceArgs {
	t.Helper()
	cfg, err := decode(t, `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    pluginConfig:
      - name: NodeNUMAResource
        args: `+args+"\n")
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	got, ok := cfg.Profiles[0].PluginConfig[0].Args.(*config.NodeNUMAResourceArgs)
	if !ok {
		t.Fatalf("args decoded as %T", cfg.Profiles[0].PluginConfig[0].Args)
	}
	return got
}

func TestNodeNUMAResourceArgs(t *testing.T) {
	got := numaArgs(t, "{}")
	strategy := &config.ResourceScoringStrategy{Type: config.LeastAllocated, Resources: []config.ResourceSpec{{Name: corev1.ResourceCPU, Weight: 1}, {Name: corev1.ResourceMemory, Weight: 1}}}
	want := &config.NodeNUMAResourceArgs{
		DefaultCPUBindPolicy: "FullPCPUs",
		ScoringStrategy:      strategy,
		NUMAScoringStrategy:  strategy,
		TopologySource:       config.TopologySourceConfigMap,
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "TypeMeta" }, cmp.Ignore())); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if err := validation.ValidateNodeNUMAResourceArgs(field.NewPath("args"), got); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}

	got = numaArgs(t, "{defaultCPUBindPolicy: SpreadByPCPUs, scoringStrategy: {type: MostAllocated}, topologySource: NodeResourceTopology}")
	if got.DefaultCPUBindPolicy != "SpreadByPCPUs" || got.ScoringStrategy.Type != config.MostAllocated || len(got.ScoringStrategy.Resources) != 2 ||
		got.TopologySource != config.TopologySourceNodeResourceTopology {
		t.Errorf("explicit args = %+v", got)
	}

	for args, field_ := range map[string]string{
		"{defaultCPUBindPolicy: Whole}":                                         "args.defaultCPUBindPolicy",
		"{scoringStrategy: {type: Balanced}}":                                   "args.scoringStrategy.type",
		"{numaScoringStrategy: {resources: [{name: cpu, weight: 0}]}}":          "args.numaScoringStrategy.resources[0].weight",
		"{scoringStrategy: {resources: [{name: cpu}, {name: cpu, weight: 1}]}}": "args.scoringStrategy.resources[0].weight",
		"{topologySource: Sysfs}":                                               "args.topologySource",
	} {
		err := validation.ValidateNodeNUMAResourceArgs(field.NewPath("args"), numaArgs(t, args))
		if err == nil || !strings.Contains(err.Error(), field_) {
			t.Errorf("%s: error %v should name %s", args, err, field_)
		}
	}
}

// Koordinator's LoadAwareScheduling args that koord-scheduler refused at
// start decode, validate, are kept, and are named as not acted on yet.
func TestKoordinatorLoadAwareArgsAccepted(t *testing.T) {
	got := loadAwareArgs(t, `{estimator: default, dominantResourceWeight: 2, prodUsageIncludeSys: true,
          estimatedSecondsAfterPodScheduled: 120, estimatedSecondsAfterInitialized: 30, allowCustomizeEstimation: true,
          supportedResources: [kubernetes.io/batch-cpu]}`)
	if err := validation.ValidateLoadAwareSchedulingArgs(field.NewPath("args"), got); err != nil {
		t.Fatalf("Koordinator's args refused: %v", err)
	}
	if got.DominantResourceWeight != 2 || !got.ProdUsageIncludeSys || got.EstimatedSecondsAfterPodScheduled == nil || *got.EstimatedSecondsAfterPodScheduled != 120 ||
		got.EstimatedSecondsAfterInitialized == nil || *got.EstimatedSecondsAfterInitialized != 30 || !got.AllowCustomizeEstimation || len(got.SupportedResources) != 1 {
		t.Errorf("args not kept: %+v", got)
	}
	// estimatedSecondsAfter*, allowCustomizeEstimation,
	// dominantResourceWeight and prodUsageIncludeSys are acted on.
	want := []string{"supportedResources=[kubernetes.io/batch-cpu]"}
	if diff := cmp.Diff(want, got.NotActedOn()); diff != "" {
		t.Errorf("NotActedOn (-want +got):\n%s", diff)
	}
	// Out of range is still an error naming the field.
	bad := loadAwareArgs(t, `{estimator: magic, dominantResourceWeight: -1, estimatedSecondsAfterInitialized: -5}`)
	err := validation.ValidateLoadAwareSchedulingArgs(field.NewPath("args"), bad)
	for _, f := range []string{"args.estimator", "args.dominantResourceWeight", "args.estimatedSecondsAfterInitialized"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%v, want an error naming %s", err, f)
		}
	}
}

// Koordinator's ReservationArgs load under their own names, are kept, and
// are named as not acted on; a negative count is still an error.
func TestKoordinatorReservationArgsAccepted(t *testing.T) {
	cfg, err := decode(t, `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    pluginConfig:
      - name: Reservation
        args: {enablePreemption: true, minCandidateNodesPercentage: 10, gcDurationSeconds: 86400, preAllocationConfig: {enableClusterMode: true}}
`)
	if err != nil {
		t.Fatal(err)
	}
	args, ok := cfg.Profiles[0].PluginConfig[0].Args.(*config.ReservationArgs)
	if !ok {
		t.Fatalf("args decoded as %T", cfg.Profiles[0].PluginConfig[0].Args)
	}
	want := []string{"enablePreemption=true", "minCandidateNodesPercentage=10", "gcDurationSeconds=86400", "preAllocationConfig=set"}
	if diff := cmp.Diff(want, args.NotActedOn()); diff != "" {
		t.Errorf("NotActedOn (-want +got):\n%s", diff)
	}
	args.MinCandidateNodesPercentage = 150
	if err := validation.ValidateReservationArgs(field.NewPath("args"), args); err == nil || !strings.Contains(err.Error(), "args.minCandidateNodesPercentage") {
		t.Errorf("%v, want an error naming args.minCandidateNodesPercentage", err)
	}
}

// Koordinator's CoschedulingArgs load under their own names with its
// defaults; what Koord does not act on is named; a bad match policy or
// timeout is an error naming the field.
func TestKoordinatorCoschedulingArgs(t *testing.T) {
	cfg, err := decode(t, `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    pluginConfig:
      - name: Coscheduling
        args: {controllerWorkers: 4, enablePreemption: true}
`)
	if err != nil {
		t.Fatal(err)
	}
	args, ok := cfg.Profiles[0].PluginConfig[0].Args.(*config.CoschedulingArgs)
	if !ok {
		t.Fatalf("args decoded as %T", cfg.Profiles[0].PluginConfig[0].Args)
	}
	if args.DefaultTimeout.Duration != 600*time.Second || args.DefaultMatchPolicy != "once-satisfied" {
		t.Errorf("defaults: timeout %v, match policy %q; want Koordinator's 600s and once-satisfied", args.DefaultTimeout.Duration, args.DefaultMatchPolicy)
	}
	if diff := cmp.Diff([]string{"controllerWorkers=4", "enablePreemption=true"}, args.NotActedOn()); diff != "" {
		t.Errorf("NotActedOn (-want +got):\n%s", diff)
	}
	args.DefaultMatchPolicy = "all"
	args.DefaultTimeout.Duration = 0
	err = validation.ValidateCoschedulingArgs(field.NewPath("args"), args)
	if err == nil || !strings.Contains(err.Error(), "args.defaultMatchPolicy") || !strings.Contains(err.Error(), "args.defaultTimeout") {
		t.Errorf("%v, want errors naming args.defaultMatchPolicy and args.defaultTimeout", err)
	}
}

// Koordinator's ElasticQuotaArgs load under their own names: its defaults
// report nothing; what Koord does not act on is named when set otherwise;
// a negative group max is an error naming the field.
func TestKoordinatorElasticQuotaArgs(t *testing.T) {
	decodeArgs := func(args string) *config.ElasticQuotaArgs {
		cfg, err := decode(t, `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    pluginConfig:
      - name: ElasticQuota
        args: `+args+"\n")
		if err != nil {
			t.Fatal(err)
		}
		a, ok := cfg.Profiles[0].PluginConfig[0].Args.(*config.ElasticQuotaArgs)
		if !ok {
			t.Fatalf("args decoded as %T", cfg.Profiles[0].PluginConfig[0].Args)
		}
		return a
	}
	args := decodeArgs("{quotaGroupNamespace: koordinator-system, delayEvictTime: 120s}")
	if !args.EnableRuntimeQuota || args.EnableCheckParentQuota || len(args.NotActedOn()) != 0 {
		t.Errorf("defaults: runtime %v, parent %v, not acted on %v", args.EnableRuntimeQuota, args.EnableCheckParentQuota, args.NotActedOn())
	}
	args = decodeArgs(`{monitorAllQuotas: true, enableRuntimeQuota: false, revokePodInterval: 5s, defaultQuotaGroupMax: {cpu: "-1"}, hookPlugins: [{key: k}]}`)
	if args.EnableRuntimeQuota {
		t.Error("enableRuntimeQuota: false was not read")
	}
	if diff := cmp.Diff([]string{"defaultQuotaGroupMax=set", "monitorAllQuotas=true", "revokePodInterval=5s", "hookPlugins=k"}, args.NotActedOn()); diff != "" {
		t.Errorf("NotActedOn (-want +got):\n%s", diff)
	}
	err := validation.ValidateElasticQuotaArgs(field.NewPath("args"), args)
	if err == nil || !strings.Contains(err.Error(), "args.defaultQuotaGroupMax[cpu]") {
		t.Errorf("%v, want an error naming args.defaultQuotaGroupMax[cpu]", err)
	}
}
