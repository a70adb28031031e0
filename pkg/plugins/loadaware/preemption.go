package loadaware

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
)

// Preemption and nominated pods. kube-scheduler's preemption asks Filter
// whether the pod fits a node once some pods are gone: it removes them
// from a copy of the cycle's state (RemovePod), and adds back those it can
// spare (AddPod). Without these a node over its load threshold stayed over
// it however many pods preemption took, and so preemption (an ElasticQuota
// taking its min back, a prod pod evicting batch work) found nothing to do
// exactly where the load was. The same calls add the pods nominated to a
// node (waiting for their victims to go) before other pods are filtered
// there, so that their room is not taken by load.

// moved is what a state copy's RemovePod and AddPod changed on one node:
// the usage figures by resource and kind (filterUsage, scoreUsage,
// prodUsage), and which pods.
type moved struct {
	node    string
	usage   [][3]int64
	removed map[types.UID]bool   // pods the cache counts there, taken away
	added   map[types.UID]vector // pods it does not count, added
}

func (m *moved) clone() *moved {
	if m == nil {
		return nil
	}
	c := *m
	c.usage = append([][3]int64(nil), m.usage...)
	c.removed = maps.Clone(m.removed)
	c.added = maps.Clone(m.added)
	return &c
}

// apply is est with the moves made on node; est itself when there are none
// (the ordinary path: no copy).
func (m *moved) apply(node string, est *nodeEstimate) *nodeEstimate {
	if m == nil || m.node != node || est.unreported {
		return est
	}
	out := newEstimate(est.updated, len(est.usage))
	for i := range est.usage {
		for k := range est.usage[i] {
			out.usage[i][k] = max(0, est.usage[i][k]+m.usage[i][k])
		}
	}
	return out
}

// PreFilterExtensions: the estimate depends on the pods a preemption
// removes and on nominated pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// movedOn is the state copy's record for node, made on first use.
func (p *Plugin) movedOn(state fwk.CycleState, pod *corev1.Pod, node string) *moved {
	s := p.podState(state, pod)
	if s.moved == nil || s.moved.node != node {
		s.moved = &moved{node: node, usage: make([][3]int64, len(p.resources)), removed: map[types.UID]bool{}, added: map[types.UID]vector{}}
		state.Write(stateKey, s)
	}
	return s.moved
}

// RemovePod takes what a pod adds to the node's figures away from them.
func (p *Plugin) RemovePod(_ context.Context, state fwk.CycleState, pod *corev1.Pod, gone fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	if nodeInfo.Node() == nil {
		return nil
	}
	node, other := nodeInfo.Node().Name, gone.GetPod()
	m := p.movedOn(state, pod, node)
	if est, ok := m.added[other.UID]; ok {
		delete(m.added, other.UID)
		m.add(est, other, -1)
		return nil
	}
	if m.removed[other.UID] {
		return nil
	}
	if part, ok := p.cache.part(node, other.UID); ok {
		m.removed[other.UID] = true
		for i := range m.usage {
			for k := range m.usage[i] {
				m.usage[i][k] -= part[i][k]
			}
		}
	}
	return nil
}

// AddPod puts back a pod RemovePod took away, or adds one the cache does
// not count on the node (a nominated pod) at its estimate.
func (p *Plugin) AddPod(_ context.Context, state fwk.CycleState, pod *corev1.Pod, added fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	if nodeInfo.Node() == nil {
		return nil
	}
	node, other := nodeInfo.Node().Name, added.GetPod()
	m := p.movedOn(state, pod, node)
	if m.removed[other.UID] {
		delete(m.removed, other.UID)
		if part, ok := p.cache.part(node, other.UID); ok {
			for i := range m.usage {
				for k := range m.usage[i] {
					m.usage[i][k] += part[i][k]
				}
			}
		}
		return nil
	}
	if _, ok := m.added[other.UID]; ok {
		return nil
	}
	if _, counted := p.cache.part(node, other.UID); counted {
		return nil
	}
	est := estimatePod(other, p.resources, podFactors(p.args, other))
	m.added[other.UID] = est
	m.add(est, other, 1)
	return nil
}

// add counts a pod's estimate (sign 1) or takes it away (-1) in every
// kind it belongs to.
func (m *moved) add(est vector, pod *corev1.Pod, sign int64) {
	prod := extension.PodPriorityClass(pod.Spec.Priority) == extension.PriorityProd
	for i := range m.usage {
		m.usage[i][filterUsage] += sign * est[i]
		m.usage[i][scoreUsage] += sign * est[i]
		if prod {
			m.usage[i][prodUsage] += sign * est[i]
		}
	}
}
