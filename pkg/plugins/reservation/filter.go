package reservation

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/reservationutil"
)

// PreFilter reads the pod's reservation-affinity once; a malformed one makes
// the pod unschedulable until it is fixed, naming the key. While no
// reservation holds anything, Filter has nothing to refuse a pod that does
// not require one: it is skipped (the framework then calls it on no node).
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.ready.Load() {
		// kube-scheduler waits for its own informers, not for our handlers:
		// a pod scheduled before they ran would not see reservations.
		if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
			return nil, fwk.AsStatus(ctx.Err())
		}
		p.ready.Store(true)
	}
	affinity, err := extension.GetReservationAffinity(pod.Annotations)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	req := podRequests(pod)
	s := &podState{
		pod:         pod,
		cache:       p.cache,
		choices:     &sync.Map{},
		turnedAway:  &atomic.Bool{},
		affinity:    affinity,
		required:    reservationutil.RequiresReservation(affinity),
		placeholder: reservationutil.PlaceholderOf(pod) != "",
		req:         req,
		reqMilliCPU: req.Cpu().MilliValue(),
		reqMemory:   req.Memory().Value(),
	}
	if !s.placeholder {
		s.owned = p.cache.Owned(pod)
	}
	// Written even when Filter is skipped: Score, Reserve and the other
	// plugins' Holds read it.
	cs.Write(stateKey, s)
	if milliCPU, memory, _ := s.Most(); !s.required && milliCPU == 0 && memory == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter lets an owner onto a node with a reservation it may use and that has
// room for it, and keeps every other pod within what the node's reservations
// leave free.
func (p *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s := p.getState(cs)
	if s == nil {
		return fwk.AsStatus(fmt.Errorf("%s: no PreFilter state", Name))
	}
	st := p.filter(s, ni)
	if st != nil && s.turnedAway.CompareAndSwap(false, true) {
		p.rejected.Add(pod)
	}
	return st
}

func (p *Plugin) filter(s *podState, ni fwk.NodeInfo) *fwk.Status {
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	freeMilliCPU, freeMemory := alloc.GetMilliCPU()-used.GetMilliCPU(), alloc.GetMemory()-used.GetMemory()
	if !s.required && s.fitsBesideMost(freeMilliCPU, freeMemory) {
		// No node holds more against the pod than the most any holds, and
		// an owner needs at most its request from the node: the node's own
		// reservations need not be looked up.
		return nil
	}
	n := s.on(ni.Node())
	if n == nil {
		if s.required {
			return fwk.NewStatus(fwk.Unschedulable, requiredReason(choice{}))
		}
		return nil
	}
	c := n.c
	if c.use != nil && c.excessMilliCPU == 0 && c.excessMemory == 0 {
		return nil
	}
	if c.use == nil && s.required {
		return fwk.NewStatus(fwk.Unschedulable, requiredReason(c))
	}
	// A stranger, or an owner of an Aligned reservation that covers only
	// part of it: what the node gives must fit beside the other reservations.
	reqMilliCPU, reqMemory := s.reqMilliCPU, s.reqMemory
	if c.use != nil {
		reqMilliCPU, reqMemory = c.excessMilliCPU, c.excessMemory
	}
	if ok, why := fitsBeside(freeMilliCPU, freeMemory, c, reqMilliCPU, reqMemory); !ok {
		return fwk.NewStatus(fwk.Unschedulable, why)
	}
	return nil
}
