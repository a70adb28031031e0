package reservation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

func cpu(v string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
}

func available(name, node, cpus string) *schedulingv1alpha1.Reservation {
	return &schedulingv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: schedulingv1alpha1.ReservationSpec{
			// Its owners' namespace (owners by label are held to it).
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Namespace: "prod"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(cpus)}}}}},
			// Every pod may own it (an empty selector).
			Owners: []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{}}},
			// Owners stay within it: most tests count what it holds exactly.
			AllocatePolicy: schedulingv1alpha1.ReservationAllocatePolicyRestricted,
		},
		Status: schedulingv1alpha1.ReservationStatus{Phase: schedulingv1alpha1.ReservationAvailable, NodeName: node, Allocatable: cpu(cpus)},
	}
}

func owner(name, cpus, reservation string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, UID: types.UID("pod-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(cpus)}}}}}
	if reservation != "" {
		v, _ := (&extension.ReservationAllocated{Name: reservation, UID: types.UID("uid-" + reservation)}).Marshal()
		p.Annotations = map[string]string{extension.AnnotationReservationAllocated: v}
		p.Spec.NodeName = "n1" // bound: the annotation is the truth only then
	}
	return p
}

// A pod whose binding failed after PreBind wrote its annotation is seen
// unbound with it: that claims nothing, and its assumption is undone.
func TestUnboundAnnotationClaimsNothing(t *testing.T) {
	c := NewCache()
	r := available("r1", "n1", "2")
	c.SetReservation(r)
	doomed := owner("doomed", "2", "r1")
	doomed.Spec.NodeName = ""
	if err := c.Assume(r.UID, doomed); err != nil {
		t.Fatal(err)
	}
	c.ObservePod(doomed) // the informer shows the annotation, no node
	if got := allocatedCPU(t, c, "n1"); got != "2" {
		t.Fatalf("assumed share while the binding is in flight: %s, want 2", got)
	}
	c.Unassume(doomed.UID) // the binding failed
	c.ObservePod(doomed)   // and the informer shows it again, still unbound
	if got := allocatedCPU(t, c, "n1"); got != "0" {
		t.Errorf("after a failed binding the reservation has %s CPU allocated, want 0", got)
	}
}

func allocatedCPU(t *testing.T, c *Cache, node string) string {
	t.Helper()
	vs := c.OnNode(node)
	if len(vs) != 1 {
		t.Fatalf("node %s has %d reservations, want 1", node, len(vs))
	}
	q := vs[0].Allocated[corev1.ResourceCPU]
	return q.String()
}

func TestAssumeAccounting(t *testing.T) {
	c := NewCache()
	r := available("r1", "n1", "4")
	c.SetReservation(r)
	if err := c.Assume(r.UID, owner("a", "3", "")); err != nil {
		t.Fatal(err)
	}
	err := c.Assume(r.UID, owner("b", "2", ""))
	if err == nil || !strings.Contains(err.Error(), "reservation r1 has 1 cpu left, the pod needs 2") {
		t.Errorf("over-use: %v", err)
	}
	// A bind failure gives the share back.
	c.Unassume("pod-a")
	if got := allocatedCPU(t, c, "n1"); got != "0" {
		t.Errorf("after Unassume allocated %s, want 0", got)
	}
	if err := c.Assume(r.UID, owner("b", "2", "")); err != nil {
		t.Errorf("the returned share must be usable: %v", err)
	}
	// The informer shows b before PreBind annotated it: still assumed.
	c.ObservePod(owner("b", "2", ""))
	if got := allocatedCPU(t, c, "n1"); got != "2" {
		t.Errorf("an assumed pod seen without its annotation lost its share: allocated %s", got)
	}
	// Then bound, annotated: observed, no longer only assumed; Unassume no longer applies.
	c.ObservePod(owner("b", "2", "r1"))
	c.Unassume("pod-b")
	if got := allocatedCPU(t, c, "n1"); got != "2" {
		t.Errorf("Unassume of a bound pod released its share: allocated %s", got)
	}
	// The pod finishes, or is deleted: its share returns.
	done := owner("b", "2", "r1")
	done.Status.Phase = corev1.PodSucceeded
	c.ObservePod(done)
	if got := allocatedCPU(t, c, "n1"); got != "0" {
		t.Errorf("a finished pod still holds %s", got)
	}
	c.ObservePod(owner("d", "1", "r1"))
	c.ForgetPod("pod-d")
	if got := allocatedCPU(t, c, "n1"); got != "0" {
		t.Errorf("a deleted pod still holds %s", got)
	}
	// Consumed (allocateOnce) or failed reservations hold nothing.
	used := r.DeepCopy()
	used.Status.Phase = schedulingv1alpha1.ReservationSucceeded
	c.SetReservation(used)
	if vs := c.OnNode("n1"); len(vs) != 0 {
		t.Errorf("a Succeeded reservation still listed: %v", vs)
	}
	if err := c.Assume(r.UID, owner("e", "1", "")); err == nil {
		t.Error("assumed into a reservation that is gone")
	}
}

// A restarted scheduler sees pods and reservations in any order.
func TestRebuildInAnyOrder(t *testing.T) {
	c := NewCache()
	c.ObservePod(owner("a", "1", "r1"))
	c.ObservePod(owner("b", "2", "r1"))
	c.ObservePod(owner("x", "1", "")) // no reservation at all
	c.SetReservation(available("r1", "n1", "4"))
	if got := allocatedCPU(t, c, "n1"); got != "3" {
		t.Errorf("rebuilt allocated %s, want 3", got)
	}
	if err := c.Assume("uid-r1", owner("c", "2", "")); err == nil {
		t.Error("the rebuilt reservation has 1 CPU left but took 2")
	}
	// Moving node (a re-scheduled reservation) keeps one entry.
	moved := available("r1", "n2", "4")
	c.SetReservation(moved)
	if len(c.OnNode("n1")) != 0 || len(c.OnNode("n2")) != 1 {
		t.Errorf("after the move: n1 %v, n2 %v", c.OnNode("n1"), c.OnNode("n2"))
	}
}

func TestConcurrentAssumeNeverOverUses(t *testing.T) {
	c := NewCache()
	c.SetReservation(available("r1", "n1", "8"))
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Assume("uid-r1", owner(fmt.Sprintf("p%d", i), "1", "")) == nil {
				ok.Add(1)
			}
			_ = c.OnNode("n1")
		}()
	}
	wg.Wait()
	if ok.Load() != 8 {
		t.Errorf("%d pods of 1 CPU assumed into an 8-CPU reservation", ok.Load())
	}
}

// Events of one reservation arrive from two informers and from Bind, in any order.
func TestNoStepBack(t *testing.T) {
	c := NewCache()
	avail := available("r1", "n1", "4")
	avail.ResourceVersion = "20"
	c.SetReservation(avail)
	stale := avail.DeepCopy()
	stale.ResourceVersion = "19"
	stale.Status = schedulingv1alpha1.ReservationStatus{Phase: schedulingv1alpha1.ReservationPending}
	c.SetReservation(stale)
	if len(c.OnNode("n1")) != 1 {
		t.Error("an older Pending version dropped an Available reservation")
	}
	done := avail.DeepCopy()
	done.ResourceVersion = "21"
	done.Status.Phase = schedulingv1alpha1.ReservationSucceeded
	c.SetReservation(done)
	c.SetReservation(avail) // version 20 again, late
	if len(c.OnNode("n1")) != 0 {
		t.Error("a late Available version brought back a Succeeded reservation")
	}
	c.DeleteReservation(avail.UID)
	c.SetReservation(avail)
	if len(c.OnNode("n1")) != 0 {
		t.Error("a late event brought back a deleted reservation")
	}
}

// Owned rules pods out by the owners' keys (nil: the pod owns nothing, and
// is not matched), and follows reservations as they come, change and go; an
// owner entry without a key lets every pod in.
func TestOwnedRulesOutByKeys(t *testing.T) {
	c := NewCache()
	mayOwn := func(pod *corev1.Pod) bool { return c.Owned(pod) != nil }
	web, batch := appPod("web-1", "web", "1"), appPod("batch-1", "batch", "1")
	if mayOwn(web) {
		t.Error("no reservations, yet web may own one")
	}
	r := withOwners(available("r1", "n1", "2"), "web")
	r.ResourceVersion = "1"
	if err := c.SetReservation(r); err != nil {
		t.Fatal(err)
	}
	if !mayOwn(web) || mayOwn(batch) {
		t.Errorf("owners app=web: may own: web %v, batch %v", mayOwn(web), mayOwn(batch))
	}
	// The owners change: the old key goes.
	r = withOwners(r.DeepCopy(), "batch")
	r.ResourceVersion = "2"
	if err := c.SetReservation(r); err != nil {
		t.Fatal(err)
	}
	if mayOwn(web) || !mayOwn(batch) {
		t.Errorf("owners app=batch: may own: web %v, batch %v", mayOwn(web), mayOwn(batch))
	}
	// A selector of expressions cannot be keyed: everyone may own.
	any := available("r2", "n2", "1")
	any.Spec.Owners = []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}}
	if err := c.SetReservation(any); err != nil {
		t.Fatal(err)
	}
	if !mayOwn(web) {
		t.Error("a keyless owner entry must let every pod through")
	}
	c.DeleteReservation(any.UID)
	c.DeleteReservation(r.UID)
	if mayOwn(web) || mayOwn(batch) {
		t.Error("all reservations deleted, yet a pod may own one")
	}
	// Its node's summary went with it.
	if v := c.OnNode("n1"); v != nil {
		t.Errorf("n1 still lists %d reservations", len(v))
	}
}

// The bound other plugins use to skip per-node look-ups covers the node
// holding the most, and knows when a reservation pins CPUs.
func TestMostHeld(t *testing.T) {
	c := NewCache()
	s := &podState{cache: c}
	if m, mem, pinned := s.Most(); m != 0 || mem != 0 || pinned {
		t.Errorf("empty cache: Most %d %d %v", m, mem, pinned)
	}
	small, big := available("small", "n1", "1"), available("big", "n2", "3")
	for _, r := range []*schedulingv1alpha1.Reservation{small, big} {
		if err := c.SetReservation(r); err != nil {
			t.Fatal(err)
		}
	}
	if m, _, pinned := s.Most(); m != 3000 || pinned {
		t.Errorf("Most %dm pinned %v, want 3000m (n2) and no pinning", m, pinned)
	}
	pinnedR := available("pinned", "n3", "1")
	pinnedR.Annotations = map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0"}`}
	if err := c.SetReservation(pinnedR); err != nil {
		t.Fatal(err)
	}
	if _, _, pinned := s.Most(); !pinned {
		t.Error("a reservation pins CPU 0, yet Most says none does")
	}
	c.DeleteReservation(big.UID)
	c.DeleteReservation(pinnedR.UID)
	if m, _, pinned := s.Most(); m != 1000 || pinned {
		t.Errorf("after deleting big and pinned: Most %dm pinned %v, want 1000m, none pinned", m, pinned)
	}
}

// Through any sequence of reservations coming, shrinking and going on many
// nodes, Most stays an upper bound of every node's total, says exactly
// whether one pins CPUs, is exact whenever no total dropped since it was
// last worked out, and is worked out over every node only once per tenth
// of the nodes' drops, not on every change.
func TestMostStaysABound(t *testing.T) {
	c := NewCache()
	s := &podState{cache: c}
	rng := rand.New(rand.NewPCG(1, 2))
	const nodes, steps = 200, 3000
	live := map[string]*schedulingv1alpha1.Reservation{}
	var names []string
	version := 0
	set := func(r *schedulingv1alpha1.Reservation) {
		version++
		r.ResourceVersion = strconv.Itoa(version)
		if err := c.SetReservation(r); err != nil {
			t.Fatal(err)
		}
		live[r.Name] = r
	}
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(10); {
		case op < 5 || len(names) == 0:
			r := available(fmt.Sprintf("r%d", step), fmt.Sprintf("n%d", rng.IntN(nodes)), strconv.Itoa(1+rng.IntN(4)))
			if rng.IntN(5) == 0 {
				r.Annotations = map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0"}`}
			}
			set(r)
			names = append(names, r.Name)
		case op < 8:
			i := rng.IntN(len(names))
			c.DeleteReservation(live[names[i]].UID)
			delete(live, names[i])
			names = slices.Delete(names, i, i+1)
		default:
			r := live[names[rng.IntN(len(names))]].DeepCopy()
			r.Status.Allocatable = cpu("1")
			set(r)
		}
		perNode := map[string]int64{}
		pinned := false
		for _, r := range live {
			perNode[r.Status.NodeName] += r.Status.Allocatable.Cpu().MilliValue()
			pinned = pinned || r.Annotations != nil
		}
		var most int64
		for _, v := range perNode {
			most = max(most, v)
		}
		m, _, p := s.Most()
		if m < most || p != pinned {
			t.Fatalf("step %d: Most %dm pinned %v; a node holds %dm, pinned %v", step, m, p, most, pinned)
		}
		if c.loose > len(c.byNode)/10 {
			t.Fatalf("step %d: %d totals dropped since the bound was last worked out, over a tenth of %d nodes", step, c.loose, len(c.byNode))
		}
		if c.loose == 0 && m != most {
			t.Fatalf("step %d: no total dropped since the last pass, yet Most is %dm, the largest %dm", step, m, most)
		}
	}
	if limit := 10*steps + nodes; c.scanned > limit {
		t.Errorf("%d changes read %d summaries working out the bound, want at most %d", steps, c.scanned, limit)
	}
}

// Owned answers as matching every reservation does, and is nil exactly when
// the pod owns none: by label (keyed), by a selector of expressions (keyless),
// and several of one owner on a node or spread over nodes.
func TestOwnedAgreesWithMatching(t *testing.T) {
	c := NewCache()
	apps := []string{"web", "batch", "db"}
	for i := range 30 {
		r := available(fmt.Sprintf("r%d", i), fmt.Sprintf("n%d", i%12), "1")
		switch i % 4 {
		case 3:
			r.Spec.Owners = []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{apps[i%3]}}}}}}
		default:
			withOwners(r, apps[i%3])
		}
		if err := c.SetReservation(r); err != nil {
			t.Fatal(err)
		}
	}
	pods := []*corev1.Pod{appPod("a", "web", "1"), appPod("b", "db", "1"), appPod("c", "none", "1")}
	tiered := appPod("d", "batch", "1")
	tiered.Labels["tier"] = "web"
	pods = append(pods, tiered)
	for _, pod := range pods {
		owned := c.Owned(pod)
		o := owned
		if o == nil {
			o = &ownership{}
		}
		// Every answer is right, and every spec the pod matches has one.
		for _, a := range o.answers {
			if a.matched != a.owners.Match(pod) {
				t.Errorf("%s: answer %v for a spec it matches %v", pod.Name, a.matched, !a.matched)
			}
		}
		for _, e := range c.byUID {
			if _, known := o.answer(&e.owners); e.owners.Match(pod) && !known {
				t.Errorf("%s matches %s's owners, which Owned has no answer for", pod.Name, e.r.Name)
			}
		}
		found := 0
		for i := range 12 {
			sum := c.summary(fmt.Sprintf("n%d", i))
			if sum == nil {
				continue
			}
			if want, got := sum.owns(pod, ownerMatcher{}), sum.owns(pod, ownerMatcher{known: owned}); got != want {
				t.Errorf("%s on n%d: with Owned's answers %v, matching %v", pod.Name, i, got, want)
			}
			if sum.owns(pod, ownerMatcher{}) {
				found++
			}
		}
		if (found > 0) != (owned != nil) {
			t.Errorf("%s: owns reservations on %d nodes, Owned %v", pod.Name, found, owned)
		}
		if pod.Name == "a" && found == 0 {
			t.Fatal("the web pod owns nothing: the test cannot tell")
		}
	}
}
