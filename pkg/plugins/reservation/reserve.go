package reservation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Reserve takes the pod's share of the fullest reservation that fits it on
// the chosen node; the check and the record are one step in the cache.
func (p *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s := p.getState(cs)
	if s == nil || s.placeholder {
		return nil
	}
	views := p.cache.OnNode(nodeName)
	if len(views) == 0 {
		return nil
	}
	// The views are read afresh here, so the answers are taken but not
	// their word on the specs they lack.
	c := choose(views, pod, s.req, s.reqMilliCPU, s.reqMemory, s.affinity, false, ownerMatcher{known: s.owned})
	if c.use == nil {
		return nil
	}
	if err := p.cache.Assume(c.use.Reservation.UID, pod); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	s.reserved, s.reservedNode = c.use.Reservation, nodeName
	if p.binding.Carried(p.ext, p.handle) {
		v, err := (&extension.ReservationAllocated{Name: s.reserved.Name, UID: s.reserved.UID}).Marshal()
		if err != nil {
			return fwk.AsStatus(err)
		}
		frameworkext.Add(cs, extension.AnnotationReservationAllocated, v, nil)
	}
	return nil
}

// Unreserve gives the share back: the pod did not bind. If PreBind already
// wrote reservation-allocated, it is taken off again, or the pod would claim
// the reservation to koord-manager and to a restarted scheduler without
// using it (the leak Koordinator users hit after failed bindings).
func (p *Plugin) Unreserve(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	s := p.getState(cs)
	if s == nil || s.reserved == nil {
		return
	}
	p.cache.Unassume(pod.UID)
	s.reserved, s.reservedNode = nil, ""
	if s.annotated {
		s.annotated = false
		if err := p.setAllocated(ctx, pod, nil); err != nil {
			klog.FromContext(ctx).Error(err, "Taking the reservation off a pod that did not bind; its next scheduling attempt will", "pod", klog.KObj(pod))
		}
	}
}
