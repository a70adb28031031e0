package reservation

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/internal/schedtest"
)

// benchPlugin has n reservations on node n1, owned by app=web, 1 CPU each.
func benchPlugin(n int) *Plugin {
	var rs []*schedulingv1alpha1.Reservation
	for i := range n {
		rs = append(rs, withOwners(available(fmt.Sprintf("r%d", i), "n1", "100m"), "web"))
	}
	return testPlugin(rs...)
}

// BenchmarkFilterScore is one pod's Filter and Score on one node holding 0,
// 1 or 10 reservations, for an owner and for a stranger.
func BenchmarkFilterScore(b *testing.B) {
	ni := nodeInfo("1")
	// The budget the issue sets: NodeResourcesFit's Filter and Score on the
	// same node, for the same pod.
	b.Run("NodeResourcesFit", func(b *testing.B) {
		ctx := context.Background()
		pod := appPod("p", "batch", "100m")
		fit := schedtest.NewFit(b)
		cs := framework.NewCycleState()
		fit.(fwk.PreFilterPlugin).PreFilter(ctx, cs, pod, nil)
		fit.(fwk.PreScorePlugin).PreScore(ctx, cs, pod, []fwk.NodeInfo{ni})
		b.ReportAllocs()
		for b.Loop() {
			if st := fit.(fwk.FilterPlugin).Filter(ctx, cs, pod, ni); !st.IsSuccess() {
				b.Fatal(st)
			}
			_, _ = fit.(fwk.ScorePlugin).Score(ctx, cs, pod, ni)
		}
	})
	for _, n := range []int{0, 1, 10} {
		for _, who := range []string{"owner", "stranger"} {
			b.Run(fmt.Sprintf("reservations=%d/%s", n, who), func(b *testing.B) {
				p := benchPlugin(n)
				app := "web"
				if who == "stranger" {
					app = "batch"
				}
				pod := appPod("p", app, "100m")
				cycles := freshCycles(b, p, pod, who == "owner" && n > 0)
				b.ReportAllocs()
				for b.Loop() {
					// With nothing held, PreFilter skips Filter, as the
					// framework would.
					cs, skip := cycles()
					if !skip {
						if st := p.Filter(context.Background(), cs, pod, ni); !st.IsSuccess() {
							b.Fatal(st)
						}
					}
					_, _ = p.Score(context.Background(), cs, pod, ni)
				}
			})
		}
	}
}

// freshCycles hands out a PreFiltered cycle state for each call, and whether
// PreFilter skipped Filter. An owner's choice on a node is worked out once
// per cycle (Filter) and reused (Score), so reusing one cycle as it is would
// measure only the reuse: with fresh set, every call gets the cycle state
// with its choices emptied, as a new cycle's PreFilter leaves it.
func freshCycles(b *testing.B, p *Plugin, pod *corev1.Pod, fresh bool) func() (fwk.CycleState, bool) {
	cs := framework.NewCycleState()
	_, st := p.PreFilter(context.Background(), cs, pod, nil)
	if !st.IsSuccess() && !st.IsSkip() {
		b.Fatal(st)
	}
	skip := st.IsSkip()
	if !fresh {
		return func() (fwk.CycleState, bool) { return cs, skip }
	}
	s := p.getState(cs)
	return func() (fwk.CycleState, bool) {
		s.choices.Clear()
		return cs, skip
	}
}

// BenchmarkPreFilterFilter1000 is PreFilter plus Filter over 1000 nodes with
// one reservation each (1000 reservations), for a stranger.
func BenchmarkPreFilterFilter1000(b *testing.B) {
	p := testPlugin()
	nodes := make([]fwk.NodeInfo, 1000)
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		p.cache.SetReservation(withOwners(available("r-"+name, name, "100m"), "web"))
		ni := framework.NewNodeInfo()
		ni.SetNode(nodeInfo().Node().DeepCopy())
		ni.Node().Name = name
		nodes[i] = ni
	}
	pod := appPod("p", "batch", "100m")
	b.ReportAllocs()
	for b.Loop() {
		cs := framework.NewCycleState()
		if _, st := p.PreFilter(context.Background(), cs, pod, nodes); !st.IsSuccess() {
			b.Fatal(st)
		}
		for _, ni := range nodes {
			if st := p.Filter(context.Background(), cs, pod, ni); !st.IsSuccess() {
				b.Fatal(st)
			}
		}
	}
}
