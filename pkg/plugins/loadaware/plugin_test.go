package loadaware

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/config"
	configv1 "github.com/koord-project/koord/apis/config/v1"
	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil/reservationtest"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// defaultArgs are the plugin's defaults, converted as the scheduler would.
func defaultArgs(t testing.TB, mutate func(*configv1.LoadAwareSchedulingArgs)) *config.LoadAwareSchedulingArgs {
	v1 := &configv1.LoadAwareSchedulingArgs{}
	if mutate != nil {
		mutate(v1)
	}
	configv1.SetDefaults_LoadAwareSchedulingArgs(v1)
	out := &config.LoadAwareSchedulingArgs{}
	if err := configv1.Convert_v1_LoadAwareSchedulingArgs_To_config_LoadAwareSchedulingArgs(v1, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func makeNode(name, cpu, mem string) *corev1.Node {
	res := rl(cpu, mem)
	res[corev1.ResourcePods] = resource.MustParse("110")
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: res, Capacity: res}}
}

func makePod(name string, req, lim corev1.ResourceList, priority int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec:       corev1.PodSpec{Priority: ptr.To(priority), Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
	}
}

func metric(node string, updated time.Time, cpu, mem string, pods ...*slov1alpha1.PodMetricInfo) *slov1alpha1.NodeMetric {
	return &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec:       slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](60)}},
		Status: slov1alpha1.NodeMetricStatus{
			UpdateTime: &metav1.Time{Time: updated},
			NodeMetric: &slov1alpha1.NodeMetricInfo{NodeUsage: slov1alpha1.ResourceMap{ResourceList: rl(cpu, mem)}},
			PodsMetric: pods,
		},
	}
}

func podMetric(name, cpu, mem string, prio extension.PriorityClass) *slov1alpha1.PodMetricInfo {
	return &slov1alpha1.PodMetricInfo{Namespace: "default", Name: name, PodUsage: slov1alpha1.ResourceMap{ResourceList: rl(cpu, mem)}, Priority: prio}
}

func nodeInfo(n *corev1.Node) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

func filter(p *Plugin, pod *corev1.Pod, n *corev1.Node) error {
	state := framework.NewCycleState()
	p.PreFilter(context.Background(), state, pod, nil)
	if st := p.Filter(context.Background(), state, pod, nodeInfo(n)); !st.IsSuccess() {
		return st.AsError()
	}
	return nil
}

func score(t *testing.T, p *Plugin, pod *corev1.Pod, n *corev1.Node) int64 {
	state := framework.NewCycleState()
	p.PreScore(context.Background(), state, pod, nil)
	s, st := p.Score(context.Background(), state, pod, nodeInfo(n))
	if !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	return s
}

func TestEstimatePod(t *testing.T) {
	resources := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	factors := map[corev1.ResourceName]int64{corev1.ResourceCPU: 85, corev1.ResourceMemory: 70}
	// Koordinator's estimator results: rounded to the nearest unit (2Gi ×
	// 70 % is 1503238553.6 bytes: 1503238554).
	cases := []struct {
		name     string
		pod      *corev1.Pod
		cpu, mem int64
	}{
		{"request only", makePod("a", rl("2", "4Gi"), nil, 0), 1700, 3006477107},
		{"limit above request", makePod("b", rl("1", "1Gi"), rl("4", "2Gi"), 0), 3400, 1503238554},
		{"nothing requested", makePod("c", nil, nil, 0), 250, 200 << 20},
		{"batch resources", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{extension.BatchCPU: resource.MustParse("2000"), extension.BatchMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{extension.BatchCPU: resource.MustParse("2000"), extension.BatchMemory: resource.MustParse("1Gi")},
		}}}}}, 1700, 751619277},
		// A koord-mid pod's mid-cpu and mid-memory are its cpu and memory.
		{"mid resources", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{extension.MidCPU: resource.MustParse("1000"), extension.MidMemory: resource.MustParse("1Gi")},
		}}}}}, 850, 751619277},
	}
	for _, tc := range cases {
		got := estimatePod(tc.pod, resources, factors)
		if got[0] != tc.cpu || got[1] != tc.mem {
			t.Errorf("%s: estimate = %v, want [%d %d]", tc.name, got, tc.cpu, tc.mem)
		}
	}
	// Capped at the limit even with a factor above 100.
	if got := estimatePod(makePod("d", rl("1", ""), rl("1", ""), 0), resources, map[corev1.ResourceName]int64{corev1.ResourceCPU: 150}); got[0] != 1000 {
		t.Errorf("estimate above the limit: %v", got)
	}
}

func TestFilterThresholds(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	node := makeNode("n1", "10", "100Gi")
	small := makePod("small", rl("100m", "100Mi"), nil, 0)

	if err := filter(p, small, node); err != nil {
		t.Fatalf("a node without NodeMetric must pass: %v", err)
	}
	p.cache.setMetric("n1", metric("n1", t0.Add(-10*time.Second), "6", "10Gi"))
	if err := filter(p, small, node); err != nil {
		t.Errorf("60%% + 0.85%% cpu is under the 65%% threshold: %v", err)
	}
	big := makePod("big", rl("1", "100Mi"), nil, 0) // estimate 850m → 68.5%
	err := filter(p, big, node)
	// The reason is fixed per resource, so that the FailedScheduling event
	// counts such nodes together.
	if err == nil || err.Error() != "node(s) cpu usage over the load threshold" {
		t.Errorf("want a cpu rejection with the fixed reason, got %v", err)
	}
	// A DaemonSet pod is never filtered.
	ds := makePod("ds", rl("1", "100Mi"), nil, 0)
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "d", UID: "d", Controller: ptr.To(true)}}
	if err := filter(p, ds, node); err != nil {
		t.Errorf("DaemonSet pod filtered: %v", err)
	}

	// The node annotation overrides the args; a malformed one falls back to
	// them; without it, the args apply again. Each change comes as a new
	// node object, as the scheduler hands them out: the plugin learns
	// whether an object has the annotation once per object.
	annotated := func(value string) *corev1.Node {
		n := node.DeepCopy()
		n.Annotations = map[string]string{extension.AnnotationCustomUsageThresholds: value}
		return n
	}
	if err := filter(p, big, annotated(`{"usageThresholds":{"cpu":80}}`)); err != nil {
		t.Errorf("node threshold 80%% should admit 68.5%%: %v", err)
	}
	if err := filter(p, big, annotated(`{"usageThresholds":{"cpu":"eighty"}}`)); err == nil {
		t.Error("a malformed annotation must fall back to the args (65%)")
	}
	if err := filter(p, big, annotated(`{"usageThresholds":{"cpu":80}}`)); err != nil {
		t.Errorf("node threshold 80%% again should admit 68.5%%: %v", err)
	}
	if err := filter(p, big, node.DeepCopy()); err == nil {
		t.Error("with the annotation gone, the args (65%) must apply again")
	}
	// Threshold 0 disables the check.
	p0 := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) {
		a.UsageThresholds = map[corev1.ResourceName]int64{corev1.ResourceCPU: 0}
	}), nil, clk.now)
	p0.cache.setMetric("n1", metric("n1", t0, "9900m", "1Gi"))
	if err := filter(p0, big, makeNode("n1", "10", "100Gi")); err != nil {
		t.Errorf("threshold 0 must disable: %v", err)
	}
}

func TestStaleMetrics(t *testing.T) {
	clk := &clock{t0}
	node := makeNode("n1", "10", "100Gi")
	pod := makePod("p", rl("100m", "100Mi"), nil, 0)
	for _, tc := range []struct {
		name          string
		filterExpired bool
		enableExpired bool
		wantReject    bool
	}{
		{"filter expired", true, false, true},
		{"filter expired but allowed", true, true, false},
		{"do not filter", false, false, false},
	} {
		p := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) {
			a.FilterExpiredNodeMetrics = ptr.To(tc.filterExpired)
			a.EnableScheduleWhenNodeMetricsExpired = ptr.To(tc.enableExpired)
		}), nil, clk.now)
		p.cache.setMetric("n1", metric("n1", t0.Add(-181*time.Second), "1", "1Gi"))
		err := filter(p, pod, node)
		if (err != nil) != tc.wantReject {
			t.Errorf("%s: filter error %v, want reject %v", tc.name, err, tc.wantReject)
		}
		if s := score(t, p, pod, node); s != 0 {
			t.Errorf("%s: a stale node scores %d, want 0", tc.name, s)
		}
		// Fresh again: usable and scored.
		p.cache.setMetric("n1", metric("n1", t0, "1", "1Gi"))
		if err := filter(p, pod, node); err != nil {
			t.Errorf("%s: node still blocked after a fresh metric: %v", tc.name, err)
		}
		if s := score(t, p, pod, node); s == 0 {
			t.Errorf("%s: fresh node still scores 0", tc.name)
		}
	}
}

// Koordinator's filterExpiredNodeMetrics: a NodeMetric koordlet never
// reported (no update time) counts as expired and the node is filtered; a
// node with no NodeMetric at all, or a reported one without node usage, is
// not judged.
func TestUnreportedMetric(t *testing.T) {
	clk := &clock{t0}
	node := makeNode("n1", "10", "100Gi")
	pod := makePod("p", rl("100m", "100Mi"), nil, 0)
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	if err := filter(p, pod, node); err != nil {
		t.Errorf("no NodeMetric: %v", err)
	}
	p.cache.setMetric("n1", &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	if err := filter(p, pod, node); err == nil || !strings.Contains(err.Error(), reasonExpired) {
		t.Errorf("never-reported NodeMetric: %v, want %q", err, reasonExpired)
	}
	if s := score(t, p, pod, node); s != 0 {
		t.Errorf("never-reported NodeMetric scores %d, want 0", s)
	}
	p.cache.setMetric("n1", &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: t0}}})
	if err := filter(p, pod, node); err != nil {
		t.Errorf("reported, without node usage: %v", err)
	}
	allowed := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) {
		a.EnableScheduleWhenNodeMetricsExpired = ptr.To(true)
	}), nil, clk.now)
	allowed.cache.setMetric("n1", &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	if err := filter(allowed, pod, node); err != nil {
		t.Errorf("enableScheduleWhenNodeMetricsExpired: %v", err)
	}
}

// The node annotation's aggregatedUsage (thresholds and type, and the
// window) applies without any aggregation in the args, as in Koordinator.
func TestNodeAggregatedUsage(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now) // cpu threshold 65 %
	m := metric("n1", t0, "1", "1Gi")
	m.Status.NodeMetric.AggregatedNodeUsages = []slov1alpha1.AggregatedUsage{
		{Duration: metav1.Duration{Duration: 5 * time.Minute}, Usage: map[slov1alpha1.AggregationType]slov1alpha1.ResourceMap{
			slov1alpha1.P90: {ResourceList: rl("7", "2Gi")}}},
		{Duration: metav1.Duration{Duration: 10 * time.Minute}, Usage: map[slov1alpha1.AggregationType]slov1alpha1.ResourceMap{
			slov1alpha1.P90: {ResourceList: rl("5", "2Gi")}}},
	}
	p.cache.setMetric("n1", m)
	node := makeNode("n1", "10", "100Gi")
	pod := makePod("p", rl("100m", ""), nil, 0)
	if err := filter(p, pod, node); err != nil {
		t.Fatalf("latest usage 10%%: %v", err)
	}
	node.Annotations = map[string]string{extension.AnnotationCustomUsageThresholds: `{"aggregatedUsage":{"usageThresholds":{"cpu":60},"usageAggregationType":"p90","usageAggregatedDuration":"10m"}}`}
	// p90 over 10m is 51 % with the pod: under 60.
	if err := filter(p, pod, node); err != nil {
		t.Errorf("p90 over 10m (51%%) under the node's 60%%: %v", err)
	}
	node.Annotations[extension.AnnotationCustomUsageThresholds] = `{"aggregatedUsage":{"usageThresholds":{"cpu":60},"usageAggregationType":"p90","usageAggregatedDuration":"5m"}}`
	if err := filter(p, pod, node); err == nil {
		t.Error("p90 over 5m (71%) admitted under the node's 60%")
	}
	// Without a type, Koordinator ignores aggregatedUsage: the latest usage
	// and the args' thresholds apply again.
	node.Annotations[extension.AnnotationCustomUsageThresholds] = `{"aggregatedUsage":{"usageThresholds":{"cpu":5}}}`
	if err := filter(p, pod, node); err != nil {
		t.Errorf("aggregatedUsage without a type must be ignored: %v", err)
	}
}

// Koordinator's allowCustomizeEstimation: a pod's own scaling factors, and
// estimatedSecondsAfterPodScheduled (args or the pod's annotation): a pod
// bound that recently counts at its estimate even once reported.
func TestCustomizedEstimation(t *testing.T) {
	clk := &clock{t0}
	pod := makePod("web", rl("2", "2Gi"), nil, 0)
	pod.Annotations = map[string]string{extension.AnnotationCustomEstimatedScalingFactors: `{"cpu": 50}`}
	off := newPlugin(defaultArgs(t, nil), nil, clk.now)
	if got := off.computePodState(pod).estimate[0]; got != 1700 {
		t.Errorf("without allowCustomizeEstimation the pod's factors are ignored: %dm, want 1700m (85%%)", got)
	}
	on := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) {
		a.AllowCustomizeEstimation = true
		a.EstimatedSecondsAfterPodScheduled = ptr.To[int64](300)
	}), nil, clk.now)
	st := on.computePodState(pod)
	if st.estimate[0] != 1000 || st.estimate[1] != 1503238554 {
		t.Errorf("pod's cpu factor 50 and the args' memory factor 70: %v", st.estimate)
	}
	pod.Annotations[extension.AnnotationCustomEstimatedScalingFactors] = `{"cpu": -5}`
	if got := on.computePodState(pod).estimate[0]; got != 1700 {
		t.Errorf("a malformed annotation falls back to the args: %dm", got)
	}
	delete(pod.Annotations, extension.AnnotationCustomEstimatedScalingFactors)

	// Bound two minutes before the report and reported using 200m: within
	// the 300 s window it counts at its estimate, 1700m.
	pod.Spec.NodeName = "n1"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-2 * time.Minute))}}
	on.onPod(pod)
	on.cache.setMetric("n1", metric("n1", t0, "1", "4Gi", podMetric("web", "200m", "1Gi", "")))
	if got := on.cache.estimate("n1").get(0, filterUsage); got != 1000+1700-200 {
		t.Errorf("within estimatedSecondsAfterPodScheduled: usage %dm, want 2500m", got)
	}
	clk.t = t0.Add(4 * time.Minute)
	on.cache.setMetric("n1", metric("n1", clk.t, "1", "4Gi", podMetric("web", "200m", "1Gi", "")))
	if got := on.cache.estimate("n1").get(0, filterUsage); got != 1000 {
		t.Errorf("after the window: usage %dm, want the measured 1000m", got)
	}
}

// The informer delivers every update of a running pod (its binding, each
// status change). One that leaves the spec alone keeps the pod's record as
// it is, without estimating the pod or recomputing the node again; a spec
// change (an in-place resize), which bumps metadata.generation, is counted.
func TestPodUpdates(t *testing.T) {
	p := newPlugin(defaultArgs(t, nil), nil, (&clock{t0}).now)
	p.cache.setMetric("n1", metric("n1", t0, "2", "4Gi"))
	usage := func() int64 { return p.cache.estimate("n1").get(0, filterUsage) }

	pod := makePod("web", rl("2", "2Gi"), nil, 0) // estimate 1700m
	pod.Generation = 1
	pod.Spec.NodeName = "n1"
	p.onPod(pod)
	if got := usage(); got != 3700 {
		t.Fatalf("bound pod: usage %dm, want 3700m", got)
	}

	running := pod.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	before := p.cache.estimate("n1")
	p.onPod(running)
	if p.cache.estimate("n1") != before {
		t.Error("a status update recomputed the node's estimate")
	}
	if got := usage(); got != 3700 {
		t.Errorf("after a status update: usage %dm, want 3700m", got)
	}

	// Spec changes, one after the other; a client that sets no generation
	// is re-estimated on every update.
	for _, step := range []struct {
		name       string
		generation int64
		cpu        string
		want       int64
	}{
		{"an in-place resize", 2, "4", 5400},           // estimate 3400m
		{"an update without generation", 0, "1", 2850}, // estimate 850m
	} {
		updated := running.DeepCopy()
		updated.Generation = step.generation
		updated.Spec.Containers[0].Resources.Requests = rl(step.cpu, "2Gi")
		p.onPod(updated)
		if got := usage(); got != step.want {
			t.Errorf("after %s: usage %dm, want %dm", step.name, got, step.want)
		}
	}
}

func TestEstimationOfUnreportedPods(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	node := makeNode("n1", "10", "100Gi")
	// Metric at t0 shows 2 cores used; "old" is in it, reporting 1 core.
	p.cache.setMetric("n1", metric("n1", t0, "2", "4Gi", podMetric("old", "1", "1Gi", "")))
	old := makePod("old", rl("2", "2Gi"), nil, 0) // estimate 1700m
	p.cache.assign(old, "n1", t0.Add(-10*time.Minute), nil)
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 2000 {
		t.Errorf("a pod the metric reflects must not be added again: usage %dm, want 2000m", got)
	}
	// Bound 30s before the report (within one 60s interval): the metric may
	// show only part of it, so the rest of its estimate is added.
	recent := makePod("recent", rl("2", "2Gi"), nil, 0)
	p.cache.assign(recent, "n1", t0.Add(-30*time.Second), nil)
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 3700 {
		t.Errorf("recent pod missing from podsMetric: usage %dm, want 3700m", got)
	}
	// Reserved (assumed) pods count too, and Unreserve takes them back.
	assumed := makePod("assumed", rl("1", "1Gi"), nil, 0)
	p.Reserve(context.Background(), framework.NewCycleState(), assumed, "n1")
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 4550 {
		t.Errorf("after Reserve: usage %dm, want 4550m", got)
	}
	p.Unreserve(context.Background(), framework.NewCycleState(), assumed, "n1")
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 3700 {
		t.Errorf("after Unreserve: usage %dm, want 3700m", got)
	}
	// A report 20s later includes "recent" at 1.2 cores, but it may have
	// sampled before the pod warmed up: the rest of its estimate (500m) stays.
	clk.t = t0.Add(20 * time.Second)
	p.cache.setMetric("n1", metric("n1", clk.t, "3200m", "5Gi", podMetric("old", "1", "1Gi", ""), podMetric("recent", "1200m", "1Gi", "")))
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 3700 {
		t.Errorf("partly reported pod: usage %dm, want 3700m", got)
	}
	// A report more than an interval after the binding reflects it: nothing is added.
	clk.t = t0.Add(120 * time.Second)
	p.cache.setMetric("n1", metric("n1", clk.t, "3200m", "5Gi", podMetric("old", "1", "1Gi", ""), podMetric("recent", "1200m", "1Gi", "")))
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 3200 {
		t.Errorf("fully reported: usage %dm, want 3200m", got)
	}
	// Deleting a pod removes its estimate.
	p.cache.remove(recent.UID)
	p.cache.remove(old.UID)
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 3200 {
		t.Errorf("after deletes: usage %dm, want 3200m (the metric)", got)
	}
	_ = node
}

func TestAggregatedUsage(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) {
		a.Aggregated = &configv1.LoadAwareSchedulingAggregatedArgs{
			UsageThresholds:         map[corev1.ResourceName]int64{corev1.ResourceCPU: 70},
			UsageAggregationType:    slov1alpha1.P95,
			UsageAggregatedDuration: &metav1.Duration{Duration: 5 * time.Minute},
			ScoreAggregationType:    slov1alpha1.AVG,
		}
	}), nil, clk.now)
	m := metric("n1", t0, "1", "1Gi")
	m.Status.NodeMetric.AggregatedNodeUsages = []slov1alpha1.AggregatedUsage{
		{Duration: metav1.Duration{Duration: 5 * time.Minute}, Usage: map[slov1alpha1.AggregationType]slov1alpha1.ResourceMap{
			slov1alpha1.P95: {ResourceList: rl("8", "2Gi")}, slov1alpha1.AVG: {ResourceList: rl("3", "2Gi")}}},
		{Duration: metav1.Duration{Duration: 30 * time.Minute}, Usage: map[slov1alpha1.AggregationType]slov1alpha1.ResourceMap{
			slov1alpha1.P95: {ResourceList: rl("2", "2Gi")}, slov1alpha1.AVG: {ResourceList: rl("5", "2Gi")}}},
	}
	p.cache.setMetric("n1", m)
	est := p.cache.estimate("n1")
	if est.get(0, filterUsage) != 8000 {
		t.Errorf("filter uses p95 over 5m: %dm, want 8000m", est.get(0, filterUsage))
	}
	if est.get(0, scoreUsage) != 5000 {
		t.Errorf("score uses avg over the longest window: %dm, want 5000m", est.get(0, scoreUsage))
	}
	err := filter(p, makePod("p", rl("100m", ""), nil, 0), makeNode("n1", "10", "100Gi"))
	if err == nil || !strings.Contains(err.Error(), "cpu usage over the load threshold") {
		t.Errorf("80.85%% of p95 usage admitted: %v", err)
	}
	// 68.85% is over the args' 65% but under the aggregated 70%: the
	// aggregated threshold is the one that applies.
	m = m.DeepCopy()
	m.Status.NodeMetric.AggregatedNodeUsages[0].Usage[slov1alpha1.P95] = slov1alpha1.ResourceMap{ResourceList: rl("6800m", "2Gi")}
	p.cache.setMetric("n1", m)
	if err := filter(p, makePod("p", rl("100m", ""), nil, 0), makeNode("n1", "10", "100Gi")); err != nil {
		t.Errorf("aggregated threshold (70%%) not applied to 68.85%%: %v", err)
	}
}

func TestProdView(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) {
		a.ProdUsageThresholds = map[corev1.ResourceName]int64{corev1.ResourceCPU: 30}
		a.ScoreAccordingProdUsage = ptr.To(true)
	}), nil, clk.now)
	node := makeNode("n1", "10", "100Gi")
	// 5 cores used, 3.5 of them by prod pods.
	p.cache.setMetric("n1", metric("n1", t0, "5", "4Gi",
		podMetric("web", "3500m", "1Gi", extension.PriorityProd), podMetric("spark", "1500m", "1Gi", extension.PriorityBatch)))
	prodPod := makePod("prod", rl("100m", ""), nil, 9000)
	batchPod := makePod("batch", rl("100m", ""), nil, 5000)
	if err := filter(p, prodPod, node); err == nil || !strings.Contains(err.Error(), "prod cpu usage") {
		t.Errorf("prod pod: 35%% prod usage is over the 30%% prod threshold, got %v", err)
	}
	if err := filter(p, batchPod, node); err != nil {
		t.Errorf("batch pod is judged by node usage (50%% < 65%%): %v", err)
	}
	// Scored by prod usage: (10 - 3.585) / 10 for cpu, memory by prod memory.
	if s, b := score(t, p, prodPod, node), score(t, p, batchPod, node); s <= b {
		t.Errorf("prod pod score %d should exceed the batch pod's %d (prod usage is lower than node usage)", s, b)
	}
}

func TestScoringStrategies(t *testing.T) {
	clk := &clock{t0}
	cool, hot := makeNode("cool", "10", "100Gi"), makeNode("hot", "10", "100Gi")
	pod := makePod("p", rl("1", "1Gi"), nil, 0)
	for _, strategy := range []string{"LeastUsed", "MostUsed"} {
		p := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) { a.ScoringStrategy = configv1.ScoringStrategy(strategy) }), nil, clk.now)
		p.cache.setMetric("cool", metric("cool", t0, "1", "10Gi"))
		p.cache.setMetric("hot", metric("hot", t0, "6", "60Gi"))
		c, h := score(t, p, pod, cool), score(t, p, pod, hot)
		if c < 0 || c > 100 || h < 0 || h > 100 {
			t.Fatalf("%s: scores out of range: %d %d", strategy, c, h)
		}
		if strategy == "LeastUsed" && c <= h || strategy == "MostUsed" && h <= c {
			t.Errorf("%s: cool %d, hot %d", strategy, c, h)
		}
	}
	// Exact value: LeastUsed, cpu (10-1.85)/10 = 81, memory (100-10.7)/100 = 89 → 85.
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	p.cache.setMetric("cool", metric("cool", t0, "1", "10Gi"))
	if s := score(t, p, pod, cool); s != 85 {
		t.Errorf("score = %d, want 85", s)
	}
	// Koordinator's dominantResourceWeight 2 weighs the most used
	// resource's score (cpu, 81) twice more: (81 + 89 + 2×81) / 4 = 83.
	d := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) { a.DominantResourceWeight = 2 }), nil, clk.now)
	d.cache.setMetric("cool", metric("cool", t0, "1", "10Gi"))
	if s := score(t, d, pod, cool); s != 83 {
		t.Errorf("with dominantResourceWeight 2: score = %d, want 83", s)
	}
}

// Koordinator's prodUsageIncludeSys: prod usage counts the system's too.
func TestProdUsageIncludeSys(t *testing.T) {
	clk := &clock{t0}
	m := metric("n1", t0, "5", "10Gi", podMetric("prod", "2", "2Gi", extension.PriorityProd))
	m.Status.NodeMetric.SystemUsage = slov1alpha1.ResourceMap{ResourceList: rl("1500m", "1Gi")}
	for _, include := range []bool{false, true} {
		p := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) { a.ProdUsageIncludeSys = include }), nil, clk.now)
		p.cache.setMetric("n1", m)
		want := int64(2000)
		if include {
			want = 3500
		}
		if got := p.cache.estimate("n1").get(0, prodUsage); got != want {
			t.Errorf("prodUsageIncludeSys %v: prod cpu %dm, want %dm", include, got, want)
		}
	}
}

// recorderHandle is a Handle whose only working part is its event recorder.
type recorderHandle struct {
	fwk.Handle
	rec *events.FakeRecorder
}

func (h recorderHandle) EventRecorder() events.EventRecorderLogger { return h.rec }

func TestMalformedThresholdsReportedOnce(t *testing.T) {
	clk := &clock{t0}
	rec := events.NewFakeRecorder(10)
	p := newPlugin(defaultArgs(t, nil), recorderHandle{rec: rec}, clk.now)
	p.cache.setMetric("n1", metric("n1", t0, "1", "1Gi"))
	node := makeNode("n1", "10", "100Gi")
	node.Annotations = map[string]string{extension.AnnotationCustomUsageThresholds: `{"usageThresholds":{"cpu":150}}`}
	pod := makePod("p", rl("100m", ""), nil, 0)
	for i := 0; i < 3; i++ {
		if err := filter(p, pod, node); err != nil {
			t.Fatalf("fallback to the args should admit the pod: %v", err)
		}
	}
	if len(rec.Events) != 1 {
		t.Fatalf("want exactly one event for one bad value, got %d", len(rec.Events))
	}
	if e := <-rec.Events; !strings.Contains(e, "InvalidUsageThresholds") || !strings.Contains(e, "usageThresholds.cpu: 150") {
		t.Errorf("event %q should name the reason and the bad field", e)
	}
}

// A node's parsed thresholds do not keep its state alive: once its metric
// and pods are gone (the node was deleted), the cache forgets it.
func TestThresholdsForgottenWithNode(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	p.cache.setMetric("n1", metric("n1", t0, "1", "1Gi"))
	node := makeNode("n1", "10", "100Gi")
	node.Annotations = map[string]string{extension.AnnotationCustomUsageThresholds: `{"usageThresholds":{"cpu":80}}`}
	if err := filter(p, makePod("p", rl("100m", ""), nil, 0), node); err != nil {
		t.Fatal(err)
	}
	if n := p.cache.nodes["n1"]; n == nil || n.thresholdsParsed == nil {
		t.Fatal("the node's thresholds should be parsed and kept while it has a metric")
	}
	p.cache.setMetric("n1", nil)
	if len(p.cache.nodes) != 0 {
		t.Errorf("the cache kept %d node(s) after the metric went", len(p.cache.nodes))
	}
}

// After a restart the pod informer replays every assigned pod: their bind
// time comes from PodScheduled, so pods the last metric already reflects are
// not estimated again, and recent ones are.
func TestRebuildAfterRestart(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	p.cache.setMetric("n1", metric("n1", t0, "2", "4Gi", podMetric("old", "1", "1Gi", "")))
	bound := func(name string, at time.Time) *corev1.Pod {
		pod := makePod(name, rl("2", "2Gi"), nil, 0)
		pod.Spec.NodeName = "n1"
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: at}}}
		return pod
	}
	p.onPod(bound("old", t0.Add(-time.Hour)))
	p.onPod(bound("new", t0.Add(-5*time.Second)))
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 2000+1700 {
		t.Errorf("usage after replay = %dm, want 3700m (metric + the new pod only)", got)
	}
	// Replaying the same pods again (a resync) changes nothing.
	p.onPod(bound("old", t0.Add(-time.Hour)))
	p.onPod(bound("new", t0.Add(-5*time.Second)))
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 3700 {
		t.Errorf("usage after resync = %dm, want 3700m", got)
	}
	// A finished pod no longer counts.
	done := bound("new", t0.Add(-5*time.Second))
	done.Status.Phase = corev1.PodSucceeded
	p.onPod(done)
	if got := p.cache.estimate("n1").get(0, filterUsage); got != 2000 {
		t.Errorf("usage after the pod finished = %dm, want 2000m", got)
	}
}

// Events and scheduling cycles run concurrently (run with -race), and every
// cycle sees a consistent node: the hot node is turned away and the cool one
// admitted whatever the events do meanwhile, which leave both as they are.
func TestConcurrentEventsAndCycles(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	hot, cool := makeNode("hot", "32", "128Gi"), makeNode("cool", "32", "128Gi")
	for _, n := range []*corev1.Node{hot, cool} {
		n.Annotations = map[string]string{extension.AnnotationCustomUsageThresholds: `{"usageThresholds":{"cpu":90}}`}
	}
	p.cache.setMetric("hot", metric("hot", t0, "31", "8Gi"))
	p.cache.setMetric("cool", metric("cool", t0, "4", "8Gi"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			for _, n := range []string{"hot", "cool"} {
				pod := makePod(fmt.Sprintf("%s-%d", n, i%20), rl("100m", "100Mi"), nil, 0)
				p.cache.assign(pod, n, t0, nil)
				if i%3 == 0 {
					p.cache.remove(pod.UID)
				}
			}
			p.cache.setMetric("hot", metric("hot", t0, fmt.Sprint(30+i%2), "8Gi"))
			p.cache.setMetric("cool", metric("cool", t0, fmt.Sprint(3+i%2), "8Gi"))
		}
	}()
	pod := makePod("incoming", rl("1", "1Gi"), nil, 0)
	for i := 0; i < 500; i++ {
		if err := filter(p, pod, hot); err == nil {
			t.Fatalf("cycle %d: the hot node was admitted", i)
		}
		if err := filter(p, pod, cool); err != nil {
			t.Fatalf("cycle %d: the cool node was turned away: %v", i, err)
		}
		if h, c := score(t, p, pod, hot), score(t, p, pod, cool); h >= c {
			t.Fatalf("cycle %d: the hot node scores %d, the cool one %d", i, h, c)
		}
	}
	<-done
}

// A pod turned away for load is sent back to the active queue when a new
// metric arrives, once the cache has it: filtered again, it passes.
func TestNewMetricRetriesRejected(t *testing.T) {
	clk := &clock{t0}
	h := &frameworkexttest.Handle{}
	p := newPlugin(defaultArgs(t, nil), h, clk.now)
	hot, cool := metric("n1", t0.Add(-time.Minute), "9", "1Gi"), metric("n1", t0, "1", "1Gi")
	p.onNodeMetric(hot, false)
	pod := makePod("p", rl("1", "1Gi"), nil, 0)
	n := makeNode("n1", "10", "100Gi")
	if err := filter(p, pod, n); err == nil {
		t.Fatal("a 90% busy node passed")
	}
	if got := h.Activated(); len(got) != 0 {
		t.Fatalf("activated %v before anything changed", got)
	}
	p.onNodeMetric(cool, false)
	if got := h.Activated(); len(got) != 1 || got[0] != "default/p" {
		t.Errorf("activated %v after a cool metric, want default/p", got)
	}
	if err := filter(p, pod, n); err != nil {
		t.Errorf("after a cool metric: %v", err)
	}
}

// A pod kept out by an assumed pod's estimate is sent back to the active
// queue when that pod is deleted, once the cache has forgotten it.
func TestDeletedPodRetriesRejected(t *testing.T) {
	clk := &clock{t0}
	h := &frameworkexttest.Handle{}
	p := newPlugin(defaultArgs(t, nil), h, clk.now)
	p.cache.setMetric("n1", metric("n1", t0.Add(-time.Minute), "1", "1Gi"))
	n := makeNode("n1", "10", "100Gi")
	leaver := makePod("leaver", rl("6", "1Gi"), nil, 0)
	if st := p.Reserve(context.Background(), framework.NewCycleState(), leaver, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	pod := makePod("incoming", rl("4", "1Gi"), nil, 0)
	if err := filter(p, pod, n); err == nil {
		t.Fatal("the node passed with the leaver's estimate on it")
	}
	p.onPodDelete(cache.DeletedFinalStateUnknown{Key: "default/leaver", Obj: leaver})
	if got := h.Activated(); len(got) != 1 || got[0] != "default/incoming" {
		t.Errorf("activated %v after the leaver left, want default/incoming", got)
	}
	if err := filter(p, pod, n); err != nil {
		t.Errorf("after the leaver left, still: %v", err)
	}
}

// A reservation's placeholder leaves no estimate on its node: the
// reservation it becomes is counted instead, and the placeholder, deleted
// rather than bound, could leave the estimate behind for good.
func TestPlaceholderNotCounted(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	p.cache.setMetric("n1", metric("n1", t0.Add(-time.Minute), "1", "1Gi"))
	n := makeNode("n1", "10", "100Gi")
	placeholder := makePod("reservation-web", rl("6", "1Gi"), nil, 0)
	reservationtest.MakePlaceholder(placeholder, "web")
	if st := p.Reserve(context.Background(), framework.NewCycleState(), placeholder, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if err := filter(p, makePod("owner", rl("4", "1Gi"), nil, 0), n); err != nil {
		t.Errorf("the placeholder's estimate kept a pod off the node: %v", err)
	}
}

// A rejection's figures, which the fixed reason leaves out, are logged at
// verbosity 5, and only then.
func TestRejectionFiguresLogged(t *testing.T) {
	p := newPlugin(defaultArgs(t, nil), nil, (&clock{t0}).now)
	p.cache.setMetric("n1", metric("n1", t0.Add(-10*time.Second), "6", "10Gi"))
	pod := makePod("big", rl("1", "100Mi"), nil, 0) // 60% + 8.5%
	for _, v := range []int{4, 5} {
		var buf bytes.Buffer
		ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(v), textlogger.Output(&buf))))
		state := framework.NewCycleState()
		p.PreFilter(ctx, state, pod, nil)
		if st := p.Filter(ctx, state, pod, nodeInfo(makeNode("n1", "10", "100Gi"))); st.IsSuccess() {
			t.Fatal("68.5% admitted under a 65% threshold")
		}
		logged := strings.Contains(buf.String(), `usagePercent=68 thresholdPercent=65`)
		if logged != (v >= 5) {
			t.Errorf("verbosity %d: figures logged %v; log: %q", v, logged, buf.String())
		}
	}
}

// A NodeMetric that reports less often than its reports expire is named,
// once: with filterExpiredNodeMetrics the node would otherwise stay
// filtered out with no hint why.
func TestSlowReportsNamed(t *testing.T) {
	p := newPlugin(defaultArgs(t, nil), nil, (&clock{t0}).now) // nodeMetricExpirationSeconds 180
	slow := metric("slow", t0, "1", "1Gi")
	slow.Spec.CollectPolicy.ReportIntervalSeconds = ptr.To[int64](300)
	p.onNodeMetric(slow, false)
	p.onNodeMetric(metric("fine", t0, "1", "1Gi"), false)
	if _, told := p.slowReports.Load("slow"); !told {
		t.Error("a 300 s report interval against a 180 s expiration went unnoticed")
	}
	if _, told := p.slowReports.Load("fine"); told {
		t.Error("a 60 s report interval was reported as too slow")
	}
	slow.Spec.CollectPolicy.ReportIntervalSeconds = ptr.To[int64](30)
	p.onNodeMetric(slow, false)
	if _, told := p.slowReports.Load("slow"); told {
		t.Error("fixed interval still reported")
	}
}

// Koordinator's raw-allocatable: usage is a share of the node's allocatable
// before amplification, as its estimator's EstimateNode has it.
func TestRawAllocatable(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now) // cpu threshold 65 %
	p.cache.setMetric("n1", metric("n1", t0, "7", "4Gi"))
	node := makeNode("n1", "20", "100Gi") // amplified from 10 cores
	pod := makePod("p", rl("100m", ""), nil, 0)
	if err := filter(p, pod, node); err != nil {
		t.Fatalf("7 of 20 cores (35%%): %v", err)
	}
	before := score(t, p, pod, node)
	node.Annotations = map[string]string{extension.AnnotationNodeRawAllocatable: `{"cpu":"10","memory":"100Gi"}`}
	if err := filter(p, pod, node); err == nil || !strings.Contains(err.Error(), "cpu usage over the load threshold") {
		t.Errorf("7 of the node's 10 raw cores with the pod (70.85%%): %v, want rejected", err)
	}
	if after := score(t, p, pod, node); after >= before {
		t.Errorf("score %d against raw allocatable, want below %d against amplified", after, before)
	}
	node.Annotations[extension.AnnotationNodeRawAllocatable] = `{"cpu":"ten"}`
	if err := filter(p, pod, node); err != nil {
		t.Errorf("a malformed annotation must fall back to allocatable: %v", err)
	}
	// The node goes (its NodeMetric with it): nothing of it is kept.
	p.onNodeMetric(metric("n1", t0, "7", "4Gi"), true)
	if _, ok := p.rawAllocatable.Load("n1"); ok {
		t.Error("the deleted node's raw allocatable is still cached")
	}
}
