package memoryqos

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

func TestPlan(t *testing.T) {
	on := true
	pct := func(v int64) *int64 { return &v }
	s, err := nodeslo.Resolve(&slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: &slov1alpha1.ResourceQOSStrategy{
		LSClass: &slov1alpha1.ResourceQOS{MemoryQOS: &slov1alpha1.MemoryQOSCfg{Enable: &on, MemoryQOS: slov1alpha1.MemoryQOS{
			MinLimitPercent: pct(50), LowLimitPercent: pct(25), ThrottlingPercent: pct(80)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l := cgroup.Layout{Version: cgroup.V2, Driver: cgroup.Cgroupfs}
	pods := l.Pods([]*corev1.Pod{
		cgrouptest.Pod("web", "LS",
			cgrouptest.Container{Name: "a", Requests: map[string]string{"memory": "1Gi"}, Limits: map[string]string{"memory": "2Gi"}},
			cgrouptest.Container{Name: "b", Requests: map[string]string{"memory": "1Gi"}}),
		cgrouptest.Pod("batch", "BE", cgrouptest.Container{Name: "a"}),
	})
	const gi = int64(1) << 30
	got := cgrouptest.Values(Plan(l, pods, s, true, 16*gi))
	pod := "kubepods/burstable/poduid-web"
	want := map[string]int64{
		pod + "/web-a memory.min": gi / 2, pod + "/web-a memory.low": gi / 2, // low is at least min
		pod + "/web-a memory.high": gi + gi*80/100,    // request + 80 % of the way to the limit
		pod + "/web-b memory.high": gi + 15*gi*80/100, // no limit: the node's memory stands in
		pod + " memory.min":        gi, pod + " memory.low": gi,
		"kubepods/burstable memory.min": gi, "kubepods memory.min": gi,
		// BE's memoryQOS is off: defaults.
		"kubepods/besteffort/poduid-batch/batch-a memory.high": cgroup.Unlimited, "kubepods/besteffort/poduid-batch memory.min": 0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	for k, v := range cgrouptest.Values(Plan(l, pods, s, false, 16*gi)) {
		if v != 0 && v != cgroup.Unlimited {
			t.Errorf("gate off: %s = %d, want a kernel default", k, v)
		}
	}
}

// On cgroup v1 without the knobs (this host's kernel), the applier reports
// memory.min unsupported once and writes nothing.
func TestUnsupportedOnV1(t *testing.T) {
	root := t.TempDir()
	l := cgroup.Layout{Root: root, Version: cgroup.V1, Driver: cgroup.Cgroupfs}
	for _, d := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		cgrouptest.WriteFile(t, root+"/memory/"+d+"/memory.limit_in_bytes", "-1\n")
	}
	s := nodeslo.Default()
	s.LS.MemoryEnable, s.LS.MinLimitPercent = true, 100
	a := &cgroup.Applier{Layout: l}
	res := a.Apply(Plan(l, nil, s, true, 1<<30), true)
	if len(res.Unsupported) == 0 || res.Writes != 0 || len(res.Errors) != 0 {
		t.Errorf("unsupported %v, writes %d, errors %v", res.Unsupported, res.Writes, res.Errors)
	}
	if res := a.Apply(Plan(l, nil, s, true, 1<<30), true); len(res.Unsupported) != 0 {
		t.Errorf("reported again: %v", res.Unsupported)
	}
	if _, err := os.Stat(root + "/memory/kubepods/memory.min"); err == nil {
		t.Error("a file was created")
	}
}
