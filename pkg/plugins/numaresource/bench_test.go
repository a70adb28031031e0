package numaresource

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/schedtest"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

// benchCluster is n nodes of 2 sockets × 2 NUMA × 16 cores × 2 threads, each
// with 30 LSR pods already holding 2 CPUs.
func benchCluster(b *testing.B, n int) (*fixture, []fwk.NodeInfo) {
	var nodes []*corev1.Node
	for i := 0; i < n; i++ {
		nodes = append(nodes, node(fmt.Sprintf("node-%04d", i), nil))
	}
	f := newFixture(b, defaultArgs(b, nil), nodes...)
	var infos []fwk.NodeInfo
	for _, nd := range nodes {
		f.publish(nd.Name, topologytest.Linux(2, 2, 16, 2, 64*gi))
		var pods []*corev1.Pod
		for j := 0; j < 30; j++ {
			pod := lsr(fmt.Sprintf("%s-pod-%d", nd.Name, j), "2", "2Gi", nil)
			pod.UID = "uid-" + pod.UID
			pod.Spec.NodeName = nd.Name
			pods = append(pods, pod)
			view, err := f.p.state.View(nd.Name)
			if err != nil {
				b.Fatal(err)
			}
			cpus, err := view.Topo.Choose(view.Available, full(2))
			if err != nil {
				b.Fatal(err)
			}
			if err := f.p.state.Assume(nd.Name, pod.UID, Allocation{CPUs: cpus, Memory: splitMemory(view.Topo, cpus, 2*gi)}); err != nil {
				b.Fatal(err)
			}
		}
		ni := framework.NewNodeInfo(pods...)
		ni.SetNode(nd)
		nd.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity("128"), corev1.ResourceMemory: *resourceQuantity("256Gi"), corev1.ResourcePods: *resourceQuantity("110")}
		ni.SetNode(nd)
		infos = append(infos, ni)
	}
	return f, infos
}

// BenchmarkFilter and BenchmarkScore compare one call on one node with the
// in-tree NodeResourcesFit on the same node, for a 4-CPU LSR pod.
func BenchmarkFilter(b *testing.B) {
	ctx := context.Background()
	f, nodes := benchCluster(b, 1)
	pod := lsr("incoming", "4", "8Gi", nil)
	b.Run("NodeNUMAResource", func(b *testing.B) {
		cs, _, _ := f.cycle(pod)
		b.ReportAllocs()
		for b.Loop() {
			if st := f.p.Filter(ctx, cs, pod, nodes[0]); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
	// An exclusive pod on a node where exclusive pods already run: the
	// capacity is recomputed for it.
	b.Run("NodeNUMAResource/NUMANodeLevel-masked", func(b *testing.B) {
		excl := lsr("exclusive", "4", "8Gi", map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUExclusivePolicy":"NUMANodeLevel"}`})
		view, _ := f.p.state.View(nodes[0].Node().Name)
		cpus, _ := view.Topo.Choose(view.Available, full(2))
		if err := f.p.state.Assume(nodes[0].Node().Name, "exclusive-holder", Allocation{CPUs: cpus, Exclusive: extension.CPUExclusivePolicyNUMANodeLevel}); err != nil {
			b.Fatal(err)
		}
		defer f.p.state.Forget("exclusive-holder")
		cs, _, _ := f.cycle(excl)
		b.ReportAllocs()
		for b.Loop() {
			if st := f.p.Filter(ctx, cs, excl, nodes[0]); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
	b.Run("NodeResourcesFit", func(b *testing.B) {
		fit := schedtest.NewFit(b)
		cs := framework.NewCycleState()
		fit.(fwk.PreFilterPlugin).PreFilter(ctx, cs, pod, nil)
		b.ReportAllocs()
		for b.Loop() {
			if st := fit.(fwk.FilterPlugin).Filter(ctx, cs, pod, nodes[0]); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
}

func BenchmarkScore(b *testing.B) {
	ctx := context.Background()
	f, nodes := benchCluster(b, 1)
	pod := lsr("incoming", "4", "8Gi", nil)
	b.Run("NodeNUMAResource", func(b *testing.B) {
		// Score works the node out from its view: PreFilter and PreScore
		// only read the pod.
		cs := framework.NewCycleState()
		if _, st := f.p.PreFilter(ctx, cs, pod, nodes); !st.IsSuccess() {
			b.Fatal(st.AsError())
		}
		f.p.PreScore(ctx, cs, pod, nodes)
		b.ReportAllocs()
		for b.Loop() {
			if _, st := f.p.Score(ctx, cs, pod, nodes[0]); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
	b.Run("NodeResourcesFit", func(b *testing.B) {
		fit := schedtest.NewFit(b)
		cs := framework.NewCycleState()
		fit.(fwk.PreScorePlugin).PreScore(ctx, cs, pod, nodes)
		b.ReportAllocs()
		for b.Loop() {
			if _, st := fit.(fwk.ScorePlugin).Score(ctx, cs, pod, nodes[0]); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
}

// BenchmarkPreFilter1000Nodes is PreFilter alone, and one pod's whole
// PreFilter+Filter+PreScore+Score pass, on a 1000-node cluster.
func BenchmarkPreFilter1000Nodes(b *testing.B) {
	ctx := context.Background()
	f, nodes := benchCluster(b, 1000)
	pod := lsr("incoming", "4", "8Gi", nil)
	b.Run("PreFilter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cs := framework.NewCycleState()
			if _, st := f.p.PreFilter(ctx, cs, pod, nodes); !st.IsSuccess() {
				b.Fatal(st.AsError())
			}
		}
	})
	for name, pl := range map[string]fwk.Plugin{"Cycle/NodeNUMAResource": f.p, "Cycle/NodeResourcesFit": schedtest.NewFit(b)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cs := framework.NewCycleState()
				pl.(fwk.PreFilterPlugin).PreFilter(ctx, cs, pod, nodes)
				for _, ni := range nodes {
					pl.(fwk.FilterPlugin).Filter(ctx, cs, pod, ni)
				}
				pl.(fwk.PreScorePlugin).PreScore(ctx, cs, pod, nodes)
				for _, ni := range nodes {
					pl.(fwk.ScorePlugin).Score(ctx, cs, pod, ni)
				}
			}
		})
	}
}

func resourceQuantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// BenchmarkFilterReservations is Filter with the Reservation plugin's state
// in the cycle: on a node without reservations (the common case, which must
// cost nothing more) and on one whose reservation pinned 8 CPUs.
func BenchmarkFilterReservations(b *testing.B) {
	ctx := context.Background()
	f, nodes := benchCluster(b, 1)
	pod := lsr("incoming", "4", "8Gi", nil)
	view, _ := f.p.state.View(nodes[0].Node().Name)
	cpus, _ := view.Topo.Choose(view.Available, full(8))
	pinned := frameworkext.Hold{Name: "r", UID: "r", MilliCPU: 8000, Memory: 16 * gi, CPUs: cpus, NUMAMemory: map[int]int64{view.Topo.NUMANodeOf(cpus.List()[0]): 16 * gi}}
	for _, tc := range []struct {
		name  string
		holds frameworkext.Holds
	}{
		{"none-on-node", &frameworkexttest.Holds{Node: "elsewhere"}},
		{"stranger-beside-pinned", &frameworkexttest.Holds{HeldBy: []frameworkext.Hold{pinned}}},
		{"owner-of-pinned", &frameworkexttest.Holds{Use: &pinned}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f.holds = tc.holds
			defer func() { f.holds = nil }()
			cs, _, _ := f.cycle(pod)
			b.ReportAllocs()
			for b.Loop() {
				if st := f.p.Filter(ctx, cs, pod, nodes[0]); !st.IsSuccess() {
					b.Fatal(st.AsError())
				}
			}
		})
	}
}

// BenchmarkFilterPass is one binding pod's PreFilter and Filter over 1000
// nodes shaped as test/perf's (4 CPUs: one NUMA node of 2 cores × 2
// threads, six typical annotations, no policy label), one CPU of each
// already bound, with warm caches and cold ones (schedtest.FilterPasses):
// in the whole-scheduler benchmark the plugin's cost per node is the
// misses on what it reads of the node's view. NodeResourcesFit runs the
// same passes.
func BenchmarkFilterPass(b *testing.B) {
	var nodes []*corev1.Node
	for i := 0; i < 1000; i++ {
		n := node(fmt.Sprintf("node-%04d", i), nil)
		n.Annotations = schedtest.NodeAnnotations(i)
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity("4"), corev1.ResourceMemory: *resourceQuantity("32Gi"), corev1.ResourcePods: *resourceQuantity("110")}
		nodes = append(nodes, n)
	}
	f := newFixture(b, defaultArgs(b, nil), nodes...)
	var infos []fwk.NodeInfo
	for i, nd := range nodes {
		f.publish(nd.Name, topologytest.Linux(1, 1, 2, 2, 32*gi))
		held := lsr(fmt.Sprintf("held-%04d", i), "1", "", nil)
		if err := f.p.state.Assume(nd.Name, held.UID, Allocation{CPUs: cpuset.New(i % 4)}); err != nil {
			b.Fatal(err)
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(nd)
		infos = append(infos, ni)
	}
	pod := withQoS(lsr("incoming", "1", "128Mi", map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy":"SpreadByPCPUs"}`}), "LS")
	// The first pass builds the views; the passes measured find them built.
	f.cycle(pod)
	for _, nd := range nodes {
		if view, _ := f.p.state.View(nd.Name); view == nil || f.p.state.Built(nd.Name) != view {
			b.Fatalf("%s: the pod's first pass built no view, so the passes would not measure the binding path", nd.Name)
		}
	}
	schedtest.FilterPasses(b, "", []fwk.Plugin{f.p, schedtest.NewFit(b)}, pod, infos)
}
