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
	// CPU: 10000×60% − 1000 system − (1000 web + 500 new) = 3500m
	// memory: 100Gi/100×65 − 4Gi − (10Gi + 1Gi) = 65Gi − 15Gi = 50Gi
	if got.MilliCPU != 3500 || got.MemoryBytes != 50<<30 {
		t.Errorf("got cpu %dm memory %d (%s); want 3500m and %d", got.MilliCPU, got.MemoryBytes, got.Reason, int64(50<<30))
	}
}

func TestCalculateDegrades(t *testing.T) {
	c := config.DefaultColocation()
	c.Enable = true
	n := node("10", "100Gi")
	if got := Calculate(n, nil, nil, c, now); got.MilliCPU != 0 || !strings.Contains(got.Reason, "no NodeMetric") {
		t.Errorf("no metric: %+v", got)
	}
	stale := metric(now.Add(-16*time.Minute), res("1", "1Gi"))
	if got := Calculate(n, stale, nil, c, now); got.MilliCPU != 0 || got.MemoryBytes != 0 || !strings.Contains(got.Reason, "16m0s old") {
		t.Errorf("stale metric (16 min, degrade at 15): %+v", got)
	}
	busy := metric(now, res("9", "90Gi"))
	if got := Calculate(n, busy, nil, c, now); got.MilliCPU != 0 || got.MemoryBytes != 0 {
		t.Errorf("a node busier than the reclaim threshold offers nothing, never a negative amount: %+v", got)
	}
}

func TestNeedsWrite(t *testing.T) {
	c := config.DefaultColocation() // diff 10 %, refresh 300 s
	n := node("10", "100Gi")
	r := &Reconciler{}
	want := Batch{MilliCPU: 4000, MemoryBytes: 40 << 30}
	if !r.needsWrite(n, nil, want, c, now) {
		t.Error("a node without batch resources must get them")
	}
	small := &Batch{MilliCPU: 4500, MemoryBytes: 40 << 30}
	if r.needsWrite(n, small, want, c, now) {
		t.Error("a 0.5-core move on 10 cores is under the 10 % threshold, and a restarted manager must not rewrite at once")
	}
	if r.needsWrite(n, small, want, c, now.Add(299*time.Second)) {
		t.Error("rewritten before updateTimeThresholdSeconds")
	}
	if !r.needsWrite(n, small, want, c, now.Add(301*time.Second)) {
		t.Error("not refreshed after updateTimeThresholdSeconds")
	}
	if !r.needsWrite(n, &Batch{MilliCPU: 6000, MemoryBytes: 40 << 30}, want, c, now) {
		t.Error("a 2-core move on 10 cores (20 %) must be written")
	}
	if !r.needsWrite(n, small, Batch{}, c, now) {
		t.Error("degrading to nothing must always be written")
	}
}
