package numaresource

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Filter keeps a binding pod off nodes that cannot give it the CPUs its
// policies ask for, saying which policy and count failed.
func (p *Plugin) Filter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	st, status := p.readPodState(cs)
	if status != nil {
		return status
	}
	req := st.req
	node := nodeInfo.Node()
	view, viewErr := p.state.View(node.Name)
	b, binds, err := req.with(view.policiesFor(node))
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !binds {
		return nil
	}
	if viewErr != nil {
		p.turnAway(st, pod)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, viewErr.Error())
	}
	view, _ = p.forPod(st, cs, node, view)
	var buf [4]NUMACapacity
	if _, err := fit(view, req, b, false, buf[:0]); err != nil {
		p.turnAway(st, pod)
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	return nil
}

// turnAway remembers, once per cycle, that the pod waits on this plugin. (A
// PostFilter hook would see only unschedulable pods, but DefaultPreemption
// ends the PostFilter phase early for many of them.)
func (p *Plugin) turnAway(st *podState, pod *corev1.Pod) {
	if st.turnedAway.CompareAndSwap(false, true) {
		p.rejected.Add(pod)
	}
}

// placement is a feasible way to bind a pod on one node.
type placement struct {
	view *NodeView
	// caps are the view's NUMA capacities less what the pod may not use:
	// a NUMA node it may not use has no free CPUs or cores here.
	caps           []NUMACapacity
	pcpuMasked     bool // the view's PCPULevel-exclusive cores are not for this pod
	threadsPerCore int
	req            Request
}

// cpus are the CPUs the pod may be given: the view's available CPUs less
// what fit masked. Only Reserve needs them, once per pod; Filter and Score
// work with caps alone.
func (pl placement) cpus() cpuset.CPUSet {
	v := pl.view
	available := v.Available
	if pl.pcpuMasked {
		available = available.Difference(v.PCPUExclusive)
	}
	// A masked NUMA node shows no free CPU; one with none free has no CPU in
	// available to take away either, so both come out the same.
	for _, c := range pl.caps {
		if c.FreeCPUs == 0 {
			available = available.Difference(v.Topo.NUMACPUs(c.ID))
		}
	}
	return available
}

// fit narrows a node's capacities to those the pod may use (exclusivity,
// NUMA memory) and checks the count; the error names what is missing.
// Masking works on the view's per-NUMA capacities, not on CPU sets: an
// exclusive or memory-short NUMA node drops out whole, and the cores left to
// PCPULevel-exclusive pods were counted when the view was built. buf holds
// the narrowed capacities, so that fit allocates nothing on success.
func fit(view *NodeView, r *podRequest, b binding, pack bool, buf []NUMACapacity) (placement, error) {
	topo := view.Topo
	pl := placement{view: view, caps: view.Caps, threadsPerCore: view.threadsPerCore,
		req: Request{Count: b.count, Policy: b.policy, Pack: pack}}
	if r.exclusive == extension.CPUExclusivePolicyPCPULevel && view.pcpuCaps != nil {
		pl.caps, pl.pcpuMasked = view.pcpuCaps, true
	}
	switch b.numaPolicy {
	case extension.NUMATopologyPolicySingleNUMANode:
		pl.req.SingleNUMANode = true
	case extension.NUMATopologyPolicyRestricted:
		// Restricted: no more NUMA nodes than the pod's size needs.
		pl.req.SingleNUMANode = fitsOneNUMANode(topo, pl.req)
	}
	exclusive := r.exclusive == extension.CPUExclusivePolicyNUMANodeLevel && len(view.NUMAExclusive) > 0
	short := pl.req.SingleNUMANode && r.memory > 0
	if exclusive || short {
		var narrowed []NUMACapacity
		for i, c := range pl.caps {
			if (exclusive && view.NUMAExclusive[c.ID]) || (short && view.MemoryFree[c.ID] < r.memory) {
				if narrowed == nil {
					narrowed = append(buf[:0], pl.caps...)
				}
				narrowed[i].FreeCPUs, narrowed[i].FreeCores, narrowed[i].SpreadCores = 0, 0, 0
			}
		}
		if narrowed != nil {
			pl.caps = narrowed
		}
	}
	if err := Fits(pl.caps, pl.threadsPerCore, pl.req); err != nil {
		return pl, fitError(view, r, b, pl, exclusive, short, err)
	}
	return pl, nil
}

// fitError says why the pod does not fit, with what fit masked for it.
func fitError(view *NodeView, r *podRequest, b binding, pl placement, exclusive, short bool, err error) error {
	msg := fmt.Sprintf("cannot bind %d CPUs by %s", b.count, b.policy)
	if pl.req.SingleNUMANode {
		msg += " on a single NUMA node (" + string(b.numaPolicy) + ")"
	}
	msg += ": " + err.Error()
	if pl.pcpuMasked {
		msg += fmt.Sprintf("; cores of CPUs %s hold PCPULevel-exclusive pods", view.PCPUExclusive)
	}
	var excl, low []int
	for _, id := range view.Topo.NUMANodes() {
		if exclusive && view.NUMAExclusive[id] {
			excl = append(excl, id)
		}
		if short && view.MemoryFree[id] < r.memory {
			low = append(low, id)
		}
	}
	if len(excl) > 0 {
		msg += fmt.Sprintf("; NUMA nodes %v hold NUMANodeLevel-exclusive pods", excl)
	}
	if len(low) > 0 {
		msg += fmt.Sprintf("; NUMA nodes %v have less than %s memory free", low, resource.NewQuantity(r.memory, resource.BinarySI))
	}
	return errors.New(msg)
}

func fitsOneNUMANode(topo *Topology, req Request) bool {
	for _, id := range topo.NUMANodes() {
		size := topo.NUMACPUs(id).Size()
		if req.Policy != extension.CPUBindPolicySpreadByPCPUs {
			size = topo.NUMACores(id) * topo.ThreadsPerCore()
		}
		if req.Count <= size {
			return true
		}
	}
	return false
}
