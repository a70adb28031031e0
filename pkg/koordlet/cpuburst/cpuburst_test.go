package cpuburst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

func burst(policy slov1alpha1.CPUBurstPolicy, period int64) nodeslo.Burst {
	b := nodeslo.Default().Burst
	b.Policy, b.CFSQuotaBurstPeriodSeconds = policy, period
	return b
}

// web: one container limited at 1 CPU (base quota 100 ms).
func web(t *testing.T, annotations map[string]string) (*corev1.Pod, Container) {
	p := cgrouptest.Pod("web", "LS", cgrouptest.Container{Name: "a", Requests: map[string]string{"cpu": "500m"}, Limits: map[string]string{"cpu": "1"}})
	p.Annotations = annotations
	return p, Container{Pod: p, Name: "a", Dir: "pod/a", PodDir: "pod", LimitMilli: 1000, Base: 100000, Current: 100000, UsageMilli: -1}
}

func TestQuotaScaling(t *testing.T) {
	_, c := web(t, nil)
	var pl Planner
	now := time.Now()
	cfg := func(*corev1.Pod) nodeslo.Burst { return burst(slov1alpha1.CFSQuotaBurstOnly, -1) }
	step := func(pool PoolState, throttled uint64) int64 {
		now = now.Add(5 * time.Second)
		c.Throttled = throttled
		s, conflicts := pl.Plan(now, true, cfg, pool, 100000, []Container{c})
		if len(conflicts) != 0 {
			t.Fatalf("conflicts %v", conflicts)
		}
		v := cgrouptest.Values(s)
		if v["pod cpu.cfs_quota_us"] != v["pod/a cpu.cfs_quota_us"] {
			t.Errorf("pod quota %d does not cover its container's %d", v["pod cpu.cfs_quota_us"], v["pod/a cpu.cfs_quota_us"])
		}
		c.Current = v["pod/a cpu.cfs_quota_us"]
		return c.Current
	}
	for i, s := range []struct {
		pool      PoolState
		throttled uint64
		want      int64
	}{
		{PoolIdle, 0, 100000}, // first look: the counter's start
		{PoolIdle, 5, 120000}, // throttled while the pool is idle: up a fifth
		{PoolIdle, 9, 144000},
		{PoolCooling, 12, 144000}, // cooling: hold
		{PoolIdle, 12, 144000},    // not throttled: hold
		{PoolIdle, 20, 172800},
		{PoolIdle, 30, 207360},
		{PoolIdle, 40, 248832},
		{PoolIdle, 50, 298598},
		{PoolIdle, 60, 300000},     // the ceiling: cfsQuotaBurstPercent 300
		{PoolOverload, 70, 100000}, // the pool over its threshold: back to the limit at once
	} {
		if got := step(s.pool, s.throttled); got != s.want {
			t.Errorf("step %d: quota %d, want %d", i, got, s.want)
		}
	}
}

// cfsQuotaBurstPeriodSeconds bounds how long a container runs over its
// limit: 10 s at the full 300 % is a budget of 20 s at 200 %; once it is
// spent the quota comes down.
func TestQuotaBudget(t *testing.T) {
	_, c := web(t, nil)
	c.Current, c.UsageMilli = 200000, 2000 // raised, and running at twice its limit
	var pl Planner
	cfg := func(*corev1.Pod) nodeslo.Burst { return burst(slov1alpha1.CPUBurstAuto, 10) } // 10 s × 200 % budget
	now := time.Now()
	var got int64
	for i := 0; i < 5; i++ {
		now = now.Add(5 * time.Second)
		s, _ := pl.Plan(now, true, cfg, PoolIdle, 100000, []Container{c})
		got = cgrouptest.Values(s)["pod/a cpu.cfs_quota_us"]
		c.Current = got
	}
	if got != 160000 {
		t.Errorf("quota %d after 20 s at 200 %% with a 20 s budget, want 160000 (a fifth down)", got)
	}
}

func TestBurstAndOff(t *testing.T) {
	p, c := web(t, nil)
	var pl Planner
	cfg := func(*corev1.Pod) nodeslo.Burst { return burst(slov1alpha1.CPUBurstOnly, -1) }
	v := cgrouptest.Values(first(pl.Plan(time.Now(), true, cfg, PoolIdle, 100000, []Container{c})))
	// 1000 % of a 1-CPU limit is 1 s of burst, capped at the 100 ms quota (the kernel refuses more).
	if v["pod/a cpu.cfs_burst_us"] != 100000 || v["pod cpu.cfs_burst_us"] != 100000 {
		t.Errorf("burst %v", v)
	}
	// The pod's annotation overrides the node: 50 % of the limit.
	p.Annotations = map[string]string{"koordinator.sh/cpuBurst": `{"cpuBurstPercent":50}`}
	cfgPod := func(p *corev1.Pod) nodeslo.Burst { b, _ := Config(burst(slov1alpha1.CPUBurstOnly, -1), p); return b }
	if v := cgrouptest.Values(first(pl.Plan(time.Now(), true, cfgPod, PoolIdle, 100000, []Container{c}))); v["pod/a cpu.cfs_burst_us"] != 50000 {
		t.Errorf("annotated burst %d", v["pod/a cpu.cfs_burst_us"])
	}
	// Off (policy none, or the gate): the defaults back, a raised quota included.
	c.Current = 150000
	for _, on := range []bool{true, false} {
		none := func(*corev1.Pod) nodeslo.Burst { return burst(slov1alpha1.CPUBurstNone, -1) }
		if !on {
			none = cfg
		}
		v := cgrouptest.Values(first(pl.Plan(time.Now(), on, none, PoolIdle, 100000, []Container{c})))
		if v["pod/a cpu.cfs_burst_us"] != 0 || v["pod/a cpu.cfs_quota_us"] != 100000 {
			t.Errorf("on=%v: %v", on, v)
		}
	}
}

func first[A, B any](a A, _ B) A { return a }

// A quota another writer set is left alone and reported once; when it is
// back at the limit koordlet owns it again.
func TestAnotherWriter(t *testing.T) {
	_, c := web(t, nil)
	var pl Planner
	cfg := func(*corev1.Pod) nodeslo.Burst { return burst(slov1alpha1.CFSQuotaBurstOnly, -1) }
	c.Current = 500000 // above the ceiling: not koordlet's
	for i := 0; i < 2; i++ {
		s, conflicts := pl.Plan(time.Now(), true, cfg, PoolIdle, 100000, []Container{c})
		if _, written := cgrouptest.Values(s)["pod/a cpu.cfs_quota_us"]; written {
			t.Errorf("pass %d: koordlet wrote a quota another writer owns", i)
		}
		if want := 1 - i; len(conflicts) != want {
			t.Errorf("pass %d: %d conflicts, want %d", i, len(conflicts), want)
		}
	}
	c.Current = 100000
	if s, _ := pl.Plan(time.Now(), true, cfg, PoolIdle, 100000, []Container{c}); cgrouptest.Values(s)["pod/a cpu.cfs_quota_us"] != 100000 {
		t.Error("not owned again at the limit")
	}
}

func TestBurstable(t *testing.T) {
	for qos, want := range map[string]bool{"LS": true, "": true, "LSR": false, "LSE": false, "BE": false, "SYSTEM": true} {
		if got := Burstable(cgrouptest.Pod("p", qos)); got != want {
			t.Errorf("%q: %v", qos, got)
		}
	}
}

func TestSharePool(t *testing.T) {
	// 8 CPUs, 2 requested by LSR pods: the pool is 6; node at 4.5 of which
	// LSR and BE use 2: the pool is at 2.5 / 6 = 42 %.
	for threshold, want := range map[int64]PoolState{40: PoolOverload, 45: PoolCooling, 50: PoolIdle} {
		if got := SharePool(threshold, 8000, 4500, 2000, 2000, true); got != want {
			t.Errorf("threshold %d: %v, want %v", threshold, got, want)
		}
	}
	if SharePool(50, 8000, 0, 0, 0, false) != PoolUnknown {
		t.Error("no sample")
	}
}
