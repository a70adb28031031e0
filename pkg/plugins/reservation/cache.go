// Package reservation is koord-scheduler's Reservation plugin; see README.md.
// The cache is its state: what every Available reservation holds and who
// consumes it, safe for the scheduling cycle, the binding goroutines and the
// informer handlers at once.
package reservation

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/utils/cpuset"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
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
	// reads happen for every pod on every node from many goroutines without
	// the lock, changes when a reservation or one of its owners does.
	summaries sync.Map
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
	// changes counts the summaries published: what Owned answered holds
	// while it stays the same. Filter reads it per node; writers change it
	// with the summaries, under the lock.
	changes atomic.Uint64
	// pinnedNodes counts the summaries holding a pinned reservation; loose
	// the totals that dropped since the bound was last worked out over
	// every node (while it is 0 the bound is exact); scanned the summaries
	// read doing so (tests bound it).
	pinnedNodes, loose, scanned int
}

type mostHeld struct {
	milliCPU, memory int64
	pinned           bool
}

// nodeSummary is one node's reservations, by name, and how a pod that owns
// none of them relates to them (most pods, and placeholders): the same for
// all such pods, so made once per change instead of once per pod and node.
// Read-only once published.
type nodeSummary struct {
	// heldMilliCPU and heldMemory are stranger's totals, here too so that
	// LoadAwareScheduling's Held for most pods reads this object only.
	heldMilliCPU, heldMemory int64
	// pinned is set when one of the reservations pins CPUs or NUMA memory.
	pinned   bool
	views    []View
	stranger *nodeChoice
}

// owns says whether pod is an owner of any of the node's reservations.
func (n *nodeSummary) owns(pod *corev1.Pod, m ownerMatcher) bool {
	for i := range n.views {
		if m.match(&n.views[i].owners, pod) {
			return true
		}
	}
	return false
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

// refreshLocked recomputes e's view and its node's summary after a change.
func (c *Cache) refreshLocked(e *entry) {
	e.refresh()
	c.summarizeLocked(e.r.Status.NodeName)
}

// summarizeLocked rebuilds node's summary from its entries' views.
func (c *Cache) summarizeLocked(node string) {
	entries := c.byNode[node]
	if len(entries) == 0 {
		if old := c.summary(node); old != nil {
			c.changes.Add(1)
			c.summaries.Delete(node)
			c.noteSummaryLocked(old, nil)
		}
		return
	}
	views := make([]View, 0, len(entries))
	for _, e := range entries {
		views = append(views, e.view)
	}
	slices.SortFunc(views, func(a, b View) int { return strings.Compare(a.Reservation.Name, b.Reservation.Name) })
	stranger := &nodeChoice{views: views}
	for i := range views {
		stranger.c.hold(&views[i])
	}
	stranger.once.Do(func() { stranger.use, stranger.held = holdsOf(views, nil) })
	sum := &nodeSummary{views: views, stranger: stranger, heldMilliCPU: stranger.c.heldMilliCPU, heldMemory: stranger.c.heldMemory}
	for i := range views {
		sum.pinned = sum.pinned || views[i].hold.Pinned()
	}
	old := c.summary(node)
	// Counted before publication: a reader that sees the new summary sees
	// the new count.
	c.changes.Add(1)
	c.summaries.Store(node, sum)
	c.noteSummaryLocked(old, sum)
}

// noteSummaryLocked updates most for a node whose summary went from old to
// cur (either nil: none). A total above the bound raises it at once and
// pinning is counted, but a total that drops only counts towards working
// the bound out again over every node, which happens once as many totals as
// a tenth of the nodes have dropped: Most promises an upper bound, and
// working it out on every change made each change (each owner that takes
// its reservation is one) cost a pass over every node holding one.
func (c *Cache) noteSummaryLocked(old, cur *nodeSummary) {
	m := *c.most.Load()
	if old != nil && old.pinned {
		c.pinnedNodes--
	}
	if cur != nil {
		if cur.pinned {
			c.pinnedNodes++
		}
		m.milliCPU = max(m.milliCPU, cur.heldMilliCPU)
		m.memory = max(m.memory, cur.heldMemory)
	}
	m.pinned = c.pinnedNodes > 0
	if old != nil && (cur == nil || cur.heldMilliCPU < old.heldMilliCPU || cur.heldMemory < old.heldMemory) {
		if c.loose++; c.loose > len(c.byNode)/10 {
			m.milliCPU, m.memory = 0, 0
			for node := range c.byNode {
				if sum := c.summary(node); sum != nil {
					m.milliCPU = max(m.milliCPU, sum.heldMilliCPU)
					m.memory = max(m.memory, sum.heldMemory)
					c.scanned++
				}
			}
			c.loose = 0
		}
	}
	c.most.Store(&m)
}

// refresh recomputes e's view after a change.
func (e *entry) refresh() {
	alloc := e.allocatedLocked("")
	rem := reservationutil.Remaining(e.allocatable, alloc)
	_, holdsCPU := e.allocatable[corev1.ResourceCPU]
	_, holdsMemory := e.allocatable[corev1.ResourceMemory]
	holdsOthers := false
	for name := range e.allocatable {
		holdsOthers = holdsOthers || (name != corev1.ResourceCPU && name != corev1.ResourceMemory)
	}
	e.view = View{Reservation: e.r, Allocatable: e.allocatable, Allocated: alloc, Remaining: rem, Owners: len(e.uses), owners: e.owners,
		remMilliCPU: rem.Cpu().MilliValue(), remMemory: rem.Memory().Value(), holdsCPU: holdsCPU, holdsMemory: holdsMemory,
		holdsOthers: holdsOthers, open: reservationutil.OpenToOwners(e.r)}
	consumers := make([]types.UID, 0, len(e.uses))
	for pod := range e.uses {
		consumers = append(consumers, pod)
	}
	e.view.hold = &frameworkext.Hold{Name: e.r.Name, UID: e.r.UID, MilliCPU: e.view.remMilliCPU, Memory: e.view.remMemory,
		CPUs: e.cpus, NUMAMemory: e.numaMemory, Consumers: consumers}
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	c := &Cache{byUID: map[types.UID]*entry{}, byNode: map[string]map[types.UID]*entry{}, podRes: map[types.UID]types.UID{}, waiting: map[types.UID]*corev1.Pod{},
		phase: map[types.UID]int{}, gone: map[types.UID]time.Time{}, ownerKeys: map[string]map[*entry]struct{}{}, keyless: map[*entry]struct{}{}}
	c.most.Store(&mostHeld{})
	return c
}

// View is a reservation with what is left of it, as of one call.
type View struct {
	Reservation *schedulingv1alpha1.Reservation
	Allocatable corev1.ResourceList
	Allocated   corev1.ResourceList
	Remaining   corev1.ResourceList
	Owners      int
	owners      reservationutil.Owners
	// CPU and memory, what Filter reads for every pod, as integers.
	remMilliCPU, remMemory int64
	holdsCPU, holdsMemory  bool
	// holdsOthers says whether it holds anything but CPU and memory.
	holdsOthers bool
	// open: an owner without reservation-affinity may consume it
	// (reservationutil.OpenToOwners), known without reading the reservation.
	open bool
	// hold is the view as other plugins see it (a pointer: views are
	// copied for every pod on every node).
	hold *frameworkext.Hold
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
	"": 0, schedulingv1alpha1.ReservationPending: 0, schedulingv1alpha1.ReservationAvailable: 1,
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
	aligned := e.r.Spec.AllocatePolicy == schedulingv1alpha1.ReservationAllocatePolicyAligned
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

// unkeyLocked takes e's owner keys out of the counts.
func (c *Cache) unkeyLocked(e *entry) {
	for _, k := range e.keys {
		if delete(c.ownerKeys[k], e); len(c.ownerKeys[k]) == 0 {
			delete(c.ownerKeys, k)
		}
	}
	delete(c.keyless, e)
	e.keys, e.keyless = nil, false
}

// ownership is what Cache.Owned found for one pod.
type ownership struct {
	// nodes are the summaries of the nodes where the pod owns a reservation.
	nodes []*nodeSummary
	// answers are the owners specs the pod was matched against, with the
	// result. Matching depends on the spec and the pod only, so an answer
	// holds for good.
	answers []ownerAnswer
	// at is the count of changes the summaries were read at. While the cache
	// is still there, a node's summary is in nodes exactly when
	// sum.owns(pod), and a spec missing from answers is one no key of the
	// pod indexes, which the pod cannot match.
	at uint64
}

type ownerAnswer struct {
	owners  reservationutil.Owners // a copy: an entry's owners are replaced when its spec changes
	matched bool
}

// answer is the pod's known answer for o's spec.
func (o *ownership) answer(owners *reservationutil.Owners) (matched, known bool) {
	for i := range o.answers {
		if o.answers[i].owners.SameAs(*owners) {
			return o.answers[i].matched, true
		}
	}
	return false, false
}

// Owned lists the nodes where pod owns one of the reservations; nil when
// no reservation's owners name any key the pod offers (nor lack keys), which
// is certain: the pod owns none, and is not matched at all. It matches only
// the reservations the pod's keys index, each owners spec once, so that an
// owner pod is not matched against the reservations of every node it is
// filtered on.
func (c *Cache) Owned(pod *corev1.Pod) *ownership {
	keys := reservationutil.PodKeys(pod)
	c.mu.RLock()
	defer c.mu.RUnlock()
	var o *ownership
	check := func(e *entry) {
		if o == nil {
			o = &ownership{at: c.changes.Load()}
		}
		matched, known := o.answer(&e.owners)
		if !known {
			matched = e.owners.Match(pod)
			o.answers = append(o.answers, ownerAnswer{owners: e.owners, matched: matched})
		}
		if !matched {
			return
		}
		// The summary should hold e's view (both change under the lock
		// held here); checked against it all the same, from the answers,
		// since a pod listed as an owner where it owns nothing would be
		// filtered wrongly.
		sum := c.summary(e.r.Status.NodeName)
		if sum == nil || slices.Contains(o.nodes, sum) || !sum.owns(pod, ownerMatcher{known: o}) {
			return
		}
		o.nodes = append(o.nodes, sum)
	}
	for e := range c.keyless {
		check(e)
	}
	for _, k := range keys {
		for e := range c.ownerKeys[k] {
			check(e)
		}
	}
	return o
}

// summary is node's summary, nil when it holds no reservation.
func (c *Cache) summary(node string) *nodeSummary {
	if v, ok := c.summaries.Load(node); ok {
		return v.(*nodeSummary)
	}
	return nil
}

// OnNode lists the node's reservations, by name. The slice is shared: read it, do not change it.
func (c *Cache) OnNode(node string) []View {
	if n := c.summary(node); n != nil {
		return n.views
	}
	return nil
}
