package loadaware

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// PreFilter computes the pod's estimated usage once for all nodes.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	// kube-scheduler waits for its own handlers, not for plugins'.
	if !p.ready.Load() {
		if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
			return nil, fwk.AsStatus(fmt.Errorf("NodeMetrics and pods are not synced yet"))
		}
		p.ready.Store(true)
	}
	state.Write(stateKey, p.computePodState(pod))
	return nil, nil
}

// Filter rejects a node whose estimated usage, with this pod, would exceed a threshold.
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := p.podState(state, pod)
	if s.daemonSet {
		return nil
	}
	st := p.filter(ctx, state, s, nodeInfo)
	if st != nil && s.turnedAway.CompareAndSwap(false, true) {
		p.rejected.Add(pod)
	}
	return st
}

func (p *Plugin) filter(ctx context.Context, state fwk.CycleState, s *podState, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	est := p.cache.estimate(node.Name)
	if est == nil {
		return nil // no NodeMetric yet: nothing to judge by
	}
	custom, refreshed := p.customThresholds(ctx, node)
	if refreshed {
		// The node's own aggregation changed its estimate: read it again.
		if est = p.cache.estimate(node.Name); est == nil {
			return nil
		}
	}
	est = s.moved.apply(node.Name, est)
	if p.expired(s, est) {
		if p.args.FilterExpiredNodeMetrics && !p.args.EnableScheduleWhenNodeMetricsExpired {
			if logger := klog.FromContext(ctx); logger.V(5).Enabled() {
				logger.V(5).Info("Node metric expired", "node", klog.KObj(node), "age", p.now().Sub(est.updateTime()).Round(time.Second))
			}
			return fwk.NewStatus(fwk.Unschedulable, reasonExpired)
		}
		return nil
	}
	usage, prod := p.usageThresholds, p.prodThresholds
	if custom != nil {
		usage, prod = custom.usage, custom.prod
	}
	alloc := p.basis(ctx, node, nodeInfo.GetAllocatable())
	var buf [maxResources]int64
	holds := s.holds.Get(state)
	if holds != nil {
		// A node that takes the pod even beside the most any node's
		// reservations hold takes it beside its own: their lookup, a
		// second per node, is left to the nodes near a threshold.
		if milliCPU, memory, _ := holds.Most(); milliCPU > 0 || memory > 0 {
			if p.fits(est, p.addHeld(s.estimate, milliCPU, memory, buf[:0]), s.prod, usage, prod, alloc) {
				return nil
			}
		}
	}
	podEst := p.withReservations(holds, node, s.estimate, buf[:0])
	if st := p.check(ctx, node, est, filterUsage, podEst, usage, alloc, p.overReasons); st != nil {
		return st
	}
	if s.prod && hasAny(prod) {
		if st := p.check(ctx, node, est, prodUsage, podEst, prod, alloc, p.prodOverReasons); st != nil {
			return st
		}
	}
	return nil
}

// fits says whether the node takes podEst under every threshold Filter checks.
func (p *Plugin) fits(est *nodeEstimate, podEst vector, prodPod bool, usage, prod []int64, alloc basis) bool {
	if p.over(est, filterUsage, podEst, usage, alloc) >= 0 {
		return false
	}
	return !prodPod || !hasAny(prod) || p.over(est, prodUsage, podEst, prod, alloc) < 0
}

// maxResources bounds the resources a profile weighs or limits, so that the
// per-node sums fit a buffer on the stack.
const maxResources = 8

// withReservations adds to a pod's estimate what the node's reservations
// hold against it (those it does not consume), estimated as if their owners
// ran there already: their owners are coming, and a node filled up to its
// thresholds meanwhile would turn them away. Nodes without reservations
// cost nothing. The sum goes into buf (allocated only past maxResources).
func (p *Plugin) withReservations(holds frameworkext.Holds, node *corev1.Node, est vector, buf vector) vector {
	if holds == nil {
		return est
	}
	milliCPU, memory := holds.Held(node)
	if milliCPU == 0 && memory == 0 {
		return est
	}
	return p.addHeld(est, milliCPU, memory, buf)
}

// addHeld is est plus reserved CPU and memory, scaled as estimates are, in
// buf. It runs per node beside reservations, so the factors are worked out
// once, in New.
func (p *Plugin) addHeld(est vector, milliCPU, memory int64, buf vector) vector {
	out := append(buf, est...)
	out[0] += milliCPU * p.cpuFactor / 100
	out[1] += memory * p.memoryFactor / 100
	return out
}

func hasAny(v []int64) bool {
	for _, x := range v {
		if x > 0 {
			return true
		}
	}
	return false
}

// Filter's rejection reasons are fixed per resource, as the in-tree plugins'
// are ("Insufficient cpu"): kube-scheduler's FailedScheduling event counts
// the nodes per reason, and figures in the reason made one entry per figure
// (hundreds on a large cluster). Formatting them also cost every rejected
// node two more allocations, and more time than NodeResourcesFit's whole
// rejection. The figures go to the log at verbosity 5. No '%' in a reason:
// kube-scheduler uses it as the format string of the event.
const (
	reasonOver     = "node(s) %s usage over the load threshold"
	reasonProdOver = "node(s) prod %s usage over the load threshold"
	reasonExpired  = "node(s) with an expired node metric"
)

// check compares the node's usage of the given kind plus the pod against
// thresholds, in percent of allocatable; reasons are the rejection reasons
// by resource.
func (p *Plugin) check(ctx context.Context, node *corev1.Node, est *nodeEstimate, usage int, pod vector, thresholds []int64, alloc basis, reasons []string) *fwk.Status {
	i := p.over(est, usage, pod, thresholds, alloc)
	if i < 0 {
		return nil
	}
	if logger := klog.FromContext(ctx); logger.V(5).Enabled() {
		a, used := alloc.of(i, p.resources[i]), est.get(i, usage)+pod[i]
		logger.V(5).Info("Node over its usage threshold with the pod", "node", klog.KObj(node), "resource", p.resources[i],
			"prodOnly", usage == prodUsage, "usagePercent", used*100/a, "thresholdPercent", thresholds[i])
	}
	return fwk.NewStatus(fwk.Unschedulable, reasons[i])
}

// over is the first resource whose usage with the pod would exceed its
// threshold, -1 when none would.
func (p *Plugin) over(est *nodeEstimate, usage int, pod vector, thresholds []int64, alloc basis) int {
	for i, t := range thresholds {
		if t <= 0 {
			continue
		}
		a := alloc.of(i, p.resources[i])
		if a <= 0 {
			continue
		}
		if (est.get(i, usage)+pod[i])*100 > t*a {
			return i
		}
	}
	return -1
}

func allocatable(r fwk.Resource, name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.GetMilliCPU()
	case corev1.ResourceMemory:
		return r.GetMemory()
	case corev1.ResourceEphemeralStorage:
		return r.GetEphemeralStorage()
	}
	return r.GetScalarResources()[name]
}

func (p *Plugin) expired(s *podState, est *nodeEstimate) bool {
	return est.unreported || p.expiration > 0 && est.updated < s.stale
}
