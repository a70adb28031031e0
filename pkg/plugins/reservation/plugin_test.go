package reservation

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil/reservationtest"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

func testPlugin(rs ...*schedulingv1alpha1.Reservation) *Plugin {
	p := newPlugin(&frameworkexttest.Handle{}, frameworkext.NewExtender(), nil, klog.Background())
	p.ready.Store(true)
	for _, r := range rs {
		p.cache.SetReservation(r)
	}
	return p
}

// nodeInfo is a 4-CPU, 16Gi node n1 running pods of the given CPUs.
func nodeInfo(cpus ...string) fwk.NodeInfo {
	var pods []*corev1.Pod
	for i, c := range cpus {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running-" + string(rune('a'+i))},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(c)}}}}})
	}
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}})
	return ni
}

func withOwners(r *schedulingv1alpha1.Reservation, app string) *schedulingv1alpha1.Reservation {
	r.Spec.Owners = []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	return r
}

func appPod(name, app, cpus string) *corev1.Pod {
	p := owner(name, cpus, "")
	p.Labels = map[string]string{"app": app}
	return p
}

func run(t *testing.T, p *Plugin, pod *corev1.Pod, ni fwk.NodeInfo) (fwk.CycleState, *fwk.Status) {
	t.Helper()
	cs := framework.NewCycleState()
	_, st := p.PreFilter(context.Background(), cs, pod, nil)
	if st.IsSkip() {
		return cs, nil // the framework calls Filter on no node: each passes
	}
	if !st.IsSuccess() {
		return cs, st
	}
	return cs, p.Filter(context.Background(), cs, pod, ni)
}

// Filter is skipped while no reservation holds anything, except for pods
// that require a reservation (Filter must turn them away).
func TestPreFilterSkipsWhileNothingIsHeld(t *testing.T) {
	required := appPod("web-2", "web", "1")
	required.Annotations = map[string]string{extension.AnnotationReservationAffinity: `{"name":"r1"}`}
	for _, tc := range []struct {
		name string
		p    *Plugin
		pod  *corev1.Pod
		skip bool
	}{
		{"no reservations", testPlugin(), appPod("web-1", "web", "1"), true},
		{"no reservations, pod requires one", testPlugin(), required, false},
		{"a reservation holds CPU", testPlugin(withOwners(available("r1", "n1", "2"), "web")), appPod("batch-1", "batch", "1"), false},
	} {
		cs := framework.NewCycleState()
		_, st := tc.p.PreFilter(context.Background(), cs, tc.pod, nil)
		if st.IsSkip() != tc.skip {
			t.Errorf("%s: PreFilter %v, want skip %v", tc.name, st, tc.skip)
		}
		if frameworkext.HoldsOf(cs) == nil {
			t.Errorf("%s: no Holds in the cycle state for the other plugins", tc.name)
		}
	}
	// The required pod is still refused without a reservation to use.
	if _, st := run(t, testPlugin(), required, nodeInfo()); st.IsSuccess() {
		t.Error("a pod requiring a reservation passed Filter with none in the cluster")
	}
}

func TestHoldAgainstNonOwners(t *testing.T) {
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"))
	ni := nodeInfo("2") // 2 of 4 CPUs requested; r1 holds the other 2
	_, st := run(t, p, appPod("batch", "batch", "1"), ni)
	if st.IsSuccess() || !strings.Contains(st.Message(), "reservations hold 2000m of the node's 2000m free CPU, the pod needs 1000m") {
		t.Errorf("non-owner: %v", st)
	}
	cs, st := run(t, p, appPod("web-1", "web", "2"), ni)
	if !st.IsSuccess() {
		t.Fatalf("owner: %v", st)
	}
	if s, _ := p.Score(context.Background(), cs, appPod("web-1", "web", "2"), ni); s != fwk.MaxNodeScore {
		t.Errorf("owner's score %d, want %d", s, fwk.MaxNodeScore)
	}
	// Opting out makes an owner an ordinary pod.
	ignored := appPod("web-2", "web", "1")
	ignored.Labels[extension.LabelReservationIgnored] = "true"
	if _, st := run(t, p, ignored, ni); st.IsSuccess() {
		t.Error("a reservation-ignored pod consumed the reservation")
	}
}

// A node is judged by what its own reservations hold when the pod does not
// fit beside the most any node holds: n1 holds 2 CPUs, n2 only 1.
func TestFilterBesideTheMostHeld(t *testing.T) {
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"), withOwners(available("r2", "n2", "1"), "web"))
	n2 := nodeInfo("1")
	n2.Node().Name = "n2"
	if _, st := run(t, p, appPod("batch-1", "batch", "2"), n2); !st.IsSuccess() {
		t.Errorf("2 CPUs on n2 (3 free, 1 held): %v", st)
	}
	if _, st := run(t, p, appPod("batch-2", "batch", "2500m"), n2); st.IsSuccess() || !strings.Contains(st.Message(), "reservations hold 1000m of the node's 3000m free CPU, the pod needs 2500m") {
		t.Errorf("2.5 CPUs on n2 (3 free, 1 held): %v", st)
	}
	if _, st := run(t, p, appPod("batch-3", "batch", "2"), nodeInfo("1")); st.IsSuccess() {
		t.Error("2 CPUs on n1 (3 free, 2 held) passed")
	}
	// An owner that cannot fit beside the most still gets its reservation.
	if _, st := run(t, p, appPod("web-1", "web", "2"), nodeInfo("1")); !st.IsSuccess() {
		t.Errorf("owner of r1 on n1: %v", st)
	}
}

// Score runs only for pods that may consume a reservation.
func TestPreScoreSkipsNonOwners(t *testing.T) {
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"))
	for _, tc := range []struct {
		pod  *corev1.Pod
		skip bool
	}{
		{appPod("web-1", "web", "1"), false},
		{appPod("batch-1", "batch", "1"), true},
	} {
		cs, st := run(t, p, tc.pod, nodeInfo())
		if !st.IsSuccess() {
			t.Fatalf("%s: %v", tc.pod.Name, st)
		}
		if st := p.PreScore(context.Background(), cs, tc.pod, nil); st.IsSkip() != tc.skip {
			t.Errorf("%s: PreScore %v, want skip %v", tc.pod.Name, st, tc.skip)
		}
	}
}

func TestReserveAccounting(t *testing.T) {
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"))
	ni := nodeInfo()
	first := appPod("web-1", "web", "2")
	cs, st := run(t, p, first, ni)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := p.Reserve(context.Background(), cs, first, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	// The reservation is used up: the next owner is an ordinary pod, which fits beside it.
	second := appPod("web-2", "web", "2")
	cs2, st := run(t, p, second, ni)
	if !st.IsSuccess() {
		t.Fatalf("second owner beside a used-up reservation on an empty node: %v", st)
	}
	if st := p.Reserve(context.Background(), cs2, second, "n1"); !st.IsSuccess() || p.getState(cs2).reserved != nil {
		t.Errorf("second owner reserved %v (%v); the reservation has nothing left", p.getState(cs2).reserved, st)
	}
	// The first pod fails to bind: its share comes back.
	p.Unreserve(context.Background(), cs, first, "n1")
	if v := p.cache.OnNode("n1"); v[0].Owners != 0 {
		t.Errorf("after Unreserve the reservation still has %d owners", v[0].Owners)
	}
}

func TestRequiredAffinity(t *testing.T) {
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"))
	pod := appPod("web-1", "web", "1")
	pod.Annotations = map[string]string{extension.AnnotationReservationAffinity: `{"name":"r9"}`}
	_, st := run(t, p, pod, nodeInfo())
	if st.IsSuccess() || !strings.Contains(st.Message(), "requires a reservation: reservation-affinity names r9, not r1") {
		t.Errorf("affinity naming another reservation: %v", st)
	}
	big := appPod("web-2", "web", "3")
	big.Annotations = map[string]string{extension.AnnotationReservationAffinity: `{"name":"r1"}`}
	if _, st := run(t, p, big, nodeInfo()); st.IsSuccess() || !strings.Contains(st.Message(), "reservation r1 has 2 cpu left, the pod needs 3") {
		t.Errorf("too big for the named reservation: %v", st)
	}
	bad := appPod("web-3", "web", "1")
	bad.Annotations = map[string]string{extension.AnnotationReservationAffinity: `{"name":`}
	if _, st := run(t, p, bad, nodeInfo()); st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), extension.AnnotationReservationAffinity) {
		t.Errorf("malformed annotation: %v", st)
	}
	if _, st := run(t, testPlugin(), pod, nodeInfo()); st.IsSuccess() {
		t.Error("a required reservation on a node without any passed")
	}
}

func TestFullestFitAndPlaceholders(t *testing.T) {
	p := testPlugin(withOwners(available("big", "n1", "3"), "web"), withOwners(available("small", "n1", "1"), "web"))
	pod := appPod("web-1", "web", "1")
	cs, st := run(t, p, pod, nodeInfo())
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := p.Reserve(context.Background(), cs, pod, "n1"); !st.IsSuccess() || p.getState(cs).reserved.Name != "small" {
		t.Errorf("reserved %v, want the fullest fit (small)", p.getState(cs).reserved)
	}
	// A reservation being scheduled consumes none: what both hold counts
	// against it (web-1, now assumed, runs in small's share).
	ph := appPod("ph", "web", "1")
	reservationtest.MakePlaceholder(ph, "r3")
	if _, st := run(t, p, ph, nodeInfo("1")); st.IsSuccess() || !strings.Contains(st.Message(), "reservations hold 3000m of the node's 3000m free CPU") {
		t.Errorf("a placeholder on a node fully held by reservations: %v", st)
	}
}

// The other plugins learn from the pod's state which reservation it
// consumes on a node and which are held against it, with what each pinned.
func TestHoldsForOtherPlugins(t *testing.T) {
	pinned := withOwners(available("pinned", "n1", "2"), "db")
	pinned.ResourceVersion = "10"
	pinned.Annotations = map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"2-3","numaNodeResources":[{"node":1,"resources":{"cpu":"2","memory":"1Gi"}}]}`}
	p := testPlugin(pinned, withOwners(available("plain", "n1", "1"), "web"))
	ctx := context.Background()

	cs, st := run(t, p, appPod("db-0", "db", "2"), nodeInfo())
	if !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	holds := frameworkext.HoldsOf(cs)
	if holds == nil {
		t.Fatal("no frameworkext.Holds in the cycle state")
	}
	use, held := holds.On(named("n1"))
	if use == nil || use.Name != "pinned" || use.CPUs.String() != "2-3" || use.NUMAMemory[1] != 1<<30 || use.MilliCPU != 2000 {
		t.Fatalf("owner's reservation %+v, want pinned with CPUs 2-3 and 1Gi on NUMA node 1", use)
	}
	if len(held) != 1 || held[0].Name != "plain" || held[0].Pinned() {
		t.Fatalf("held against the owner %+v, want plain, pinning nothing", held)
	}
	if u, h := holds.On(named("n2")); u != nil || h != nil {
		t.Errorf("a node without reservations: %v %v", u, h)
	}
	if cpu, _ := holds.Held(named("n1")); cpu != 1000 {
		t.Errorf("owner: %dm held against it, want 1000m (plain)", cpu)
	}
	// After Reserve it is the reservation taken, and it counts the owner.
	if s := p.Reserve(ctx, cs, appPod("db-0", "db", "2"), "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	if use, _ = holds.On(named("n1")); use == nil || len(use.Consumers) != 1 || use.MilliCPU != 0 {
		t.Errorf("after Reserve: %+v, want pinned with the owner as its consumer and nothing left", use)
	}

	cs, _ = run(t, p, appPod("other", "batch", "1"), nodeInfo())
	if use, held := frameworkext.HoldsOf(cs).On(named("n1")); use != nil || len(held) != 2 {
		t.Errorf("a stranger: use %v, held %d, want none and both", use, len(held))
	}
	if cpu, _ := frameworkext.HoldsOf(cs).Held(named("n1")); cpu != 1000 {
		t.Errorf("a stranger: %dm held against it, want 1000m (plain; pinned is used up)", cpu)
	}
	if cpu, _ := frameworkext.HoldsOf(cs).Held(named("n2")); cpu != 0 {
		t.Errorf("a stranger on a node without reservations: %dm held", cpu)
	}
	// Strangers share one held list per node until its reservations change
	// (NodeNUMAResource keys its narrowed views by it).
	_, first := frameworkext.HoldsOf(cs).On(named("n1"))
	cs2, _ := run(t, p, appPod("other-2", "batch", "1"), nodeInfo())
	if _, second := frameworkext.HoldsOf(cs2).On(named("n1")); &second[0] != &first[0] {
		t.Error("two strangers got different held lists for the same reservations")
	}
	changed := withOwners(available("plain", "n1", "1"), "web")
	changed.ResourceVersion = "2"
	changed.Labels = map[string]string{"changed": "yes"}
	if err := p.cache.SetReservation(changed); err != nil {
		t.Fatal(err)
	}
	cs3, _ := run(t, p, appPod("other-3", "batch", "1"), nodeInfo())
	if _, third := frameworkext.HoldsOf(cs3).On(named("n1")); len(third) == 0 || &third[0] == &first[0] {
		t.Error("after a reservation changed, a stranger got the old held list")
	}

	// A malformed resource-status names the key and keeps what was pinned.
	bad := pinned.DeepCopy()
	bad.ResourceVersion = "11"
	bad.Annotations[extension.AnnotationResourceStatus] = `{"cpuset":"x"}`
	if err := p.cache.SetReservation(bad); err == nil || !strings.Contains(err.Error(), extension.AnnotationResourceStatus) {
		t.Fatalf("malformed resource-status: %v", err)
	}
	cs, _ = run(t, p, appPod("db-1", "db", "1"), nodeInfo())
	_, held = frameworkext.HoldsOf(cs).On(named("n1")) // pinned has nothing left for db-1
	if i := slices.IndexFunc(held, func(h frameworkext.Hold) bool { return h.Name == "pinned" }); i < 0 || held[i].CPUs.String() != "2-3" {
		t.Errorf("after a malformed update: %+v, want pinned still holding 2-3", held)
	}
}

// allocatePolicy Aligned: an owner takes what the reservation has left and
// the rest from the node, within what the node's other reservations leave.
func TestAlignedTakesTheRestFromTheNode(t *testing.T) {
	aligned := withOwners(available("aligned", "n1", "1"), "web")
	aligned.Spec.AllocatePolicy = schedulingv1alpha1.ReservationAllocatePolicyAligned
	other := withOwners(available("other", "n1", "1500m"), "db")
	p := testPlugin(aligned, other)
	ni := nodeInfo("1") // 3 CPUs free, 1.5 of them held for db

	if _, st := run(t, p, appPod("web-2", "web", "2"), ni); !st.IsSuccess() {
		t.Errorf("2 CPUs = 1 reserved + 1 of the 1.5 the node has beside db's: %v", st.AsError())
	}
	_, st := run(t, p, appPod("web-3", "web", "3"), ni)
	if st.IsSuccess() || !strings.Contains(st.Message(), "reservations hold 1500m of the node's 3000m free CPU, the pod needs 2000m") {
		t.Errorf("3 CPUs = 1 reserved + 2 more than the node has beside db's: %v", st.AsError())
	}
	cs, _ := run(t, p, appPod("web-2", "web", "2"), ni)
	if s := p.Reserve(context.Background(), cs, appPod("web-2", "web", "2"), "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	for _, v := range p.cache.OnNode("n1") {
		if v.Reservation.Name == "aligned" && v.Allocated.Cpu().String() != "1" {
			t.Errorf("aligned reservation allocated %s after a 2-CPU owner, want all of its 1 CPU", v.Allocated.Cpu())
		}
	}

	// Restricted, the same owner does not fit the reservation and is a
	// stranger beside both.
	restricted := withOwners(available("aligned", "n1", "1"), "web")
	_, st = run(t, testPlugin(restricted, other), appPod("web-2", "web", "2"), ni)
	if st.IsSuccess() || !strings.Contains(st.Message(), "reservations hold 2500m") {
		t.Errorf("Restricted: %v", st.AsError())
	}
	// The empty policy is Aligned, as Koordinator treats it.
	empty := withOwners(available("aligned", "n1", "1"), "web")
	empty.Spec.AllocatePolicy = schedulingv1alpha1.ReservationAllocatePolicyDefault
	if _, st := run(t, testPlugin(empty, other), appPod("web-2", "web", "2"), ni); !st.IsSuccess() {
		t.Errorf(`allocatePolicy "": %v, want Aligned's answer`, st.AsError())
	}
}

// A reservation holding an extended resource turns away an owner asking for
// more of it than it has left, naming the resource.
func TestExtendedResourceLeft(t *testing.T) {
	gpu := corev1.ResourceName("example.com/gpu")
	r := withOwners(available("r1", "n1", "1"), "web")
	r.Status.Allocatable[gpu] = resource.MustParse("1")
	p := testPlugin(r)
	pod := appPod("web-1", "web", "500m")
	pod.Spec.Containers[0].Resources.Requests[gpu] = resource.MustParse("2")
	pod.Annotations = map[string]string{extension.AnnotationReservationAffinity: `{"name":"r1"}`}
	_, st := run(t, p, pod, nodeInfo())
	if st.IsSuccess() || !strings.Contains(st.Message(), "reservation r1 has 1 example.com/gpu left, the pod needs 2") {
		t.Errorf("owner asking for 2 of 1 GPU left: %v", st)
	}
	pod.Spec.Containers[0].Resources.Requests[gpu] = resource.MustParse("1")
	if _, st := run(t, p, pod, nodeInfo()); !st.IsSuccess() {
		t.Errorf("owner asking for the GPU left: %v", st)
	}
}

// Filter and Score run for many nodes at once: every goroutine gets the same
// choice per node for an owner, the reservation it owns there (go test -race).
func TestOwnerMemoConcurrent(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	var rs []*schedulingv1alpha1.Reservation
	for _, n := range nodes {
		rs = append(rs, withOwners(available("r-"+n, n, "1"), "web"))
	}
	p := testPlugin(rs...)
	pod := appPod("web-1", "web", "500m")
	cs := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), cs, pod, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	s := p.getState(cs)
	seen := make([][]*nodeChoice, 8)
	var wg sync.WaitGroup
	for g := range seen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range nodes {
				seen[g] = append(seen[g], s.on(named(n)))
			}
		}()
	}
	wg.Wait()
	for i, n := range nodes {
		first := seen[0][i]
		if first == nil || first.c.use == nil || first.c.use.Reservation.Name != "r-"+n {
			t.Fatalf("%s: choice %+v, want r-%s", n, first, n)
		}
		for g := range seen {
			if seen[g][i] != first {
				t.Errorf("%s: goroutine %d got another choice than goroutine 0", n, g)
			}
		}
	}
}

// A node's reservations are matched once per distinct owners spec: a pod
// owning only the middle one of three, between two of another workload,
// still consumes it, and the others are held against it; and the other way
// round.
func TestMixedOwnersOnOneNode(t *testing.T) {
	p := testPlugin(withOwners(available("a-web", "n1", "1"), "web"), withOwners(available("b-db", "n1", "1"), "db"), withOwners(available("c-web", "n1", "1"), "web"))
	ni := nodeInfo("1") // 1 of 4 CPUs requested; the reservations hold the other 3
	for _, app := range []string{"web", "db"} {
		pod := appPod(app+"-1", app, "1")
		cs, st := run(t, p, pod, ni)
		if !st.IsSuccess() {
			t.Fatalf("%s owner: %v", app, st)
		}
		// Of three 1-CPU reservations the pod uses one: two are held against it.
		if milliCPU, _ := p.getState(cs).Held(named("n1")); milliCPU != 2000 {
			t.Errorf("held against the %s owner: %dm, want 2000m", app, milliCPU)
		}
		// Reservation names end with the app whose pods own them.
		if st := p.Reserve(context.Background(), cs, pod, "n1"); !st.IsSuccess() || p.getState(cs).reserved == nil || !strings.HasSuffix(p.getState(cs).reserved.Name, "-"+app) {
			t.Errorf("%s owner reserved %v (%v), want one of its own", app, p.getState(cs).reserved, st)
		}
		p.Unreserve(context.Background(), cs, pod, "n1")
	}
}

// named is a node object as the scheduler hands plugins one.
func named(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

// An owner's PreFilter finds it owns reservations; a
// reservation it owns that arrives after PreFilter, one it owned that goes,
// or one whose owners change to take it in, is still seen right by Filter
// and Score of that cycle.
func TestOwnedFollowsChanges(t *testing.T) {
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"), withOwners(available("r2", "n2", "2"), "batch"))
	pod := appPod("web-1", "web", "1")
	cs := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), cs, pod, nil); !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	s := p.getState(cs)
	if s.owned == nil {
		t.Fatal("PreFilter found the pod owns no reservation")
	}
	if n := s.on(named("n1")); n == nil || n.c.use == nil {
		t.Error("n1: the pod's reservation is not used")
	}
	if n := s.on(named("n2")); n == nil || n.c.use != nil {
		t.Error("n2: the pod uses another workload's reservation")
	}
	// After PreFilter: a reservation of the pod's on n3, and r1 gone.
	if err := p.cache.SetReservation(withOwners(available("r3", "n3", "2"), "web")); err != nil {
		t.Fatal(err)
	}
	if n := s.on(named("n3")); n == nil || n.c.use == nil {
		t.Error("n3: a reservation of the pod's that arrived after PreFilter is not used")
	}
	p.cache.DeleteReservation("uid-r1")
	if n := s.on(named("n1")); n != nil {
		t.Error("n1: the deleted reservation is still offered")
	}
	// PreFilter's answer for r2's owners was no; its new owners are the
	// pod's.
	r2 := withOwners(available("r2", "n2", "2"), "batch")
	r2.Spec.Owners = append(r2.Spec.Owners, withOwners(available("r2", "n2", "2"), "web").Spec.Owners...)
	if err := p.cache.SetReservation(r2); err != nil {
		t.Fatal(err)
	}
	if n := s.on(named("n2")); n == nil || n.c.use == nil {
		t.Error("n2: the reservation the pod was made an owner of after PreFilter is not used")
	}
}

// With PreFilter's answers, a node's reservations are chosen among as
// matching every spec chooses.
func TestChooseWithAnswers(t *testing.T) {
	tiered := withOwners(available("r3", "n1", "1"), "db")
	tiered.Spec.Owners = append(tiered.Spec.Owners, schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}})
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"), withOwners(available("r2", "n1", "500m"), "batch"), tiered,
		withOwners(available("r4", "n1", "3"), "web"))
	for _, pod := range []*corev1.Pod{appPod("a", "web", "1"), appPod("b", "batch", "1"), appPod("c", "db", "100m"), appPod("d", "none", "1")} {
		pod.Labels["tier"] = "front"
		cs := framework.NewCycleState()
		if _, st := p.PreFilter(context.Background(), cs, pod, nil); !st.IsSuccess() && !st.IsSkip() {
			t.Fatal(st.AsError())
		}
		s := p.getState(cs)
		views := p.cache.OnNode("n1")
		plain := choose(views, pod, s.req, s.reqMilliCPU, s.reqMemory, s.affinity, false, ownerMatcher{})
		answered := choose(views, pod, s.req, s.reqMilliCPU, s.reqMemory, s.affinity, false, ownerMatcher{known: s.owned})
		if !reflect.DeepEqual(plain, answered) {
			t.Errorf("%s: with PreFilter's answers %+v, matching every spec %+v", pod.Name, answered, plain)
		}
		if pod.Name != "d" && plain.use == nil {
			t.Errorf("%s uses none of its reservations: the test cannot tell", pod.Name)
		}
	}
}

// An owner that does not tolerate a reservation's taint does not consume
// it, even where it is the fullest fit; one that tolerates it, or any owner
// once the taint is gone, does.
func TestTaintedReservation(t *testing.T) {
	tainted := withOwners(available("tainted", "n1", "1"), "web")
	tainted.ResourceVersion = "1"
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	p := testPlugin(tainted, withOwners(available("open", "n1", "2"), "web"))
	reserved := func(pod *corev1.Pod) string {
		t.Helper()
		cs, st := run(t, p, pod, nodeInfo())
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		if st := p.Reserve(context.Background(), cs, pod, "n1"); !st.IsSuccess() {
			t.Fatal(st)
		}
		s := p.getState(cs)
		if s.reserved == nil {
			return ""
		}
		name := s.reserved.Name
		p.Unreserve(context.Background(), cs, pod, "n1") // the next pod sees both whole
		return name
	}
	if got := reserved(appPod("web-1", "web", "1")); got != "open" {
		t.Errorf("an owner without the toleration took %q, want open", got)
	}
	tolerating := appPod("web-2", "web", "1")
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	if got := reserved(tolerating); got != "tainted" {
		t.Errorf("an owner tolerating the taint took %q, want tainted (the fullest fit)", got)
	}
	untainted := tainted.DeepCopy()
	untainted.ResourceVersion, untainted.Spec.Taints = "2", nil
	p.cache.SetReservation(untainted)
	if got := reserved(appPod("web-3", "web", "1")); got != "tainted" {
		t.Errorf("after the taint was removed an owner took %q, want tainted (the fullest fit)", got)
	}
}

// An owner kept out because another used the reservation up is sent back
// to the active queue when that one leaves, once the plugin's cache has
// returned the share (not before, or it would be turned away again).
func TestDeletedOwnersShareReturnedThenRetried(t *testing.T) {
	p := testPlugin(withOwners(available("r1", "n1", "2"), "web"))
	h := p.handle.(*frameworkexttest.Handle)
	first := owner("web-1", "2", "r1")
	first.Labels = map[string]string{"app": "web"}
	p.cache.ObservePod(first)
	second := appPod("web-2", "web", "2")
	second.Annotations = map[string]string{extension.AnnotationReservationAffinity: `{"name":"r1"}`}
	if _, st := run(t, p, second, nodeInfo("2")); st.IsSuccess() {
		t.Fatal("an owner requiring r1 passed while another used it up")
	}
	if got := h.Activated(); len(got) != 0 {
		t.Fatalf("activated %v before anything changed", got)
	}
	p.onPodDelete(cache.DeletedFinalStateUnknown{Key: "prod/web-1", Obj: first})
	if got := h.Activated(); len(got) != 1 || got[0] != second.Namespace+"/"+second.Name {
		t.Errorf("activated %v after the first owner left, want the second", got)
	}
	if _, st := run(t, p, second, nodeInfo()); !st.IsSuccess() {
		t.Errorf("re-queued after the first owner left, still: %v", st)
	}
}
