package reservation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreScore skips Score for pods that can consume no reservation (placeholders
// and pods owning none): they would score 0 on every node.
func (p *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if s := p.getState(cs); s == nil || s.owned == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score prefers nodes where the pod consumes a reservation.
func (p *Plugin) Score(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	s := p.getState(cs)
	if s == nil || s.placeholder {
		return 0, nil
	}
	if n := s.on(ni.Node()); n != nil && n.c.use != nil {
		return fwk.MaxNodeScore, nil
	}
	return 0, nil
}

func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
