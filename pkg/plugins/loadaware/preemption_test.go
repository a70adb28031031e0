package loadaware

import (
	"context"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// A node over its threshold takes the pod once preemption removes a pod
// whose usage brings it under, and not once that pod is added back; a pod
// the metric does not show yet counts at its estimate; a nominated pod
// (not counted by the cache) adds its estimate and removing it takes the
// estimate away again. The state the framework started from is untouched.
func TestPreemptionMovesUsage(t *testing.T) {
	clk := &clock{t0}
	p := newPlugin(defaultArgs(t, nil), nil, clk.now)
	node := makeNode("n1", "10", "100Gi")
	// 7 of 10 cores used (threshold 65%): "hog" uses 3 of them.
	p.cache.setMetric("n1", metric("n1", t0, "7", "10Gi", podMetric("hog", "3", "1Gi", "")))
	hog := makePod("hog", rl("1", "1Gi"), nil, 0)
	p.cache.assign(hog, "n1", t0.Add(-10*time.Minute), nil)
	fresh := makePod("fresh", rl("2", "1Gi"), nil, 0) // bound after the report: at its estimate, 1700m
	p.cache.assign(fresh, "n1", t0, nil)
	incoming := makePod("incoming", rl("1", "100Mi"), nil, 0) // estimate 850m

	ctx := context.Background()
	state := framework.NewCycleState()
	p.PreFilter(ctx, state, incoming, nil)
	ni := nodeInfo(node)
	if st := p.Filter(ctx, state, incoming, ni); st.IsSuccess() {
		t.Fatal("8.7 + 0.85 of 10 cores passes a 65% threshold")
	}
	dry := state.Clone()
	hogInfo, _ := framework.NewPodInfo(hog)
	freshInfo, _ := framework.NewPodInfo(fresh)
	// hog's 3 cores go: 5.7 + 0.85 = 6.55 of 10 is still over 65%.
	if st := p.RemovePod(ctx, dry, incoming, hogInfo, ni); !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	if st := p.Filter(ctx, dry, incoming, ni); st.IsSuccess() {
		t.Error("with hog gone, 6.55 of 10 cores passed 65%")
	}
	// fresh's estimate (1.7 cores) goes too: 4 + 0.85 passes.
	p.RemovePod(ctx, dry, incoming, freshInfo, ni)
	p.RemovePod(ctx, dry, incoming, freshInfo, ni) // twice counts once
	if st := p.Filter(ctx, dry, incoming, ni); !st.IsSuccess() {
		t.Errorf("with hog and fresh gone (4.85 of 10 cores): %v", st.AsError())
	}
	// Given back (reprieved), hog counts again.
	p.AddPod(ctx, dry, incoming, hogInfo, ni)
	if st := p.Filter(ctx, dry, incoming, ni); st.IsSuccess() {
		t.Error("with hog back (7.85 of 10 cores) the node passed")
	}
	// A nominated pod adds its estimate; removed, it is gone again.
	nominated := makePod("nominated", rl("1", "1Gi"), nil, 0)
	nominatedInfo, _ := framework.NewPodInfo(nominated)
	quiet := state.Clone()
	p.RemovePod(ctx, quiet, incoming, hogInfo, ni)
	p.RemovePod(ctx, quiet, incoming, freshInfo, ni)
	p.AddPod(ctx, quiet, incoming, nominatedInfo, ni)
	p.AddPod(ctx, quiet, incoming, nominatedInfo, ni) // twice counts once
	if st := p.Filter(ctx, quiet, incoming, ni); !st.IsSuccess() {
		t.Errorf("4 + 0.85 nominated + 0.85 of 10 cores: %v", st.AsError())
	}
	p.AddPod(ctx, quiet, incoming, hogInfo, ni) // 8.85 with hog back
	if st := p.Filter(ctx, quiet, incoming, ni); st.IsSuccess() {
		t.Error("hog and the nominated pod back: the node passed")
	}
	p.RemovePod(ctx, quiet, incoming, nominatedInfo, ni) // 7.85 still over
	p.RemovePod(ctx, quiet, incoming, hogInfo, ni)       // 4.85
	if st := p.Filter(ctx, quiet, incoming, ni); !st.IsSuccess() {
		t.Errorf("nominated and hog gone again: %v", st.AsError())
	}
	// The cycle's own state saw none of it.
	if st := p.Filter(ctx, state, incoming, ni); st.IsSuccess() {
		t.Error("the original state changed with its copies")
	}
}
