package numaresource

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/reservationutil/reservationtest"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

// A reservation's placeholder gets CPUs like any binding pod; once it is
// bound (turned into the reservation), the reservation holds them: no other
// pod gets them, and its owner gets exactly them.
func TestReservationPinnedCPUs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 2, 4, 2, 8*gi))

	ph := reservationtest.MakePlaceholder(lsr("reservation-r1", "4", "2Gi", nil), "r1")
	cs, st, _ := f.cycle(ph)
	if st != nil {
		t.Fatal(st.AsError())
	}
	if s := f.p.Reserve(ctx, cs, ph, "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	d, err := cs.Read(reservedKey)
	if err != nil {
		t.Fatal(err)
	}
	pinned := d.(*reserved).alloc
	f.p.PostBind(ctx, cs, ph, "n1")
	if held := f.p.state.Held("n1"); !held.IsEmpty() {
		t.Fatalf("after the placeholder's bind the plugin still holds %s for it", held)
	}
	r1 := frameworkext.Hold{Name: "r1", UID: "r1", MilliCPU: 4000, Memory: 2 * gi, CPUs: pinned.CPUs, NUMAMemory: pinned.Memory}

	// Everyone else: 12 CPUs left, never the reservation's.
	f.holds = &frameworkexttest.Holds{Node: "n1", HeldBy: []frameworkext.Hold{r1}}
	for i := 0; i < 6; i++ {
		got := mustSchedule(t, f, lsr(fmt.Sprintf("p%d", i), "2", "", nil), "n1").CPUs()
		if !got.Intersection(pinned.CPUs).IsEmpty() {
			t.Fatalf("non-owner p%d got %s, reservation r1 pinned %s", i, got, pinned.CPUs)
		}
	}
	if _, err := f.schedule(lsr("p6", "2", "", nil), "n1"); err == nil || !strings.Contains(err.Error(), "0 free whole cores") {
		t.Fatalf("a non-owner with only the reservation's CPUs free: %v", err)
	}
	// A memory-hungry single-NUMA non-owner does not get the memory the
	// reservation pinned on its NUMA node either.
	numa := f.p.state.nodes["n1"].topo.NUMANodeOf(pinned.CPUs.List()[0])
	view, _ := f.p.state.View("n1")
	narrowed, own := f.p.forPod(&podState{}, withHolds(f.holds), node("n1", nil), view)
	if own != nil || narrowed.MemoryFree[numa] != view.MemoryFree[numa]-2*gi {
		t.Errorf("non-owner sees %d bytes free on NUMA node %d, want %d", narrowed.MemoryFree[numa], numa, view.MemoryFree[numa]-2*gi)
	}

	// The owner gets the very CPUs held for it.
	f.holds = &frameworkexttest.Holds{Node: "n1", Use: &r1}
	got := mustSchedule(t, f, lsr("owner", "4", "2Gi", nil), "n1")
	if !got.CPUs().Equals(pinned.CPUs) {
		t.Fatalf("owner got %s, reservation r1 pinned %s", got.CPUs(), pinned.CPUs)
	}
	// What the owner took is no longer the reservation's to hold.
	r1.Consumers = []types.UID{"owner"}
	if m := f.p.unusedMemory("n1", &r1); m[numa] != 0 {
		t.Errorf("reservation memory left on NUMA node %d after its owner took it: %d", numa, m[numa])
	}
}

// An owner needing more than its reservation pinned gets CPUs from the rest.
func TestReservationOwnerNeedsMore(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 2, 4, 2, 8*gi))
	r1 := frameworkext.Hold{Name: "r1", UID: "r1", CPUs: cpuset.New(0, 1)}
	f.holds = &frameworkexttest.Holds{Node: "n1", Use: &r1}
	got := mustSchedule(t, f, lsr("owner", "4", "", nil), "n1").CPUs()
	if got.Size() != 4 {
		t.Fatalf("owner got %s", got)
	}
}

func withHolds(h frameworkext.Holds) fwk.CycleState {
	cs := framework.NewCycleState()
	cs.Write(frameworkext.HoldsStateKey, h)
	return cs
}

// A pod that uses none of a node's reservations sees the node less the CPUs
// those reservations pinned, whichever they are, and less what pods took
// since; an owner sees, besides, its own reservation's CPUs apart.
func TestStrangerViewLessPinnedCPUs(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 2, 4, 2, 8*gi))
	a := &frameworkexttest.Holds{Node: "n1", HeldBy: []frameworkext.Hold{{Name: "a", UID: "a", CPUs: cpuset.New(0, 1)}}}
	b := &frameworkexttest.Holds{Node: "n1", HeldBy: []frameworkext.Hold{{Name: "b", UID: "b", CPUs: cpuset.New(2, 3)}}}
	narrow := func(h frameworkext.Holds) *NodeView {
		t.Helper()
		view, err := f.p.state.View("n1")
		if err != nil {
			t.Fatal(err)
		}
		v, own := f.p.forPod(&podState{}, withHolds(h), node("n1", nil), view)
		if own != nil || v == view {
			t.Fatalf("a stranger beside a pinned reservation: view %p (the node's %p), own %v", v, view, own)
		}
		return v
	}
	first := narrow(a)
	if first.Available.Contains(0) || first.Available.Contains(1) || !first.Available.Contains(2) {
		t.Errorf("beside a: available %s", first.Available)
	}
	second := narrow(b)
	if second.Available.Contains(2) || !second.Available.Contains(0) {
		t.Errorf("beside b: available %s", second.Available)
	}
	// A pod on the node changes its view: the narrowed one follows.
	if err := f.p.state.Assume("n1", "p", Allocation{CPUs: cpuset.New(4, 5)}); err != nil {
		t.Fatal(err)
	}
	third := narrow(b)
	if third.Available.Contains(4) || third.Available.Contains(2) || !third.Available.Contains(6) {
		t.Errorf("after a pod took 4-5: available %s", third.Available)
	}
	use := &frameworkext.Hold{Name: "c", UID: "c", CPUs: cpuset.New(6, 7)}
	view, _ := f.p.state.View("n1")
	o1, own := f.p.forPod(&podState{}, withHolds(&frameworkexttest.Holds{Node: "n1", Use: use, HeldBy: b.HeldBy}), node("n1", nil), view)
	if own == nil || !own.Available.Equals(cpuset.New(6, 7)) || o1.Available.Contains(2) {
		t.Errorf("owner: narrowed %v, own %v", o1.Available, own)
	}
}
