package loadaware

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
)

// PreScore makes sure the pod state exists when Filter was skipped.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if _, err := state.Read(stateKey); err != nil {
		state.Write(stateKey, p.computePodState(pod))
	}
	return nil
}

// Score is the weighted least-used (or most-used) share of allocatable,
// 0–100, from the same estimate Filter uses. Nodes without a fresh metric score 0.
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := p.podState(state, pod)
	node := nodeInfo.Node()
	est := p.cache.estimate(node.Name)
	if est == nil || p.expired(s, est) {
		return 0, nil
	}
	var buf [maxResources]int64
	return p.score(s, est, p.withReservations(s.holds.Get(state), node, s.estimate, buf[:0]), p.basis(ctx, node, nodeInfo.GetAllocatable())), nil
}

// score is Score's value for a node with a fresh estimate, podEst being the
// pod's estimate with what the node's reservations hold against it.
func (p *Plugin) score(s *podState, est *nodeEstimate, podEst vector, alloc basis) int64 {
	dominantWeight := p.args.DominantResourceWeight
	if p.weightSum+dominantWeight == 0 {
		return 0
	}
	usage := scoreUsage
	if s.prod && p.args.ScoreAccordingProdUsage {
		usage = prodUsage
	}
	mostUsed := p.args.ScoringStrategy == config.MostUsed
	var total int64
	// dominant is the score of the weighted resource the node uses most
	// of, which Koordinator's dominantResourceWeight weighs on top.
	dominant := int64(-1)
	for i, w := range p.weights {
		if w == 0 {
			continue
		}
		a := alloc.of(i, p.resources[i])
		if a <= 0 {
			continue
		}
		used := min(est.get(i, usage)+podEst[i], a)
		score := (a - used) * fwk.MaxNodeScore / a
		if mostUsed {
			score = used * fwk.MaxNodeScore / a
		}
		total += score * w
		if dominant < 0 || (!mostUsed && score < dominant) || (mostUsed && score > dominant) {
			dominant = score
		}
	}
	if dominantWeight > 0 {
		if dominant < 0 {
			dominant = fwk.MaxNodeScore
			if mostUsed {
				dominant = 0
			}
		}
		total += dominant * dominantWeight
	}
	return total / (p.weightSum + dominantWeight)
}

// ScoreExtensions is nil: scores are already 0–100.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
