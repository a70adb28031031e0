package reservation

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// The pod's state is also what the other plugins read of reservations
// (frameworkext.HoldsStateKey).
var _ frameworkext.Holds = &podState{}

// holdsOf splits views into the one the pod consumes (use, may be nil) and the others.
func holdsOf(views []View, use *View) (*frameworkext.Hold, []frameworkext.Hold) {
	var taken *frameworkext.Hold
	held := make([]frameworkext.Hold, 0, len(views))
	for i := range views {
		if use != nil && views[i].Reservation.UID == use.Reservation.UID {
			taken = views[i].hold
		} else {
			held = append(held, *views[i].hold)
		}
	}
	return taken, held
}

// On tells the other plugins which of node's reservations the pod consumes
// (the one Reserve took, or the one it would take) and which it may not touch.
func (s *podState) On(node *corev1.Node) (*frameworkext.Hold, []frameworkext.Hold) {
	if s.reserved != nil && s.reservedNode == node.Name {
		// After Reserve (one node, once): the reservation taken, as it is
		// now, with the pod among its consumers.
		views := s.cache.OnNode(node.Name)
		for i := range views {
			if views[i].Reservation.UID == s.reserved.UID {
				return holdsOf(views, &views[i])
			}
		}
		return holdsOf(views, nil)
	}
	n := s.on(node)
	if n == nil {
		return nil, nil
	}
	n.once.Do(func() { n.use, n.held = holdsOf(n.views, n.c.use) })
	return n.use, n.held
}

// Held sums what On holds against the pod; before Reserve it is the choice's
// running total, made when the choice was.
func (s *podState) Held(node *corev1.Node) (milliCPU, memory int64) {
	if s.reserved == nil || s.reservedNode != node.Name {
		if s.owned == nil {
			if sum := s.cache.summary(node.Name); sum != nil {
				return sum.heldMilliCPU, sum.heldMemory
			}
			return 0, 0
		}
		if n := s.on(node); n != nil {
			return n.c.heldMilliCPU, n.c.heldMemory
		}
		return 0, 0
	}
	_, held := s.On(node)
	for _, h := range held {
		milliCPU += h.MilliCPU
		memory += h.Memory
	}
	return milliCPU, memory
}

// Most reads the cache's bound, which covers every node and any pod.
func (s *podState) Most() (milliCPU, memory int64, pinned bool) {
	m := s.cache.most.Load()
	return m.milliCPU, m.memory, m.pinned
}

// fitsBesideMost says whether the pod's request fits in a node's free CPU and
// memory even beside the most any node's reservations hold.
func (s *podState) fitsBesideMost(freeMilliCPU, freeMemory int64) bool {
	m := s.cache.most.Load()
	return (m.milliCPU == 0 || s.reqMilliCPU <= freeMilliCPU-m.milliCPU) &&
		(m.memory == 0 || s.reqMemory <= freeMemory-m.memory)
}
