// Package features holds Koord's feature gates: one registry, so the same
// --feature-gates string (the chart's featureGates value) is accepted by every
// Koord component; each component acts only on the gates that concern it.
package features

import (
	"flag"

	"k8s.io/component-base/featuregate"
)

const (
	// RunqueueLatency lets koordlet measure each pod's run-queue latency with
	// eBPF (koordlet's --runqueue-latency must be on too).
	RunqueueLatency featuregate.Feature = "RunqueueLatency"
	// BatchResource lets koord-manager publish kubernetes.io/batch-cpu and
	// kubernetes.io/batch-memory on each Node from its measured slack.
	BatchResource featuregate.Feature = "BatchResource"
	// NodeSLOSync lets koord-manager keep a NodeSLO per node in line with the
	// slo-controller-config ConfigMap.
	NodeSLOSync featuregate.Feature = "NodeSLOSync"
)

var defaults = map[featuregate.Feature]featuregate.FeatureSpec{
	RunqueueLatency: {Default: true, PreRelease: featuregate.Beta},
	BatchResource:   {Default: true, PreRelease: featuregate.Beta},
	NodeSLOSync:     {Default: true, PreRelease: featuregate.Beta},
}

// Add registers Koord's gates on g (koord-scheduler adds them to
// kube-scheduler's own gate so one --feature-gates flag takes both).
func Add(g featuregate.MutableFeatureGate) error { return g.Add(defaults) }

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
	fs.Func("feature-gates", "comma-separated Koord feature gates, e.g. BatchResource=false (known: BatchResource, NodeSLOSync, RunqueueLatency)",
		func(s string) error { return g.Set(s) })
}
