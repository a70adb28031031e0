// Package features holds Koord's feature gates: one registry, so the same
// --feature-gates string (the chart's featureGates value) is accepted by every
// Koord component; each component acts only on the gates that concern it.
package features

import (
	"flag"
	"sort"
	"strings"

	"k8s.io/component-base/featuregate"
)

const (
	// RunqueueLatency lets koordlet measure each pod's run-queue latency with
	// eBPF (koordlet's --runqueue-latency must be on too).
	RunqueueLatency featuregate.Feature = "RunqueueLatency"
	// BatchResource lets koord-manager publish kubernetes.io/batch-cpu and
	// kubernetes.io/batch-memory on each Node from its measured slack, and
	// koordlet turn a BE pod's batch requests and limits into its cgroups'
	// CPU weight, CFS quota and memory limit.
	BatchResource featuregate.Feature = "BatchResource"
	// NodeSLOSync lets koord-manager keep a NodeSLO per node in line with the
	// slo-controller-config ConfigMap.
	NodeSLOSync featuregate.Feature = "NodeSLOSync"

	// The koordlet QoS strategies, each also switched on per node by its
	// NodeSLO (Koordinator's gate names and defaults).

	// BECPUSuppress lets koordlet bound what BE pods together may use of the
	// node's CPU (resourceUsedThresholdWithBE.cpuSuppressThresholdPercent), by
	// cpuset or CFS quota; the interference guard acts through it.
	BECPUSuppress featuregate.Feature = "BECPUSuppress"
	// BECPUEvict lets koordlet evict BE pods starved of CPU for a window.
	BECPUEvict featuregate.Feature = "BECPUEvict"
	// BEMemoryEvict lets koordlet evict BE pods when node memory passes
	// memoryEvictThresholdPercent.
	BEMemoryEvict featuregate.Feature = "BEMemoryEvict"
	// CPUBurst lets koordlet set cpu.cfs_burst_us and scale the CFS quota of
	// LS containers with a CPU limit (NodeSLO cpuBurstStrategy).
	CPUBurst featuregate.Feature = "CPUBurst"
	// CgroupReconcile lets koordlet write memory.min/low/high from
	// resourceQOSStrategy.<class>.memoryQOS.
	CgroupReconcile featuregate.Feature = "CgroupReconcile"
	// GroupIdentity lets koordlet give BE pods the kernel's lowest CPU
	// priority (resourceQOSStrategy.<class>.cpuQOS): group identity where the
	// kernel has it, else the idle scheduling class (cpu.idle).
	GroupIdentity featuregate.Feature = "GroupIdentity"

	// koord-manager's admission webhooks (Koordinator's gate names).

	// PodMutatingWebhook lets koord-manager apply ClusterColocationProfiles
	// to pods as they are created.
	PodMutatingWebhook featuregate.Feature = "PodMutatingWebhook"
	// PodValidatingWebhook lets koord-manager refuse pods (and Reservations)
	// whose QoS class, priority and resources contradict each other, or
	// whose Koord annotations do not parse.
	PodValidatingWebhook featuregate.Feature = "PodValidatingWebhook"
	// ConfigMapValidatingWebhook lets koord-manager refuse an
	// slo-controller-config it would not accept. Koordinator's default is
	// off; Koord's is on: refusing at apply time loses nothing, while an
	// accepted invalid key is only reported afterwards.
	ConfigMapValidatingWebhook featuregate.Feature = "ConfigMapValidatingWebhook"
	// ElasticValidatingWebhook lets koord-manager refuse an ElasticQuota
	// whose name another namespace's quota already has (quota names are
	// cluster-wide, as in Koordinator).
	ElasticValidatingWebhook featuregate.Feature = "ElasticValidatingWebhook"
	// ColocationProfileSkipMutatingResources keeps the pod webhook from
	// moving cpu and memory to batch or mid resources.
	ColocationProfileSkipMutatingResources featuregate.Feature = "ColocationProfileSkipMutatingResources"
	// ColocationProfileSkipValidatingPriority lets a pod's
	// koordinator.sh/priority label change after creation.
	ColocationProfileSkipValidatingPriority featuregate.Feature = "ColocationProfileSkipValidatingPriority"

	// ResourceRecommender lets koord-manager profile workloads: it learns
	// each container's needs from the usage koordlet reports and writes them
	// to Recommendation status, and creates Recommendations for
	// RecommendationProfiles.
	ResourceRecommender featuregate.Feature = "ResourceRecommender"
)

var defaults = map[featuregate.Feature]featuregate.FeatureSpec{
	RunqueueLatency: {Default: true, PreRelease: featuregate.Beta},
	BatchResource:   {Default: true, PreRelease: featuregate.Beta},
	NodeSLOSync:     {Default: true, PreRelease: featuregate.Beta},
	BECPUSuppress:   {Default: true, PreRelease: featuregate.Beta},
	BECPUEvict:      {Default: false, PreRelease: featuregate.Alpha},
	BEMemoryEvict:   {Default: false, PreRelease: featuregate.Alpha},
	CPUBurst:        {Default: true, PreRelease: featuregate.Beta},
	CgroupReconcile: {Default: false, PreRelease: featuregate.Alpha},
	GroupIdentity:   {Default: true, PreRelease: featuregate.Beta},

	PodMutatingWebhook:                      {Default: true, PreRelease: featuregate.Beta},
	PodValidatingWebhook:                    {Default: true, PreRelease: featuregate.Beta},
	ConfigMapValidatingWebhook:              {Default: true, PreRelease: featuregate.Beta},
	ElasticValidatingWebhook:                {Default: true, PreRelease: featuregate.Beta},
	ColocationProfileSkipMutatingResources:  {Default: false, PreRelease: featuregate.Alpha},
	ColocationProfileSkipValidatingPriority: {Default: false, PreRelease: featuregate.Alpha},
	ResourceRecommender:                     {Default: false, PreRelease: featuregate.Alpha},
}

// Add registers Koord's gates, and Koordinator's that Koord accepts without
// implementing them, on g (koord-scheduler adds them to kube-scheduler's own
// gate so one --feature-gates flag takes both).
func Add(g featuregate.MutableFeatureGate) error {
	if err := g.Add(defaults); err != nil {
		return err
	}
	return g.Add(koordinatorOnly)
}

// New is a gate with only Koord's features, for koordlet and koord-manager.
func New() featuregate.MutableFeatureGate {
	g := featuregate.NewFeatureGate()
	if err := Add(g); err != nil {
		panic(err) // the table above is static; a duplicate is a programming error
	}
	return g
}

// Flag binds --feature-gates on fs to g.
func Flag(fs *flag.FlagSet, g featuregate.MutableFeatureGate) {
	fs.Func("feature-gates", "comma-separated Koord feature gates, e.g. BatchResource=false (known: "+known()+"; Koordinator's other gates are accepted and have no effect)",
		func(s string) error { return g.Set(s) })
}

func known() string {
	names := make([]string, 0, len(defaults))
	for f := range defaults {
		names = append(names, string(f))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
