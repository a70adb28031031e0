package loadaware

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/koord-project/koord/pkg/reservation"
	"github.com/koord-project/koord/pkg/reservation/reservationtest"
)

// What a reservation has left counts as estimated load for every pod but
// the owner consuming it, in Filter and in Score.
func TestReservationsCountAsLoad(t *testing.T) {
	p := newPlugin(defaultArgs(t, nil), nil, (&clock{t0}).now, nil)
	node := makeNode("n1", "10", "100Gi")
	p.cache.setMetric("n1", metric("n1", t0.Add(-10*time.Second), "4", "10Gi"))
	r := reservation.Hold{Name: "r", UID: "r", MilliCPU: 2000, Memory: 1 << 30}
	pod := makePod("p", rl("1", "100Mi"), nil, 0) // estimate 850m

	run := func(h reservation.Holds) (int64, error) {
		cs := framework.NewCycleState()
		cs.Write(reservation.HoldsStateKey, h)
		p.PreFilter(context.Background(), cs, pod, nil)
		var err error
		if st := p.Filter(context.Background(), cs, pod, nodeInfo(node)); !st.IsSuccess() {
			err = st.AsError()
		}
		s, _ := p.Score(context.Background(), cs, pod, nodeInfo(node))
		return s, err
	}
	// 40% measured + 8.5% pod + 17% held (2000m × 85%) = 65.5% > 65%.
	heldScore, err := run(&reservationtest.Holds{HeldBy: []reservation.Hold{r}})
	if err == nil || !strings.Contains(err.Error(), "cpu usage would be 65 percent") {
		t.Errorf("a stranger beside a 2-CPU reservation: %v, want a cpu rejection", err)
	}
	ownScore, err := run(&reservationtest.Holds{Use: &r})
	if err != nil {
		t.Errorf("the owner consuming it: %v", err)
	}
	if heldScore >= ownScore {
		t.Errorf("score with the reservation held %d, as its owner %d: held load must lower it", heldScore, ownScore)
	}
	// The reservation is on another node: Filter's shortcut (the most any
	// node holds) does not fit, the node's own figure does.
	if _, err := run(&reservationtest.Holds{Node: "n2", HeldBy: []reservation.Hold{r}}); err != nil {
		t.Errorf("a reservation on n2 turned the pod away from n1: %v", err)
	}
}
