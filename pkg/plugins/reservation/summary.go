// A node's summary is its reservations as Filter and Score read them,
// rebuilt on every change under the cache's lock and read without it.

package reservation

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// mostHeld is the most any node's reservations hold against a stranger, and
// whether any pins CPUs (frameworkext.Holds.Most).
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
			c.setSummary(node, nil)
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
	c.setSummary(node, sum)
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

// summary is node's summary, nil when it holds no reservation.
func (c *Cache) summary(node string) *nodeSummary {
	c.sumMu.RLock()
	defer c.sumMu.RUnlock()
	return c.summaries[node]
}

// OnNode lists the node's reservations, by name. The slice is shared: read it, do not change it.
func (c *Cache) OnNode(node string) []View {
	if n := c.summary(node); n != nil {
		return n.views
	}
	return nil
}

// setSummary publishes node's summary (nil: it holds no reservation).
func (c *Cache) setSummary(node string, sum *nodeSummary) {
	c.sumMu.Lock()
	defer c.sumMu.Unlock()
	if sum == nil {
		delete(c.summaries, node)
	} else {
		c.summaries[node] = sum
	}
}
