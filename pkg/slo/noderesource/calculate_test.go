package noderesource

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/slo/config"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func res(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func node(cpu, mem string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: res(cpu, mem)}}
}

func pod(name string, priority int32, qos extension.QoSClass, req corev1.ResourceList) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.PodSpec{NodeName: "n1", Priority: &priority, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if qos != "" {
		p.Labels = map[string]string{extension.LabelPodQoS: string(qos)}
	}
	return p
}

func metric(updated time.Time, system corev1.ResourceList, pods ...*slov1alpha1.PodMetricInfo) *slov1alpha1.NodeMetric {
	t := metav1.NewTime(updated)
	return &slov1alpha1.NodeMetric{Status: slov1alpha1.NodeMetricStatus{
		UpdateTime: &t,
		NodeMetric: &slov1alpha1.NodeMetricInfo{SystemUsage: slov1alpha1.ResourceMap{ResourceList: system}},
		PodsMetric: pods,
	}}
}

func usage(name, cpu, mem string) *slov1alpha1.PodMetricInfo {
	return &slov1alpha1.PodMetricInfo{Namespace: "default", Name: name, PodUsage: slov1alpha1.ResourceMap{ResourceList: res(cpu, mem)}}
}

func TestCalculate(t *testing.T) {
	c := config.DefaultColocation() // 60 % CPU, 65 % memory
	c.Enable = true
	n := node("10", "100Gi")
	pods := []*corev1.Pod{
		// Measured: counts at its usage (1 core), not its request (4).
		pod("web", 9000, extension.QoSLS, res("4", "20Gi")),
		// Not measured yet: counts at its request.
		pod("new", 9000, "", res("500m", "1Gi")),
		// Batch and BE pods use the slack; they do not shrink it.
		pod("batch", 5000, extension.QoSBE, nil),
		pod("be", 0, extension.QoSBE, nil),
		// A finished pod uses nothing.
		func() *corev1.Pod {
			p := pod("done", 9000, extension.QoSLS, res("2", "2Gi"))
			p.Status.Phase = corev1.PodSucceeded
			return p
		}(),
	}
	m := metric(now.Add(-time.Minute), res("1", "4Gi"), usage("web", "1", "10Gi"), usage("batch", "3", "3Gi"))
	got := Calculate(n, m, pods, c, now)
	// CPU: 10000 − 40% margin 4000 − system 1000 − (1000 web + 500 new) = 3500m
	// memory: 100Gi − 35Gi − 4Gi − (10Gi + 1Gi) = 50Gi
	if got.BatchMilliCPU != 3500 || got.BatchMemory != 50<<30 {
		t.Errorf("got cpu %dm memory %d (%s); want 3500m and %d", got.BatchMilliCPU, got.BatchMemory, got.Reason, int64(50<<30))
	}
}

// TestCalculateKoordinatorFormula states Koordinator's batch results
// (its batchresource plugin) for each policy.
func TestCalculateKoordinatorFormula(t *testing.T) {
	base := config.DefaultColocation()
	base.Enable = true
	base.CPUReclaimThresholdPercent, base.MemoryReclaimThresholdPercent = 65, 65
	// 100 cores and 120G of capacity; kubelet reserves 7 cores and 10G.
	n := node("93", "110G")
	n.Status.Capacity = res("100", "120G")
	lse := pod("lse", 9500, extension.QoSLSE, res("10", "10G"))
	pods := []*corev1.Pod{
		pod("ls", 9000, extension.QoSLS, res("20", "20G")),
		lse,
		pod("pending", 9000, extension.QoSLS, res("3", "3G")),
		pod("be", 5500, extension.QoSBE, res("0", "0")),
	}
	pods[2].Status.Phase = corev1.PodPending
	m := metric(now.Add(-time.Minute), res("5", "12G"),
		usage("ls", "15", "25G"), usage("lse", "2", "5G"), usage("be", "20", "20G"),
		// Reported but gone from the pod list: still counted (prod).
		&slov1alpha1.PodMetricInfo{Namespace: "default", Name: "gone", Priority: extension.PriorityProd, PodUsage: slov1alpha1.ResourceMap{ResourceList: res("1", "1G")}},
		// ... unless batch.
		&slov1alpha1.PodMetricInfo{Namespace: "default", Name: "gone-be", Priority: extension.PriorityBatch, PodUsage: slov1alpha1.ResourceMap{ResourceList: res("9", "9G")}})
	m.Status.HostApplicationMetric = []*slov1alpha1.HostApplicationMetricInfo{
		{Name: "nginx", Priority: extension.PriorityProd, Usage: slov1alpha1.ResourceMap{ResourceList: res("1", "1G")}},
		{Name: "hadoop", Priority: extension.PriorityBatch, Usage: slov1alpha1.ResourceMap{ResourceList: res("8", "8G")}},
	}
	ptr := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name            string
		change          func(*config.Colocation)
		wantCPU         int64
		wantMemGigabyte int64
	}{
		// margin 35 cores, 42G; system 5+1 (nginx) = 6 cores but kubelet
		// reserves 7: 7 cores; memory 12+1 = 13G over 10G reserved.
		// HP used: ls 15 + lse 10 (its request: LSE CPU is never
		// reclaimed) + pending 3 (request) + gone 1 = 29 cores;
		// memory 25 + 5 + 3 + 1 = 34G.
		{"usage", func(*config.Colocation) {}, 100000 - 35000 - 7000 - 29000, 120 - 42 - 13 - 34},
		// HP requests: 20 + 10 + 3 = 33G, less kubelet's 10G reserved.
		{"memory by request", func(c *config.Colocation) { c.MemoryCalculatePolicy = config.CalculateByPodRequest }, 29000, 120 - 42 - 10 - 33},
		// max(usage, request): ls 20, lse 10, pending 3, gone 1 = 34 cores;
		// memory 25 + 10 + 3 + 1 = 39G.
		{"max of usage and request", func(c *config.Colocation) {
			c.CPUCalculatePolicy, c.MemoryCalculatePolicy = config.CalculateByPodMaxUsageRequest, config.CalculateByPodMaxUsageRequest
		}, 100000 - 35000 - 7000 - 34000, 120 - 42 - 13 - 39},
		// request for CPU counts as usage, as in Koordinator.
		{"cpu by request is usage", func(c *config.Colocation) { c.CPUCalculatePolicy = config.CalculateByPodRequest }, 29000, 31},
		{"capped by batch thresholds", func(c *config.Colocation) {
			c.BatchCPUThresholdPercent, c.BatchMemoryThresholdPercent = ptr(20), ptr(10)
		}, 20000, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			got := Calculate(n, m, pods, c, now)
			if got.BatchMilliCPU != tc.wantCPU || got.BatchMemory != tc.wantMemGigabyte*1e9 {
				t.Errorf("got batch cpu %dm memory %d; want %dm and %dG\n%s", got.BatchMilliCPU, got.BatchMemory, tc.wantCPU, tc.wantMemGigabyte, got.Reason)
			}
		})
	}
}

// TestCalculateMid states Koordinator's mid results (its midresource plugin).
func TestCalculateMid(t *testing.T) {
	c := config.DefaultColocation()
	c.Enable = true
	n := node("100", "120G")
	n.Status.Capacity = res("100", "120G")
	pods := []*corev1.Pod{pod("prod", 9000, extension.QoSLS, res("40", "50G")), pod("mid", 7500, extension.QoSLS, res("10", "10G"))}
	m := metric(now.Add(-time.Minute), res("4", "6G"), usage("prod", "10", "20G"), usage("mid", "5", "5G"))
	m.Status.NodeMetric.NodeUsage = slov1alpha1.ResourceMap{ResourceList: res("30", "40G")}

	if got := Calculate(n, m, pods, c, now); got.MidMilliCPU != 0 || got.MidMemory != 0 {
		t.Errorf("no prod reclaimable reported and midUnallocatedPercent 0: want no mid resources, got %dm %d", got.MidMilliCPU, got.MidMemory)
	}
	m.Status.ProdReclaimableMetric = &slov1alpha1.ReclaimableMetric{Resource: slov1alpha1.ResourceMap{ResourceList: res("25", "90G")}}
	got := Calculate(n, m, pods, c, now)
	// min(reclaimable, capacity − node usage): cpu min(25, 70) = 25; memory min(90G, 80G) = 80G.
	if got.MidMilliCPU != 25000 || got.MidMemory != 80e9 {
		t.Errorf("got mid %dm %d; want 25000m and 80G\n%s", got.MidMilliCPU, got.MidMemory, got.Reason)
	}
	c.MidUnallocatedPercent, c.MidCPUThresholdPercent = 50, 40
	got = Calculate(n, m, pods, c, now)
	// unallocated: capacity − system 4 − prod requests 40 = 56 cores, half
	// of it 28: 25 + 28 = 53, capped at 40 % of capacity.
	if got.MidMilliCPU != 40000 {
		t.Errorf("got mid cpu %dm; want the 40000m cap\n%s", got.MidMilliCPU, got.Reason)
	}
	c.MidReclaimMode, c.MidStaticCPUReservedPercent, c.MidStaticMemoryReservedPercent = config.MidReclaimModeStatic, 10, 20
	if got := Calculate(n, m, pods, c, now); got.MidMilliCPU != 10000 || got.MidMemory != 24e9 {
		t.Errorf("static mode: got mid %dm %d; want 10000m and 24G", got.MidMilliCPU, got.MidMemory)
	}
}

func TestCalculateDegrades(t *testing.T) {
	c := config.DefaultColocation()
	c.Enable = true
	n := node("10", "100Gi")
	if got := Calculate(n, nil, nil, c, now); got.BatchMilliCPU != 0 || !strings.Contains(got.Reason, "no NodeMetric") {
		t.Errorf("no metric: %+v", got)
	}
	stale := metric(now.Add(-16*time.Minute), res("1", "1Gi"))
	if got := Calculate(n, stale, nil, c, now); got.BatchMilliCPU != 0 || got.BatchMemory != 0 || !strings.Contains(got.Reason, "16m0s old") {
		t.Errorf("stale metric (16 min, degrade at 15): %+v", got)
	}
	busy := metric(now, res("9", "90Gi"))
	if got := Calculate(n, busy, nil, c, now); got.BatchMilliCPU != 0 || got.BatchMemory != 0 {
		t.Errorf("a node busier than the reclaim threshold offers nothing, never a negative amount: %+v", got)
	}
}

func TestNeedsWrite(t *testing.T) {
	c := config.DefaultColocation() // diff 10 %, refresh 300 s
	n := node("10", "100Gi")
	r := &Reconciler{}
	want := Offer{BatchMilliCPU: 4000, BatchMemory: 40 << 30}
	if !r.needsWrite(n, nil, want, c, now) {
		t.Error("a node without batch resources must get them")
	}
	small := &Offer{BatchMilliCPU: 4500, BatchMemory: 40 << 30}
	if r.needsWrite(n, small, want, c, now) {
		t.Error("a 0.5-core move on 10 cores is under the 10 % threshold, and a restarted manager must not rewrite at once")
	}
	if r.needsWrite(n, small, want, c, now.Add(299*time.Second)) {
		t.Error("rewritten before updateTimeThresholdSeconds")
	}
	if !r.needsWrite(n, small, want, c, now.Add(301*time.Second)) {
		t.Error("not refreshed after updateTimeThresholdSeconds")
	}
	if !r.needsWrite(n, &Offer{BatchMilliCPU: 6000, BatchMemory: 40 << 30}, want, c, now) {
		t.Error("a 2-core move on 10 cores (20 %) must be written")
	}
	if !r.needsWrite(n, small, Offer{}, c, now) {
		t.Error("degrading to nothing must always be written")
	}
}

// A node's own NodeMetric is a claim: negative usage or usage beyond the
// node's capacity is no measurement. Node or system figures like that offer
// nothing; a pod's is dropped (the pod counts at its request), and no offer
// exceeds capacity. Before, a pod reported at -9e15 cores made batch-cpu
// 9000000000001001200.
func TestCalculateRefusesImpossibleUsage(t *testing.T) {
	c := config.DefaultColocation() // 60 % CPU, 65 % memory
	c.Enable = true
	n := node("10", "100Gi")
	web := pod("web", 9000, extension.QoSLS, res("2", "4Gi"))
	honest := Calculate(n, metric(now, res("1", "1Gi"), usage("web", "1", "2Gi")), []*corev1.Pod{web}, c, now)
	for name, m := range map[string]*slov1alpha1.NodeMetric{
		"negative pod":         metric(now, res("1", "1Gi"), usage("web", "-9000000000000000", "2Gi")),
		"pod over capacity":    metric(now, res("1", "1Gi"), usage("web", "1", "1e30")),
		"negative ghost pod":   metric(now, res("1", "1Gi"), usage("web", "1", "2Gi"), usage("ghost", "-9000000000000000", "-1Ei")),
		"huge ghost pod":       metric(now, res("1", "1Gi"), usage("web", "1", "2Gi"), usage("ghost", "1e30", "1e30")),
		"negative system":      metric(now, res("-100", "1Gi"), usage("web", "1", "2Gi")),
		"system over capacity": metric(now, res("11", "1Gi"), usage("web", "1", "2Gi")),
	} {
		got := Calculate(n, m, []*corev1.Pod{web}, c, now)
		if got.BatchMilliCPU < 0 || got.BatchMilliCPU > honest.BatchMilliCPU || got.BatchMemory < 0 || got.BatchMemory > honest.BatchMemory {
			t.Errorf("%s: batch cpu %dm memory %d, want within [0, the honest %dm and %d] (%s)", name, got.BatchMilliCPU, got.BatchMemory, honest.BatchMilliCPU, honest.BatchMemory, got.Reason)
		}
	}
	got := Calculate(n, metric(now, res("-100", "1Gi")), []*corev1.Pod{web}, c, now)
	if got.BatchMilliCPU != 0 || !strings.Contains(got.Reason, "status.nodeMetric.systemUsage cpu -100 is outside [0, capacity 10]") {
		t.Errorf("negative system usage: %+v, want nothing offered, naming the field", got)
	}
	got = Calculate(n, metric(now, res("1", "1Gi"), usage("web", "-9000000000000000", "2Gi")), []*corev1.Pod{web}, c, now)
	if !strings.Contains(got.Reason, "1 pod figures beyond the node's capacity ignored") {
		t.Errorf("negative pod usage: reason %q does not say it was ignored", got.Reason)
	}
}
