package lownodeload

import (
	"context"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	"sigs.k8s.io/descheduler/pkg/descheduler/metricscollector"
	podutil "sigs.k8s.io/descheduler/pkg/descheduler/pod"
	frameworktypes "sigs.k8s.io/descheduler/pkg/framework/types"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// handle is the framework's handle with what the plugin uses: the pods of
// a node and an evictor that lets every pod go.
type handle struct{ pods map[string][]*corev1.Pod }

func (h handle) ClientSet() clientset.Interface                               { return nil }
func (h handle) PrometheusClient() promapi.Client                             { return nil }
func (h handle) SharedInformerFactory() informers.SharedInformerFactory       { return nil }
func (h handle) MetricsCollector() *metricscollector.MetricsCollector         { return nil }
func (h handle) PluginInstanceID() string                                     { return "test" }
func (h handle) Evictor() frameworktypes.Evictor                              { return evictor{} }
func (h handle) GetPodsAssignedToNodeFunc() podutil.GetPodsAssignedToNodeFunc { return h.get }
func (h handle) get(node string, _ podutil.FilterFunc) ([]*corev1.Pod, error) {
	return h.pods[node], nil
}

type evictor struct{}

func (evictor) Filter(*corev1.Pod) bool            { return true }
func (evictor) PreEvictionFilter(*corev1.Pod) bool { return true }
func (evictor) Evict(context.Context, *corev1.Pod, evictions.EvictOptions) error {
	panic("LowNodeLoad moves pods through PodMigrationJobs, never the framework's evictor")
}

func metric(nl NodeLoad, at time.Time) *slov1alpha1.NodeMetric {
	nm := &slov1alpha1.NodeMetric{Status: slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: at},
		NodeMetric: &slov1alpha1.NodeMetricInfo{NodeUsage: slov1alpha1.ResourceMap{ResourceList: nl.Usage}}}}
	for _, p := range nl.Pods {
		nm.Status.PodsMetric = append(nm.Status.PodsMetric, &slov1alpha1.PodMetricInfo{Namespace: p.Namespace, Name: p.Name,
			PodUsage: slov1alpha1.ResourceMap{ResourceList: nl.PodUsage[p.Namespace+"/"+p.Name]}})
	}
	return nm
}

func TestBalance(t *testing.T) {
	now := time.Unix(10000, 0)
	hot := load(node("hot", "10", "64Gi"), "1", map[*corev1.Pod]string{pod("be", "hot", "BE", 5000): "4", pod("web", "hot", "LS", 9000): "4"})
	cool := load(node("cool", "10", "64Gi"), "1", nil)
	stale := load(node("stale", "10", "64Gi"), "0", nil)
	metrics := map[string]*slov1alpha1.NodeMetric{"hot": metric(hot, now), "cool": metric(cool, now), "stale": metric(stale, now.Add(-time.Hour))}
	h := handle{pods: map[string][]*corev1.Pod{"hot": hot.Pods}}
	args := &v1alpha2.LowNodeLoadArgs{LowThresholds: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 30}, HighThresholds: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 70},
		AnomalyCondition: &v1alpha2.LoadAnomalyCondition{ConsecutiveAbnormalities: 2}}
	args.Default()
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		var moved []Move
		var plans []Plan
		p, err := New(args, h, Deps{
			NodeMetric: func(n string) *slov1alpha1.NodeMetric { return metrics[n] },
			Migrate:    func(_ context.Context, m Move) error { moved = append(moved, m); return nil },
			Report:     func(_ string, pl Plan, _ bool) { plans = append(plans, pl) },
			DryRun:     dry,
			Now:        func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		nodes := []*corev1.Node{hot.Node, cool.Node, stale.Node}
		for range 2 {
			if st := p.Balance(t.Context(), nodes); st != nil && st.Err != nil {
				t.Fatal(st.Err)
			}
		}
		last := plans[len(plans)-1]
		if len(last.Moves) != 1 || last.Moves[0].Pod.Name != "be" || !strings.Contains(last.Moves[0].Reason, "cpu 90%") {
			t.Fatalf("dry run %v: plan %+v stuck %v", dry, last.Moves, last.Stuck)
		}
		if strings.Join(last.Low, ",") != "cool" {
			t.Errorf("low nodes %v: the stale NodeMetric's node must not be one", last.Low)
		}
		if dry && len(moved) != 0 {
			t.Errorf("dry run moved %d pods", len(moved))
		}
		if !dry && (len(moved) != 1 || moved[0].To != "cool") {
			t.Errorf("moves %+v", moved)
		}
	}
	// Paused: nothing is planned.
	args.Paused = ptr.To(true)
	p, _ := New(args, h, Deps{NodeMetric: func(string) *slov1alpha1.NodeMetric { t.Fatal("paused plugin read a NodeMetric"); return nil }})
	p.Balance(t.Context(), []*corev1.Node{hot.Node})
}

// nodePools: each group of nodes is judged by its own thresholds (unset
// ones come from the args); a node in no pool, by the args'.
func TestNodePools(t *testing.T) {
	now := time.Unix(10000, 0)
	strict := load(node("strict", "10", "64Gi"), "1", map[*corev1.Pod]string{pod("s", "strict", "BE", 5000): "5"}) // 60 %
	plain := load(node("plain", "10", "64Gi"), "1", map[*corev1.Pod]string{pod("p", "plain", "BE", 5000): "5"})    // 60 %
	cool := load(node("cool", "10", "64Gi"), "0", nil)
	coolStrict := load(node("cool-strict", "10", "64Gi"), "0", nil)
	for _, nl := range []NodeLoad{strict, coolStrict} {
		nl.Node.Labels["pool"] = "strict"
	}
	metrics := map[string]*slov1alpha1.NodeMetric{}
	pods := map[string][]*corev1.Pod{}
	for _, nl := range []NodeLoad{strict, plain, cool, coolStrict} {
		metrics[nl.Node.Name] = metric(nl, now)
		pods[nl.Node.Name] = nl.Pods
	}
	args := &v1alpha2.LowNodeLoadArgs{
		LowThresholds: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 30}, HighThresholds: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 70},
		AnomalyCondition: &v1alpha2.LoadAnomalyCondition{ConsecutiveAbnormalities: 1},
		NodePools: []v1alpha2.LowNodeLoadNodePool{{Name: "strict", NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "strict"}},
			HighThresholds: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 50}}},
	}
	args.Default()
	if err := args.Validate(); err != nil {
		t.Fatal(err)
	}
	var moved []Move
	reports := map[string]Plan{}
	p, err := New(args, handle{pods: pods}, Deps{
		NodeMetric: func(n string) *slov1alpha1.NodeMetric { return metrics[n] },
		Migrate:    func(_ context.Context, m Move) error { moved = append(moved, m); return nil },
		Report:     func(pool string, pl Plan, _ bool) { reports[pool] = pl },
		Now:        func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Balance(t.Context(), []*corev1.Node{strict.Node, plain.Node, cool.Node, coolStrict.Node})
	if len(moved) != 1 || moved[0].Pod.Name != "s" || moved[0].To != "cool-strict" {
		t.Errorf("moves %+v: want only the strict pool's pod, within its pool", moved)
	}
	if got := reports["default"].Hot; len(got) != 0 {
		t.Errorf("default pool hot %v: 60 %% is under its 70 %%", got)
	}
}

// A pod an unfinished PodMigrationJob is moving still counts in its node's
// NodeMetric until it is gone and koordlet reports again: the node is
// judged without it, so the move in flight does not make a second one.
func TestPodsLeavingAreNotMovedTwice(t *testing.T) {
	now := time.Unix(10000, 0)
	be1, be2 := pod("be-1", "hot", "BE", 5000), pod("be-2", "hot", "BE", 5000)
	hot := load(node("hot", "10", "64Gi"), "1", map[*corev1.Pod]string{be1: "3", be2: "3", pod("web", "hot", "LS", 9000): "2"})
	cool := load(node("cool", "10", "64Gi"), "1", nil)
	metrics := map[string]*slov1alpha1.NodeMetric{"hot": metric(hot, now), "cool": metric(cool, now)}
	args := &v1alpha2.LowNodeLoadArgs{LowThresholds: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 30}, HighThresholds: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 70},
		AnomalyCondition: &v1alpha2.LoadAnomalyCondition{ConsecutiveAbnormalities: 1}}
	args.Default()
	for leaving, want := range map[string]int{"": 1, "ns/be-1": 0} {
		var moved []Move
		p, err := New(args, handle{pods: map[string][]*corev1.Pod{"hot": hot.Pods}}, Deps{
			NodeMetric: func(n string) *slov1alpha1.NodeMetric { return metrics[n] },
			Migrate:    func(_ context.Context, m Move) error { moved = append(moved, m); return nil },
			Leaving:    func(context.Context) (map[string]bool, error) { return map[string]bool{leaving: true}, nil },
			Now:        func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		if st := p.Balance(t.Context(), []*corev1.Node{hot.Node, cool.Node}); st != nil && st.Err != nil {
			t.Fatal(st.Err)
		}
		// 9 of 10 cores with both BE pods; 6 once be-1 is counted as gone.
		if len(moved) != want {
			t.Errorf("leaving %q: %d moves %+v, want %d", leaving, len(moved), moved, want)
		}
	}
}
