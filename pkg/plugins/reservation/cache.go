// The cache is the plugin's state: what every Available reservation holds
// and who consumes it, safe for the scheduling cycle, the binding goroutines
// and the informer handlers at once. summary.go is how Filter reads it.

package reservation

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/utils/cpuset"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
)

// Cache is every Available reservation by node, with what its owners use.
// Consumption comes from two places: pods the API server shows with a
// reservation-allocated annotation (the truth, so a restarted scheduler
// rebuilds it) and pods this scheduler assumed in Reserve and has not seen
// bound yet.
type Cache struct {
	mu     sync.RWMutex
	byUID  map[types.UID]*entry
	byNode map[string]map[types.UID]*entry
	// podRes maps a consuming pod to the reservation it consumes, so a pod
	// event can be handled without knowing the reservation.
	podRes map[types.UID]types.UID
	// waiting holds live pods whose annotation names a reservation not
	// cached (yet): informers deliver pods and reservations in any order.
	waiting map[types.UID]*corev1.Pod
	// phase is the furthest phase seen of each reservation, also of those
	// not held (pending, ended); gone marks deleted ones for a while. A
	// reservation's phase only moves forward (Pending, Available, then
	// Succeeded or Failed), so an event that would move it back is a late
	// one, older than what Bind itself recorded, and is dropped.
	phase map[types.UID]int
	gone  map[types.UID]time.Time
	// summaries is each node's reservations as Filter and Score read them
	// (node name → *nodeSummary), rebuilt whenever one of them changes:
	// reads happen for every pod on every node from many goroutines, changes
	// when a reservation or one of its owners does. Under a lock of its own,
	// held only to read or replace an entry; a plain map, not a sync.Map,
	// for the cache misses a lookup costs (see loadaware's usageCache).
	sumMu     sync.RWMutex
	summaries map[string]*nodeSummary
	// ownerKeys indexes the cached reservations by owner key
	// (reservationutil.Owners.Keys), and keyless holds those with an owner entry
	// without one: a pod offering none of the keys owns no reservation, and
	// is settled on every node without matching owners there; a pod that
	// does finds the reservations it may own without matching every one
	// (Owned).
	ownerKeys map[string]map[*entry]struct{}
	keyless   map[*entry]struct{}
	// most bounds the nodes' stranger totals from above and says whether
	// any reservation pins CPUs (see frameworkext.Holds.Most), updated with
	// the summaries (noteSummaryLocked).
	most atomic.Pointer[mostHeld]
	// pinnedNodes counts the summaries holding a pinned reservation; loose
	// the totals that dropped since the bound was last worked out over
	// every node (while it is 0 the bound is exact); scanned the summaries
	// read doing so (tests bound it).
	pinnedNodes, loose, scanned int
}

type entry struct {
	r           *schedulingv1alpha1.Reservation
	allocatable corev1.ResourceList
	// uses is each consuming pod's allocation; assumed marks the ones only
	// this scheduler knows about.
	uses    map[types.UID]corev1.ResourceList
	assumed map[types.UID]bool
	// view is what the node's summary (and OnNode) hands out, recomputed on
	// every change (changes are rare, reads happen for every pod on every
	// node).
	view   View
	owners reservationutil.Owners
	// keys and keyless are what owners added to the cache's ownerKeys.
	keys    []string
	keyless bool
	// cpus and numaMemory are what NodeNUMAResource pinned for it.
	cpus       cpuset.CPUSet
	numaMemory map[int]int64
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	c := &Cache{byUID: map[types.UID]*entry{}, byNode: map[string]map[types.UID]*entry{}, podRes: map[types.UID]types.UID{}, waiting: map[types.UID]*corev1.Pod{},
		phase: map[types.UID]int{}, summaries: map[string]*nodeSummary{}, gone: map[types.UID]time.Time{}, ownerKeys: map[string]map[*entry]struct{}{}, keyless: map[*entry]struct{}{}}
	c.most.Store(&mostHeld{})
	return c
}

// SetReservation adds or updates a reservation. One that is not Available
// (pending, succeeded, failed, or without a node) holds nothing and is
// dropped, and so are the uses recorded against it. A malformed
// resource-status annotation is returned as an error; the reservation is
// still recorded, with the CPUs it pinned before (none if it is new).
func (c *Cache) SetReservation(r *schedulingv1alpha1.Reservation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Events arrive from the informer and from Bind's own write: an
	// informer event from before Bind's write would move the phase back.
	rank := phaseRank[r.Status.Phase]
	if _, deleted := c.gone[r.UID]; deleted || rank < c.phase[r.UID] {
		return nil
	}
	c.phase[r.UID] = rank
	old := c.byUID[r.UID]
	if !reservationutil.IsAvailable(r) {
		c.dropLocked(r.UID)
		return nil
	}
	if old != nil && old.r.Status.NodeName != r.Status.NodeName {
		delete(c.byNode[old.r.Status.NodeName], r.UID)
		c.summarizeLocked(old.r.Status.NodeName)
	}
	e := old
	if e == nil {
		e = &entry{uses: map[types.UID]corev1.ResourceList{}, assumed: map[types.UID]bool{}}
		c.byUID[r.UID] = e
	}
	e.r = r
	c.unkeyLocked(e)
	e.owners = reservationutil.CompileOwners(r)
	e.keys, e.keyless = e.owners.Keys()
	for _, k := range e.keys {
		if c.ownerKeys[k] == nil {
			c.ownerKeys[k] = map[*entry]struct{}{}
		}
		c.ownerKeys[k][e] = struct{}{}
	}
	if e.keyless {
		c.keyless[e] = struct{}{}
	}
	cpus, numaMemory, pinErr := reservationutil.Pinning(r)
	if pinErr == nil {
		e.cpus, e.numaMemory = cpus, numaMemory
	} else if old == nil {
		e.cpus = cpuset.New()
	}
	e.allocatable = r.Status.Allocatable
	if len(e.allocatable) == 0 {
		e.allocatable = reservationutil.Requests(r)
	}
	node := r.Status.NodeName
	if c.byNode[node] == nil {
		c.byNode[node] = map[types.UID]*entry{}
	}
	c.byNode[node][r.UID] = e
	for uid, pod := range c.waiting {
		if reservationutil.Consumes(pod, r) {
			e.uses[uid] = reservationutil.Allocation(r, pod)
			c.podRes[uid] = r.UID
			delete(c.waiting, uid)
		}
	}
	c.refreshLocked(e)
	return pinErr
}

// phaseRank orders a reservation's phases as they follow one another.
var phaseRank = map[schedulingv1alpha1.ReservationPhase]int{
	"": 0, schedulingv1alpha1.ReservationPending: 0, schedulingv1alpha1.ReservationAvailable: 1, schedulingv1alpha1.ReservationWaiting: 1,
	schedulingv1alpha1.ReservationSucceeded: 2, schedulingv1alpha1.ReservationFailed: 2,
}

// DeleteReservation forgets a reservation.
func (c *Cache) DeleteReservation(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(uid)
	delete(c.phase, uid)
	now := time.Now()
	c.gone[uid] = now
	for u, at := range c.gone {
		if now.Sub(at) > tombstoneTTL {
			delete(c.gone, u)
		}
	}
}

// tombstoneTTL outlasts any informer's delay in delivering an old event.
const tombstoneTTL = 10 * time.Minute

func (c *Cache) dropLocked(uid types.UID) {
	e := c.byUID[uid]
	if e == nil {
		return
	}
	for pod := range e.uses {
		delete(c.podRes, pod)
	}
	c.unkeyLocked(e)
	delete(c.byUID, uid)
	if m := c.byNode[e.r.Status.NodeName]; m != nil {
		delete(m, uid)
		if len(m) == 0 {
			delete(c.byNode, e.r.Status.NodeName)
		}
	}
	c.summarizeLocked(e.r.Status.NodeName)
}

// ObservePod records what the API server says about a pod: a bound, live
// pod whose reservation-allocated annotation names a cached reservation
// consumes it (replacing this scheduler's assumption); a pod that finished
// consumes nothing. A view without the annotation, or of a pod not bound
// yet, leaves an assumption alone: the informer can show a pod after Reserve
// and before PreBind writes the annotation, or before the binding lands. An
// unbound pod's annotation alone is no use: its binding may have failed.
// It says whether a reservation's consumers changed.
func (c *Cache) ObservePod(pod *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	finished := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	// Parsed once, and the reservation found by UID: not once per cached
	// reservation, under this lock, for every pod event.
	a := reservationutil.ClaimOf(pod)
	claims := a != nil
	var target *entry
	if claims {
		if e := c.byUID[a.UID]; e != nil && reservationutil.Names(a, e.r) {
			target = e
		} else if a.UID == "" {
			for _, e := range c.byUID {
				if reservationutil.Names(a, e.r) {
					target = e
					break
				}
			}
		}
	}
	if target != nil && !target.owners.Match(pod) {
		// Anyone may write the annotation on a pod they create; only a pod
		// spec.owners admits consumes the reservation.
		target = nil
	}
	delete(c.waiting, pod.UID)
	if target == nil {
		changed := false
		if finished || !c.assumedLocked(pod.UID) {
			changed = c.releaseLocked(pod.UID)
		}
		if claims {
			c.waiting[pod.UID] = pod
		}
		return changed
	}
	want := reservationutil.Allocation(target.r, pod)
	if c.podRes[pod.UID] == target.r.UID && !target.assumed[pod.UID] && equalLists(target.uses[pod.UID], want) {
		return false // a status update of a consumer already counted
	}
	c.releaseLocked(pod.UID)
	target.uses[pod.UID] = want
	c.podRes[pod.UID] = target.r.UID
	c.refreshLocked(target)
	return true
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if o, ok := b[name]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

func (c *Cache) assumedLocked(pod types.UID) bool {
	r, ok := c.podRes[pod]
	if !ok {
		return false
	}
	e := c.byUID[r]
	return e != nil && e.assumed[pod]
}

// ForgetPod returns a deleted pod's share, and says whether it had one.
func (c *Cache) ForgetPod(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.releaseLocked(uid)
}

func (c *Cache) releaseLocked(pod types.UID) bool {
	delete(c.waiting, pod)
	r, ok := c.podRes[pod]
	if !ok {
		return false
	}
	if e := c.byUID[r]; e != nil {
		delete(e.uses, pod)
		delete(e.assumed, pod)
		c.refreshLocked(e)
	}
	delete(c.podRes, pod)
	return true
}

// Assume makes pod a consumer of reservation uid if what is left of it
// covers the pod's allocation; the check and the record are one step, so
// two pods reserved at once can never over-use a reservation.
func (c *Cache) Assume(uid types.UID, pod *corev1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byUID[uid]
	if e == nil {
		return fmt.Errorf("reservation %s is no longer available", uid)
	}
	want := reservationutil.Allocation(e.r, pod)
	left := reservationutil.Remaining(e.allocatable, e.allocatedLocked(pod.UID))
	aligned := e.r.Spec.AllocatePolicy.IsAligned()
	for name, q := range want {
		if l := left[name]; q.Cmp(l) > 0 {
			if !aligned {
				return fmt.Errorf("reservation %s has %s %s left, the pod needs %s", e.r.Name, l.String(), name, q.String())
			}
			want[name] = l // the rest comes from the node
		}
	}
	c.releaseLocked(pod.UID)
	e.uses[pod.UID] = want
	e.assumed[pod.UID] = true
	c.podRes[pod.UID] = uid
	c.refreshLocked(e)
	return nil
}

// Unassume undoes Assume (Unreserve: the pod did not bind).
func (c *Cache) Unassume(pod types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.podRes[pod]; ok {
		if e := c.byUID[r]; e != nil && e.assumed[pod] {
			c.releaseLocked(pod)
		}
	}
}

// allocatedLocked sums the uses of e, except by the pod skip.
func (e *entry) allocatedLocked(skip types.UID) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for pod, use := range e.uses {
		if pod == skip {
			continue
		}
		for name, q := range use {
			s := sum[name]
			s.Add(q)
			sum[name] = s
		}
	}
	return sum
}
