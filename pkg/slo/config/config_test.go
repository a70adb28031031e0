package config

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cm(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: ConfigMapName}, Data: data}
}

func TestParse(t *testing.T) {
	cfg, err := Parse(nil)
	if err != nil || cfg.Colocation.Enable || cfg.Colocation.CPUReclaimThresholdPercent != 60 {
		t.Fatalf("absent ConfigMap: got %+v, %v", cfg, err)
	}
	cfg, err = Parse(cm(map[string]string{
		ColocationKey:        `{"enable":true,"cpuReclaimThresholdPercent":70}`,
		ResourceThresholdKey: `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":55}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Colocation.Enable || cfg.Colocation.CPUReclaimThresholdPercent != 70 || cfg.Colocation.MemoryReclaimThresholdPercent != 65 {
		t.Errorf("given fields must override and the rest keep defaults: %+v", cfg.Colocation)
	}
	th := cfg.NodeSLO.ResourceUsedThresholdWithBE
	if th == nil || !*th.Enable || *th.CPUSuppressThresholdPercent != 55 {
		t.Errorf("resource-threshold-config clusterStrategy not applied: %+v", th)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		data map[string]string
		want string
	}{
		{map[string]string{ColocationKey: `{"enable":tru}`}, "key colocation-config"},
		{map[string]string{ColocationKey: `{"cpuReclaimThresholdPercent":-1}`}, "cpuReclaimThresholdPercent must not be negative"},
		{map[string]string{ColocationKey: `{"cpuCalculatePolicy":"peak"}`}, `cpuCalculatePolicy "peak" is not usage, request or maxUsageRequest`},
		{map[string]string{ColocationKey: `{"midUnallocatedPercent":101}`}, "midUnallocatedPercent 101 is not a percentage"},
		{map[string]string{ColocationKey: `{"resourceDiffThreshold":0}`}, "resourceDiffThreshold 0 must be above 0"},
		{map[string]string{ColocationKey: `{"nodeConfigs":[{"nodeSelector":{"matchLabels":{"a":"b"}},"degradeTimeMinutes":0}]}`}, "nodeConfigs[0]: degradeTimeMinutes must be positive"},
		{map[string]string{ResourceThresholdKey: `{"clusterStrategy":{"cpuEvictThresholdPercent":60,"cpuEvictLowerPercent":70}}`}, "cpuEvictLowerPercent: 70 must be below cpuEvictThresholdPercent 60"},
		{map[string]string{ResourceThresholdKey: `{"clusterStrategy":{"cpuEvictPolicy":"evictByGuess"}}`}, `cpuEvictPolicy: "evictByGuess"`},
		{map[string]string{ColocationKey: `{"metricReportIntervalSeconds":0}`}, "metricReportIntervalSeconds must be positive"},
		{map[string]string{ResourceThresholdKey: `{"clusterStrategy":{"memoryEvictThresholdPercent":-1}}`}, "key resource-threshold-config: clusterStrategy: resourceUsedThresholdWithBE.memoryEvictThresholdPercent: -1"},
		{map[string]string{ResourceThresholdKey: `{"clusterStrategy":{"memoryEvictThresholdPercent":60,"memoryEvictLowerPercent":65}}`}, "memoryEvictLowerPercent: 65 must be below"},
		{map[string]string{ResourceThresholdKey: `{"nodeStrategies":[{"nodeSelector":{"matchLabels":{"a":"b"}},"cpuSuppressThresholdPercent":101}]}`},
			"key resource-threshold-config: nodeStrategies[0]: resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: 101"},
		{map[string]string{CPUBurstKey: `{"nodeStrategies":[{"nodeSelector":{"matchExpressions":[{"key":"a","operator":"Sometimes"}]}}]}`}, "nodeStrategies[0]: nodeSelector"},
		{map[string]string{InterferenceGuardKey: `{"clusterStrategy":{"stepPercent":0}}`}, "key interference-guard-config: clusterStrategy: spec.extensions[koord.sh/interferenceGuard]: stepPercent 0"},
		{map[string]string{CPUBurstKey: `{"clusterStrategy":{"policy":1}}`}, "key cpu-burst-config: clusterStrategy"},
	} {
		_, err := Parse(cm(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", tc.data, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"enable":true}`, `{"clusterStrategy":{"enable":true}}`)
	f.Add(`{"cpuReclaimThresholdPercent":-5}`, `{}`)
	f.Add(`null`, `{"clusterStrategy":null}`)
	f.Add(`{}`, `{"nodeStrategies":[{"nodeSelector":{},"memoryEvictLowerPercent":90}]}`)
	f.Fuzz(func(t *testing.T, colocation, threshold string) {
		cfg, err := Parse(cm(map[string]string{ColocationKey: colocation, ResourceThresholdKey: threshold}))
		if err != nil {
			return
		}
		for _, labels := range []map[string]string{nil, {"a": "b"}} {
			spec := cfg.NodeSLOFor(labels)
			if err := spec.Validate(); err != nil {
				t.Fatalf("accepted a node strategy that does not validate: %v", err)
			}
		}
		c := cfg.Colocation
		if c.CPUReclaimThresholdPercent < 0 || c.MidUnallocatedPercent > 100 || c.MetricReportIntervalSeconds <= 0 || c.DegradeTimeMinutes <= 0 {
			t.Fatalf("accepted an invalid colocation config: %+v", c)
		}
	})
}

// Koordinator's nodeStrategies: per key, the first entry whose nodeSelector
// matches the node is laid over the clusterStrategy; a nil selector matches
// no node.
func TestNodeStrategies(t *testing.T) {
	cfg, err := Parse(cm(map[string]string{
		ResourceThresholdKey: `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65,"memoryEvictThresholdPercent":70},
			"nodeStrategies":[
				{"name":"no-selector","cpuSuppressThresholdPercent":10},
				{"name":"gpu","nodeSelector":{"matchLabels":{"pool":"gpu"}},"cpuSuppressThresholdPercent":40},
				{"name":"gpu-again","nodeSelector":{"matchLabels":{"pool":"gpu"}},"cpuSuppressThresholdPercent":20},
				{"name":"edge","nodeSelector":{"matchExpressions":[{"key":"zone","operator":"In","values":["edge"]}]},"enable":false}]}`,
		CPUBurstKey:          `{"clusterStrategy":{"policy":"none"},"nodeStrategies":[{"nodeSelector":{"matchLabels":{"pool":"gpu"}},"policy":"auto"}]}`,
		InterferenceGuardKey: `{"clusterStrategy":{"enable":false,"lsRunQueueLatencyP99Microseconds":2000},"nodeStrategies":[{"nodeSelector":{"matchLabels":{"zone":"edge"}},"enable":true}]}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	gpu := cfg.NodeSLOFor(map[string]string{"pool": "gpu"})
	if th := gpu.ResourceUsedThresholdWithBE; !*th.Enable || *th.CPUSuppressThresholdPercent != 40 || *th.MemoryEvictThresholdPercent != 70 {
		t.Errorf("gpu node: threshold %+v, want the first matching entry over the cluster's", th)
	}
	if gpu.CPUBurstStrategy.Policy != "auto" {
		t.Errorf("gpu node: burst %+v", gpu.CPUBurstStrategy)
	}
	edge := cfg.NodeSLOFor(map[string]string{"zone": "edge"})
	if th := edge.ResourceUsedThresholdWithBE; *th.Enable || *th.CPUSuppressThresholdPercent != 65 {
		t.Errorf("edge node: threshold %+v", th)
	}
	if g, _ := edge.GetInterferenceGuard(); g == nil || !*g.Enable || *g.LSRunQueueLatencyP99Microseconds != 2000 {
		t.Errorf("edge node: guard %+v", g)
	}
	other := cfg.NodeSLOFor(map[string]string{"pool": "cpu"})
	if th := other.ResourceUsedThresholdWithBE; *th.CPUSuppressThresholdPercent != 65 || other.CPUBurstStrategy.Policy != "none" {
		t.Errorf("other node: %+v %+v", th, other.CPUBurstStrategy)
	}
	if g, _ := other.GetInterferenceGuard(); g == nil || *g.Enable {
		t.Errorf("other node: guard %+v", g)
	}
	// NodeSLOFor must not let one node's result leak into the cluster's.
	if *cfg.NodeSLO.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent != 65 {
		t.Error("the cluster strategy changed")
	}
}

// A field no Koordinator version knows is a typo to report, not a reason to
// refuse the ConfigMap: everything else in it takes effect.
func TestUnknownFieldsAreWarnings(t *testing.T) {
	cfg, err := Parse(cm(map[string]string{
		ColocationKey:        `{"enable":true,"enabled":true,"cpuReclaimThresholdPercent":70}`,
		ResourceThresholdKey: `{"clusterStrategy":{"enable":true},"nodeStrategies":[{"nodeSelector":{"matchLabels":{"a":"b"}},"cpuSupressThresholdPercent":50,"cpuSuppressThresholdPercent":40}]}`,
		SystemKey:            `{"nodeConfigs":[]}`,
		"colocation-confg":   `{}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Colocation.Enable || cfg.Colocation.CPUReclaimThresholdPercent != 70 {
		t.Errorf("the known fields must take effect: %+v", cfg.Colocation)
	}
	if th := cfg.NodeSLOFor(map[string]string{"a": "b"}).ResourceUsedThresholdWithBE; *th.CPUSuppressThresholdPercent != 40 {
		t.Errorf("node strategy: %+v", th)
	}
	want := []string{
		"colocation-confg: not a key of slo-controller-config",
		`colocation-config: unknown field "enabled"`,
		`resource-threshold-config: nodeStrategies[0]: unknown field "cpuSupressThresholdPercent"`,
		`system-config: unknown field "nodeConfigs"`,
	}
	if strings.Join(cfg.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(cfg.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

// Koordinator's colocation-config nodeConfigs: the first entry whose
// nodeSelector matches the node is laid over the cluster strategy.
func TestNodeConfigs(t *testing.T) {
	cfg, err := Parse(cm(map[string]string{ColocationKey: `{"enable":true,"cpuReclaimThresholdPercent":60,"memoryCalculatePolicy":"request",
		"metricAggregatePolicy":{"durations":["5m","1h"]},
		"nodeConfigs":[
			{"name":"no-selector","cpuReclaimThresholdPercent":10},
			{"name":"alios","nodeSelector":{"matchLabels":{"kubernetes.io/kernel":"alios"}},"cpuReclaimThresholdPercent":80,"resourceDiffThreshold":0.2},
			{"name":"off","nodeSelector":{"matchLabels":{"colocation":"off"}},"enable":false}]}`}))
	if err != nil {
		t.Fatal(err)
	}
	alios := cfg.ColocationFor(map[string]string{"kubernetes.io/kernel": "alios"})
	if !alios.Enable || alios.CPUReclaimThresholdPercent != 80 || alios.ResourceDiffThreshold != 0.2 || alios.MemoryCalculatePolicy != CalculateByPodRequest {
		t.Errorf("alios node: %+v", alios)
	}
	if off := cfg.ColocationFor(map[string]string{"colocation": "off"}); off.Enable {
		t.Errorf("a nodeConfigs entry must turn colocation off for its nodes: %+v", off)
	}
	other := cfg.ColocationFor(nil)
	if other.CPUReclaimThresholdPercent != 60 || len(other.MetricAggregatePolicy.Durations) != 2 {
		t.Errorf("other node: %+v", other)
	}
}

// Koordinator fields Koord keeps but does not act on are listed, by key.
func TestNotActedOn(t *testing.T) {
	cfg, err := Parse(cm(map[string]string{
		ColocationKey:             `{"enable":true,"metricMemoryCollectPolicy":"usageWithPageCache","extensions":{"vendor":{}}}`,
		ResourceQOSKey:            `{"clusterStrategy":{"lsClass":{"cpuQOS":{"enable":true,"groupIdentity":2},"blkioQOS":{"enable":true}}},"nodeStrategies":[{"nodeSelector":{"matchLabels":{"a":"b"}},"systemClass":{"cpuQOS":{"enable":true}}}]}`,
		"host-application-config": `{"applications":[{"name":"nginx"}]}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"colocation-config.metricMemoryCollectPolicy=usageWithPageCache", "colocation-config.extensions", "host-application-config",
		"spec.resourceQOSStrategy.*.blkioQOS", "spec.resourceQOSStrategy.systemClass",
	}
	if strings.Join(cfg.NotActedOn, " ") != strings.Join(want, " ") {
		t.Errorf("not acted on: %v\nwant %v", cfg.NotActedOn, want)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("Koordinator's own keys and fields are not warnings: %v", cfg.Warnings)
	}
}

// Koordinator decodes with encoding/json, which matches keys up to case; its
// documentation writes "CPUEvictTimeWindowSeconds". Such keys take effect.
func TestKeysMatchUpToCase(t *testing.T) {
	cfg, err := Parse(cm(map[string]string{
		ColocationKey:        `{"Enable":true,"CPUReclaimThresholdPercent":70}`,
		ResourceThresholdKey: `{"clusterStrategy":{"enable":true,"CPUEvictTimeWindowSeconds":300}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) > 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
	if !cfg.Colocation.Enable || cfg.Colocation.CPUReclaimThresholdPercent != 70 {
		t.Errorf("colocation: %+v", cfg.Colocation)
	}
	if w := cfg.NodeSLO.ResourceUsedThresholdWithBE.CPUEvictTimeWindowSeconds; w == nil || *w != 300 {
		t.Errorf("cpuEvictTimeWindowSeconds: %v", w)
	}
}

// Koordinator reads each key on its own: one that does not parse keeps its
// part of the configuration in force, and the other keys take effect.
func TestKeysStandAlone(t *testing.T) {
	prev, err := Parse(cm(map[string]string{
		ColocationKey:        `{"enable":true,"cpuReclaimThresholdPercent":70}`,
		ResourceThresholdKey: `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":50},"nodeStrategies":[{"nodeSelector":{"matchLabels":{"a":"b"}},"cpuSuppressThresholdPercent":40}]}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseOver(cm(map[string]string{
		ColocationKey:        `{"enable":true,"cpuReclaimThresholdPercent":80}`,
		ResourceThresholdKey: `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":55},"nodeStrategies":[{"nodeSelector":{"matchLabels":{"a":"b"}},"cpuSuppressThresholdPercent":101}]}`,
		SystemKey:            `{"clusterStrategy":{"minFreeKbytesFactor":100}"nodeStrategies":[]}`,
	}), prev)
	if err == nil || !strings.Contains(err.Error(), "key resource-threshold-config: nodeStrategies[0]") || !strings.Contains(err.Error(), "key system-config") {
		t.Fatalf("error %v, want both failed keys named", err)
	}
	if cfg.Colocation.CPUReclaimThresholdPercent != 80 {
		t.Errorf("colocation-config parsed: it must take effect: %+v", cfg.Colocation)
	}
	if th := cfg.NodeSLOFor(nil).ResourceUsedThresholdWithBE; *th.CPUSuppressThresholdPercent != 50 {
		t.Errorf("resource-threshold-config failed: the cluster strategy in force (50) must stay, got %d", *th.CPUSuppressThresholdPercent)
	}
	if th := cfg.NodeSLOFor(map[string]string{"a": "b"}).ResourceUsedThresholdWithBE; *th.CPUSuppressThresholdPercent != 40 {
		t.Errorf("resource-threshold-config failed: the node strategy in force (40) must stay, got %d", *th.CPUSuppressThresholdPercent)
	}
}

// A nodeConfigs entry's fields are its own: they must not write through into
// the cluster strategy (batchCPUThresholdPercent is a pointer).
func TestNodeConfigsDoNotLeak(t *testing.T) {
	cfg, err := Parse(cm(map[string]string{ColocationKey: `{"enable":true,"batchCPUThresholdPercent":50,
		"nodeConfigs":[{"nodeSelector":{"matchLabels":{"a":"b"}},"batchCPUThresholdPercent":80}]}`}))
	if err != nil {
		t.Fatal(err)
	}
	if got := *cfg.ColocationFor(map[string]string{"a": "b"}).BatchCPUThresholdPercent; got != 80 {
		t.Errorf("node: %d, want 80", got)
	}
	if got := *cfg.Colocation.BatchCPUThresholdPercent; got != 50 {
		t.Errorf("cluster: %d, want 50", got)
	}
}

// Koordinator's per-node settings: the colocation-strategy annotation, then
// the ratio labels; a malformed one is left out and named.
func TestColocationForNode(t *testing.T) {
	cfg, err := Parse(cm(map[string]string{ColocationKey: `{"enable":true,"cpuReclaimThresholdPercent":60,"batchCPUThresholdPercent":50}`}))
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Annotations: map[string]string{"node.koordinator.sh/colocation-strategy": `{"memoryReclaimThresholdPercent":50,"batchCPUThresholdPercent":70}`},
		Labels:      map[string]string{"node.koordinator.sh/cpu-reclaim-ratio": "0.8", "node.koordinator.sh/memory-reclaim-ratio": "lots"}}}
	c, err := cfg.ColocationForNode(node)
	if c.CPUReclaimThresholdPercent != 80 || c.MemoryReclaimThresholdPercent != 50 || *c.BatchCPUThresholdPercent != 70 {
		t.Errorf("node strategy: %+v", c)
	}
	if err == nil || !strings.Contains(err.Error(), "label node.koordinator.sh/memory-reclaim-ratio") {
		t.Errorf("error %v, want the malformed label named", err)
	}
	if *cfg.Colocation.BatchCPUThresholdPercent != 50 {
		t.Error("the node's annotation wrote through into the cluster strategy")
	}
	node.Annotations["node.koordinator.sh/colocation-strategy"] = `{"degradeTimeMinutes":0}`
	if c, err := cfg.ColocationForNode(node); err == nil || c.DegradeTimeMinutes != 15 {
		t.Errorf("an invalid annotation must be left out and named: %+v, %v", c, err)
	}
}

// A node's colocation settings come from whoever can write the Node: any
// value gives a valid strategy or an error, never a panic, and never
// touches the cluster's.
func FuzzColocationForNode(f *testing.F) {
	f.Add(`{"cpuReclaimThresholdPercent":70}`, "0.8")
	f.Add(`{"batchCPUThresholdPercent":-1}`, "-1")
	f.Add(`{"extensions":{"a":1},"metricAggregatePolicy":{"durations":["5m"]}}`, "x")
	cfg, err := Parse(cm(map[string]string{ColocationKey: `{"enable":true,"batchCPUThresholdPercent":50,"metricAggregatePolicy":{"durations":["10m"]}}`}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, annotation, ratio string) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n",
			Annotations: map[string]string{"node.koordinator.sh/colocation-strategy": annotation},
			Labels:      map[string]string{"node.koordinator.sh/cpu-reclaim-ratio": ratio}}}
		c, _ := cfg.ColocationForNode(node)
		if err := c.validate(); err != nil {
			t.Fatalf("an invalid node strategy: %v", err)
		}
		if *cfg.Colocation.BatchCPUThresholdPercent != 50 || cfg.Colocation.MetricAggregatePolicy.Durations[0].Duration != 10*time.Minute {
			t.Fatal("the node's settings changed the cluster's")
		}
	})
}
