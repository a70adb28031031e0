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
		{map[string]string{ResourceThresholdKey: `{"clusterStrategy":{"memoryEvictThresholdPercent":-1}}`}, "key resource-threshold-config: clusterStrategy.memoryEvictThresholdPercent -1"},
		{map[string]string{CPUBurstKey: `{"clusterStrategy":{"policy":1}}`}, "key cpu-burst-config: clusterStrategy"},
		{map[string]string{SystemKey: `{"nodeStrategies":[]}`}, `key system-config: json: unknown field "nodeStrategies"`},
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
	f.Fuzz(func(t *testing.T, colocation, threshold string) {
		cfg, err := Parse(cm(map[string]string{ColocationKey: colocation, ResourceThresholdKey: threshold}))
		if err != nil {
			return
		}
		c := cfg.Colocation
		if c.CPUReclaimThresholdPercent < 0 || c.CPUReclaimThresholdPercent > 100 || c.MetricReportIntervalSeconds <= 0 || c.DegradeTimeMinutes <= 0 {
			t.Fatalf("accepted an invalid colocation config: %+v", c)
		}
	})
}
