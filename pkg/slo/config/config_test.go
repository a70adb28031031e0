package config

import (
	"strings"
	"testing"

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
		{map[string]string{ColocationKey: `{"cpuReclaimThresholdPercent":140}`}, "cpuReclaimThresholdPercent 140 is not a percentage"},
		{map[string]string{ColocationKey: `{"enabled":true}`}, `unknown field "enabled"`},
		{map[string]string{ColocationKey: `{"metricReportIntervalSeconds":0}`}, "metricReportIntervalSeconds must be positive"},
		{map[string]string{ResourceThresholdKey: `{"clusterStrategy":{"memoryEvictThresholdPercent":-1}}`}, "key resource-threshold-config: clusterStrategy: resourceUsedThresholdWithBE.memoryEvictThresholdPercent: -1"},
		{map[string]string{ResourceThresholdKey: `{"clusterStrategy":{"memoryEvictThresholdPercent":60,"memoryEvictLowerPercent":65}}`}, "memoryEvictLowerPercent: 65 must be below"},
		{map[string]string{ResourceThresholdKey: `{"nodeStrategies":[{"nodeSelector":{"matchLabels":{"a":"b"}},"cpuSuppressThresholdPercent":101}]}`},
			"key resource-threshold-config: nodeStrategies[0]: resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: 101"},
		{map[string]string{ResourceThresholdKey: `{"nodeStrategies":[{"nodeSelector":{"matchLabels":{"a":"b"}},"cpuSupressThresholdPercent":50}]}`},
			`nodeStrategies[0]: json: unknown field "cpuSupressThresholdPercent"`},
		{map[string]string{CPUBurstKey: `{"nodeStrategies":[{"nodeSelector":{"matchExpressions":[{"key":"a","operator":"Sometimes"}]}}]}`}, "nodeStrategies[0]: nodeSelector"},
		{map[string]string{InterferenceGuardKey: `{"clusterStrategy":{"stepPercent":0}}`}, "key interference-guard-config: clusterStrategy: spec.extensions[koord.sh/interferenceGuard]: stepPercent 0"},
		{map[string]string{CPUBurstKey: `{"clusterStrategy":{"policy":1}}`}, "key cpu-burst-config: clusterStrategy"},
		{map[string]string{SystemKey: `{"nodeConfigs":[]}`}, `key system-config: json: unknown field "nodeConfigs"`},
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
		if c.CPUReclaimThresholdPercent < 0 || c.CPUReclaimThresholdPercent > 100 || c.MetricReportIntervalSeconds <= 0 || c.DegradeTimeMinutes <= 0 {
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
