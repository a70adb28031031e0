package loadaware

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/pkg/reservationutil"
)

// Reserve counts the pod on its node before it is bound, so the next pods in
// a burst see it. A reservation's placeholder is not counted: it is never
// bound, and once its Bind has made the reservation Available, the
// reservation is what is counted (frameworkext.Holds). A record of it would
// count the reservation twice until the placeholder's deletion reached the
// plugin; under load, the integration test saw one outlive the deletion
// (left until a later metric is taken to include it) and turn the
// reservation's owner away by load that was not there.
func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	if reservationutil.PlaceholderOf(pod) != "" {
		return nil
	}
	p.cache.assign(pod, nodeName, p.now(), p.podState(state, pod).estimate)
	return nil
}

// Unreserve forgets a pod whose binding did not happen.
func (p *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) {
	p.cache.remove(pod.UID)
}
