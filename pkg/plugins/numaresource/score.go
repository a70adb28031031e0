package numaresource

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
)

// scorer turns free and used amounts into 0-100 by a scoring strategy.
type scorer struct {
	most              bool
	cpuWeight, memWgt int64
}

func newScorer(s *config.ResourceScoringStrategy) scorer {
	sc := scorer{most: s.Type == config.MostAllocated}
	for _, r := range s.Resources {
		switch r.Name {
		case corev1.ResourceCPU:
			sc.cpuWeight = r.Weight
		case corev1.ResourceMemory:
			sc.memWgt = r.Weight
		}
	}
	return sc
}

// fraction scores one resource after placing request: free share with
// LeastAllocated, used share with MostAllocated.
func (s scorer) fraction(capacity, used, request int64) int64 {
	if capacity <= 0 {
		return 0
	}
	used += request
	if !s.most {
		used = capacity - used
	}
	return min(max(used*maxNodeScore/capacity, 0), maxNodeScore)
}

// PreScore skips scoring when no candidate node would bind the pod's CPUs.
func (p *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	st, status := p.readPodState(cs)
	if status != nil {
		return fwk.NewStatus(fwk.Skip)
	}
	req := st.req
	for _, n := range nodes {
		if _, binds, err := req.on(n.Node()); err == nil && binds {
			return nil
		}
	}
	return fwk.NewStatus(fwk.Skip)
}

// Score prefers nodes by the scoring strategy (free or used CPUs and NUMA
// memory after placing the pod) and, among them, nodes where the pod fits in
// one NUMA node, by the NUMA scoring strategy.
func (p *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	st, status := p.readPodState(cs)
	if status != nil {
		return 0, status
	}
	node := nodeInfo.Node()
	req := st.req
	view, err := p.state.View(node.Name)
	if err != nil {
		return 0, nil
	}
	b, binds, err := req.with(view.policiesFor(node))
	if err != nil || !binds {
		return 0, nil
	}
	view, _ = p.forPod(st, cs, node, view)
	var buf [4]NUMACapacity
	pl, err := fit(view, req, b, p.pack(b), buf[:0])
	if err != nil {
		return 0, nil
	}
	return p.score(view, b, req, pl), nil
}

// score is Score's value for a node where the pod fits as pl.
func (p *Plugin) score(view *NodeView, b binding, r *podRequest, pl placement) int64 {
	return (p.scoreNode(view, b, r) + p.scoreNUMA(pl)) / 2
}

func (p *Plugin) scoreNode(view *NodeView, b binding, r *podRequest) int64 {
	s := p.nodeScore
	var sum, weights int64
	if s.cpuWeight > 0 {
		capacity := int64(view.allocatableCPUs)
		used := capacity - int64(view.availableCPUs)
		sum += s.cpuWeight * s.fraction(capacity, used, int64(b.count))
		weights += s.cpuWeight
	}
	if s.memWgt > 0 && view.MemoryTotal > 0 {
		sum += s.memWgt * s.fraction(view.MemoryTotal, view.memoryUsed, r.memory)
		weights += s.memWgt
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

// scoreNUMA is 0 when the pod must span NUMA nodes; otherwise the best NUMA
// node that can hold it, scored by the NUMA strategy.
func (p *Plugin) scoreNUMA(pl placement) int64 {
	full := pl.req.Policy != extension.CPUBindPolicySpreadByPCPUs
	need := int64(pl.req.Count)
	if full {
		need /= int64(pl.threadsPerCore)
	}
	best := int64(0)
	for _, c := range pl.caps {
		have, size := int64(c.FreeCPUs), int64(c.CPUs)
		if full {
			have, size = int64(c.FreeCores), int64(c.Cores)
		}
		if have < need {
			continue
		}
		best = max(best, p.numaScore.fraction(size, size-have, need), 1)
	}
	return best
}

// ScoreExtensions: scores are already 0-100.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// pack says whether the pod's NUMA nodes are the fullest that hold it: the
// node's numa-allocate-strategy label, else numaScoringStrategy.
func (p *Plugin) pack(b binding) bool {
	switch b.allocate {
	case extension.NUMAMostAllocated:
		return true
	case extension.NUMALeastAllocated:
		return false
	}
	return p.numaScore.most
}
