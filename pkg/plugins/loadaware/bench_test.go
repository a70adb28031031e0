package loadaware

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/schedtest"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

// benchNode is a 32-core node running 30 pods, each with a NodeMetric entry.
func benchNode(p *Plugin, name string) *framework.NodeInfo {
	node := makeNode(name, "32", "128Gi")
	var pods []*corev1.Pod
	var metrics []*slov1alpha1.PodMetricInfo
	for i := 0; i < 30; i++ {
		pod := makePod(fmt.Sprintf("%s-pod-%d", name, i), rl("500m", "1Gi"), nil, 0)
		pod.Spec.NodeName = name
		pods = append(pods, pod)
		metrics = append(metrics, podMetric(pod.Name, "300m", "800Mi", ""))
		p.cache.assign(pod, name, t0.Add(-1e12), nil)
	}
	p.cache.setMetric(name, metric(name, t0, "9", "30Gi", metrics...))
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

// BenchmarkFilter and BenchmarkScore compare one call on one node with the
// in-tree NodeResourcesFit on the same node.
func BenchmarkFilter(b *testing.B) {
	benchFilterOne(b, makePod("incoming", rl("1", "2Gi"), nil, 0), true)
}

// BenchmarkFilterRejected is one call on one node that turns the pod away,
// beside NodeResourcesFit turning the same pod away: the path the per-node
// target covers on every node a pod does not fit. The pod's 20 CPUs are over
// the load threshold, and more than the 17 the node's pods leave
// unrequested.
func BenchmarkFilterRejected(b *testing.B) {
	benchFilterOne(b, makePod("incoming", rl("20", "2Gi"), nil, 0), false)
}

// benchFilterOne times Filter of pod on benchNode's node, for this plugin and
// for NodeResourcesFit, each of which must admit the pod when admit is set
// and turn it away otherwise.
func benchFilterOne(b *testing.B, pod *corev1.Pod, admit bool) {
	ctx := context.Background()
	p := newPlugin(defaultArgs(b, nil), nil, (&clock{t0}).now)
	ni := benchNode(p, "n1")
	for _, pl := range []fwk.Plugin{p, schedtest.NewFit(b)} {
		b.Run(pl.Name(), func(b *testing.B) {
			state := framework.NewCycleState()
			pl.(fwk.PreFilterPlugin).PreFilter(ctx, state, pod, nil)
			b.ReportAllocs()
			for b.Loop() {
				if st := pl.(fwk.FilterPlugin).Filter(ctx, state, pod, ni); st.IsSuccess() != admit {
					b.Fatalf("admitted %v, want %v: %v", st.IsSuccess(), admit, st.AsError())
				}
			}
		})
	}
}

func BenchmarkScore(b *testing.B) {
	ctx := context.Background()
	clk := &clock{t0}
	p := newPlugin(defaultArgs(b, nil), nil, clk.now)
	ni := benchNode(p, "n1")
	pod := makePod("incoming", rl("1", "2Gi"), nil, 0)

	b.Run("LoadAwareScheduling", func(b *testing.B) {
		state := framework.NewCycleState()
		p.PreScore(ctx, state, pod, nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, st := p.Score(ctx, state, pod, ni); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
	b.Run("NodeResourcesFit", func(b *testing.B) {
		fit := schedtest.NewFit(b)
		state := framework.NewCycleState()
		fit.(fwk.PreScorePlugin).PreScore(ctx, state, pod, []fwk.NodeInfo{ni})
		b.ReportAllocs()
		for b.Loop() {
			if _, st := fit.(fwk.ScorePlugin).Score(ctx, state, pod, ni); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
}

// BenchmarkCycle1000Nodes is one pod's PreFilter+Filter and PreScore+Score
// over a 1000-node cluster, for both plugins.
func BenchmarkCycle1000Nodes(b *testing.B) {
	ctx := context.Background()
	clk := &clock{t0}
	p := newPlugin(defaultArgs(b, nil), nil, clk.now)
	nodes := make([]fwk.NodeInfo, 1000)
	for i := range nodes {
		nodes[i] = benchNode(p, fmt.Sprintf("node-%04d", i))
	}
	pod := makePod("incoming", rl("1", "2Gi"), nil, 0)
	fit := schedtest.NewFit(b)
	plugins := map[string]fwk.Plugin{"LoadAwareScheduling": p, "NodeResourcesFit": fit}
	for _, name := range []string{"LoadAwareScheduling", "NodeResourcesFit"} {
		pl := plugins[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				state := framework.NewCycleState()
				pl.(fwk.PreFilterPlugin).PreFilter(ctx, state, pod, nodes)
				for _, ni := range nodes {
					pl.(fwk.FilterPlugin).Filter(ctx, state, pod, ni)
				}
				pl.(fwk.PreScorePlugin).PreScore(ctx, state, pod, nodes)
				for _, ni := range nodes {
					pl.(fwk.ScorePlugin).Score(ctx, state, pod, ni)
				}
			}
		})
	}
}

// BenchmarkFilterReservations is Filter with the Reservation plugin's state
// in the cycle: on a node without reservations (must cost nothing more) and
// beside a reservation held against the pod.
func BenchmarkFilterReservations(b *testing.B) {
	ctx := context.Background()
	p := newPlugin(defaultArgs(b, nil), nil, (&clock{t0}).now)
	ni := benchNode(p, "n1")
	pod := makePod("incoming", rl("1", "2Gi"), nil, 0)
	for _, tc := range []struct {
		name  string
		holds frameworkext.Holds
	}{
		{"none-on-node", &frameworkexttest.Holds{}},
		{"beside-one", &frameworkexttest.Holds{HeldBy: []frameworkext.Hold{{Name: "r", UID: "r", MilliCPU: 2000, Memory: 4 << 30}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			state := framework.NewCycleState()
			state.Write(frameworkext.HoldsStateKey, tc.holds)
			p.PreFilter(ctx, state, pod, nil)
			b.ReportAllocs()
			for b.Loop() {
				if st := p.Filter(ctx, state, pod, ni); !st.IsSuccess() {
					b.Fatal(st.AsError())
				}
			}
		})
	}
}

// BenchmarkPodUpdate is the informer's update of one of 30 pods recorded on a
// node: a status change, which leaves the record alone, and a spec change
// (an in-place resize), which estimates the pod and recomputes the node, as
// every update did before the record kept the pod's generation.
func BenchmarkPodUpdate(b *testing.B) {
	p := newPlugin(defaultArgs(b, nil), nil, (&clock{t0}).now)
	benchNode(p, "n1")
	pod := makePod("n1-pod-0", rl("500m", "1Gi"), nil, 0)
	pod.Spec.NodeName = "n1"
	pod.Generation = 1
	p.onPod(pod)

	b.Run("status", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.onPod(pod)
		}
	})
	b.Run("spec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pod.Generation++
			p.onPod(pod)
		}
	})
}

// BenchmarkFilterPass is one pod's PreFilter and Filter over 1000 nodes, as
// kube-scheduler runs them for a pod, with warm caches (as
// BenchmarkCycle1000Nodes) and cold ones (schedtest.FilterPasses).
// annotations=6 gives every node six annotations of the kinds kubelet,
// kubeadm, a CSI driver and a CNI set, as real nodes carry: the plugin must
// not pay for them per node (it learns whether a node object has the
// usage-thresholds annotation once per object). NodeResourcesFit runs the
// same passes, the in-tree plugin the per-node target is set against.
func BenchmarkFilterPass(b *testing.B) {
	for _, annotations := range []int{0, 6} {
		p := newPlugin(defaultArgs(b, nil), nil, (&clock{t0}).now)
		nodes := make([]fwk.NodeInfo, 1000)
		for i := range nodes {
			ni := benchNode(p, fmt.Sprintf("node-%04d", i))
			if annotations > 0 {
				n := ni.Node().DeepCopy()
				n.Annotations = schedtest.NodeAnnotations(i)
				ni.SetNode(n)
			}
			nodes[i] = ni
		}
		pod := makePod("incoming", rl("1", "2Gi"), nil, 0)
		schedtest.FilterPasses(b, fmt.Sprintf("annotations=%d/", annotations), []fwk.Plugin{p, schedtest.NewFit(b)}, pod, nodes)
	}
}
