package numaresource

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// forPod narrows a node's view to what the pod of this cycle may take once
// the node's reservations are counted: the CPUs and NUMA memory pinned by
// reservations it may not use are held against it. For an owner, own is the
// view of just the reservation it consumes, what Reserve takes from first so
// that the owner receives the very CPUs held for it. Nodes without pinned
// reservations keep their shared view, at no cost; only on nodes with one is
// a narrowed view built, per pod.
func (p *Plugin) forPod(st *podState, cs fwk.CycleState, node *corev1.Node, view *NodeView) (v, own *NodeView) {
	holds := st.holds.Get(cs)
	if holds == nil {
		return view, nil
	}
	if _, _, pinned := holds.Most(); !pinned {
		return view, nil // no reservation pins CPUs anywhere: nothing to narrow
	}
	use, held := holds.On(node)
	pinned := use != nil && use.Pinned()
	for i := range held {
		pinned = pinned || held[i].Pinned()
	}
	if !pinned {
		return view, nil
	}
	narrowed := *view
	narrowed.MemoryFree = maps.Clone(view.MemoryFree)
	taken := cpuset.New()
	for i := range held {
		h := &held[i]
		if !h.Pinned() {
			continue
		}
		taken = taken.Union(h.CPUs)
		for id, m := range p.unusedMemory(node.Name, h) {
			narrowed.MemoryFree[id] -= m
		}
	}
	narrowed.Available = view.Available.Difference(taken)
	narrowed.Caps = view.Topo.Capacity(narrowed.Available)
	narrowed.derive()
	if use == nil || use.CPUs.IsEmpty() {
		return &narrowed, nil
	}
	mine := narrowed
	mine.Available = view.Available.Intersection(use.CPUs)
	mine.Caps = view.Topo.Capacity(mine.Available)
	mine.MemoryFree = p.unusedMemory(node.Name, use)
	mine.derive()
	return &narrowed, &mine
}

// unusedMemory is the NUMA memory a reservation pinned that its consumers
// have not taken (their own allocations hold what they took).
func (p *Plugin) unusedMemory(node string, h *frameworkext.Hold) map[int]int64 {
	out := make(map[int]int64, len(h.NUMAMemory))
	used := p.state.NUMAMemoryOf(node, h.Consumers)
	for id, m := range h.NUMAMemory {
		out[id] = max(m-used[id], 0)
	}
	return out
}

// NUMAMemoryOf sums the memory per NUMA node the given pods hold on node.
func (s *State) NUMAMemoryOf(node string, pods []types.UID) map[int]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := s.nodes[node]
	if n == nil || len(pods) == 0 {
		return nil
	}
	sum := map[int]int64{}
	for _, uid := range pods {
		for id, m := range n.pods[uid].Memory {
			sum[id] += m
		}
	}
	return sum
}
