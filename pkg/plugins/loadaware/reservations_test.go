package loadaware

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/koord-project/koord/apis/config/v1"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

// What a reservation has left counts as estimated load for every pod but
// the owner consuming it, in Filter and in Score.
func TestReservationsCountAsLoad(t *testing.T) {
	p := newPlugin(defaultArgs(t, nil), nil, (&clock{t0}).now)
	node := makeNode("n1", "10", "100Gi")
	p.cache.setMetric("n1", metric("n1", t0.Add(-10*time.Second), "4", "10Gi"))
	r := frameworkext.Hold{Name: "r", UID: "r", MilliCPU: 2000, Memory: 1 << 30}
	pod := makePod("p", rl("1", "100Mi"), nil, 0) // estimate 850m

	run := func(h frameworkext.Holds) (int64, error) {
		cs := framework.NewCycleState()
		cs.Write(frameworkext.HoldsStateKey, h)
		p.PreFilter(context.Background(), cs, pod, nil)
		var err error
		if st := p.Filter(context.Background(), cs, pod, nodeInfo(node)); !st.IsSuccess() {
			err = st.AsError()
		}
		s, _ := p.Score(context.Background(), cs, pod, nodeInfo(node))
		return s, err
	}
	// 40% measured + 8.5% pod + 17% held (2000m × 85%) = 65.5% > 65%.
	heldScore, err := run(&frameworkexttest.Holds{HeldBy: []frameworkext.Hold{r}})
	if err == nil || !strings.Contains(err.Error(), "cpu usage over the load threshold") {
		t.Errorf("a stranger beside a 2-CPU reservation: %v, want a cpu rejection", err)
	}
	ownScore, err := run(&frameworkexttest.Holds{Use: &r})
	if err != nil {
		t.Errorf("the owner consuming it: %v", err)
	}
	if heldScore >= ownScore {
		t.Errorf("score with the reservation held %d, as its owner %d: held load must lower it", heldScore, ownScore)
	}
	// The reservation is on another node: Filter's shortcut (the most any
	// node holds) does not fit, the node's own figure does.
	if _, err := run(&frameworkexttest.Holds{Node: "n2", HeldBy: []frameworkext.Hold{r}}); err != nil {
		t.Errorf("a reservation on n2 turned the pod away from n1: %v", err)
	}
}

// Score after Filter in one cycle gives what Score gives on its own, for
// every path through Filter: no reservations, a stranger beside one, held
// on another node, the owner, a prod pod; and it follows the node's load.
func TestScoreAfterFilter(t *testing.T) {
	clk := &clock{t0}
	r := frameworkext.Hold{Name: "r", UID: "r", MilliCPU: 1000, Memory: 1 << 30}
	holds := map[string]frameworkext.Holds{
		"none":                 nil,
		"stranger here":        &frameworkexttest.Holds{HeldBy: []frameworkext.Hold{r}},
		"held on another node": &frameworkexttest.Holds{Node: "n2", HeldBy: []frameworkext.Hold{r}},
		"owner":                &frameworkexttest.Holds{Use: &r},
	}
	pods := map[string]*corev1.Pod{
		"batch": makePod("p", rl("1", "1Gi"), nil, 5000),
		"prod":  makePod("q", rl("500m", "2Gi"), nil, 9000),
	}
	for _, strategy := range []configv1.ScoringStrategy{"LeastUsed", "MostUsed"} {
		p := newPlugin(defaultArgs(t, func(a *configv1.LoadAwareSchedulingArgs) {
			a.ScoringStrategy = strategy
			a.ScoreAccordingProdUsage = ptr.To(true)
		}), nil, clk.now)
		node := makeNode("n1", "10", "100Gi")
		for hname, h := range holds {
			for pname, pod := range pods {
				p.cache.setMetric("n1", metric("n1", t0, "3", "20Gi", podMetric("web", "1", "4Gi", extension.PriorityProd)))
				state := func() fwk.CycleState {
					cs := framework.NewCycleState()
					if h != nil {
						cs.Write(frameworkext.HoldsStateKey, h)
					}
					return cs
				}
				cs := state()
				p.PreFilter(context.Background(), cs, pod, []fwk.NodeInfo{nodeInfo(node)})
				ni := nodeInfo(node)
				if st := p.Filter(context.Background(), cs, pod, ni); !st.IsSuccess() {
					t.Fatalf("%s/%s/%s: %v", strategy, hname, pname, st.AsError())
				}
				alone := func() int64 {
					fresh := state()
					p.PreScore(context.Background(), fresh, pod, nil)
					v, _ := p.Score(context.Background(), fresh, pod, ni)
					return v
				}
				want := alone()
				got, _ := p.Score(context.Background(), cs, pod, ni)
				if got != want {
					t.Errorf("%s/%s/%s: Score after Filter %d, on its own %d", strategy, hname, pname, got, want)
				}
				p.cache.setMetric("n1", metric("n1", t0, "6", "60Gi"))
				if later := alone(); later == want {
					t.Errorf("%s/%s/%s: the busier node scores %d as before", strategy, hname, pname, later)
				}
			}
		}
	}
}

// What reservations hold is scaled as the pods' estimates are: by the
// configured factors for cpu and memory, other resources untouched.
func TestHeldScaledAsEstimates(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mutate         func(*configv1.LoadAwareSchedulingArgs)
		cpu, memory    int64
		wantCPU, wantM int64
	}{
		{name: "defaults", cpu: 2000, memory: 1000, wantCPU: 1700, wantM: 700},
		{name: "configured", mutate: func(a *configv1.LoadAwareSchedulingArgs) {
			a.EstimatedScalingFactors = map[corev1.ResourceName]int64{corev1.ResourceCPU: 50, corev1.ResourceMemory: 100}
		}, cpu: 2000, memory: 1000, wantCPU: 1000, wantM: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(defaultArgs(t, tc.mutate), nil, (&clock{t0}).now)
			est := make(vector, len(p.resources))
			est[0], est[1] = 10, 20
			got := p.addHeld(est, tc.cpu, tc.memory, nil)
			if got[0] != 10+tc.wantCPU || got[1] != 20+tc.wantM {
				t.Errorf("cpu %d, memory %d; want %d, %d", got[0], got[1], 10+tc.wantCPU, 20+tc.wantM)
			}
			if est[0] != 10 || est[1] != 20 {
				t.Errorf("the pod's estimate changed: %v", est)
			}
		})
	}
}
