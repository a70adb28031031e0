package numaresource

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// reserved is what Reserve chose, for PreBind to write and Unreserve to undo.
type reserved struct {
	alloc  Allocation
	status string
}

func (r *reserved) Clone() fwk.StateData { return r }

// Reserve picks the concrete CPUs and holds them, so that no other pod
// (including one in a parallel binding cycle) can be given them.
func (p *Plugin) Reserve(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	st, status := p.readPodState(cs)
	if status != nil {
		return nil // PreFilter skipped the pod
	}
	req := st.req
	nodeInfo, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(err)
	}
	view, viewErr := p.state.View(nodeName)
	b, binds, err := req.with(view.policiesFor(nodeInfo.Node()))
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if !binds {
		return nil
	}
	if viewErr != nil {
		return fwk.NewStatus(fwk.Unschedulable, viewErr.Error())
	}
	view, own := p.forPod(st, cs, nodeInfo.Node(), view)
	var cpus cpuset.CPUSet
	if own != nil {
		// An owner takes the CPUs its reservation pinned first.
		cpus, err = p.choose(own, req, b)
	}
	if own == nil || err != nil {
		// No reservation pinned CPUs for it, or the one it consumes has too
		// few left: any CPU it may use.
		if cpus, err = p.choose(view, req, b); err != nil {
			return fwk.NewStatus(fwk.Unschedulable, err.Error())
		}
	}
	alloc := Allocation{CPUs: cpus, Exclusive: req.exclusive, Memory: splitMemory(view.Topo, cpus, req.memory)}
	annotation, err := resourceStatus(view.Topo, alloc)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if err := p.state.Assume(nodeName, pod.UID, alloc); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	cs.Write(reservedKey, &reserved{alloc: alloc, status: annotation})
	if p.binding.Carried(p.ext, p.handle) {
		frameworkext.Add(cs, extension.AnnotationResourceStatus, annotation, func() *fwk.Status { return p.stillAssumed(pod, alloc) })
	}
	klog.FromContext(ctx).V(4).Info("Reserved CPUs", "pod", klog.KObj(pod), "node", nodeName, "cpuset", cpus.String())
	return nil
}

// choose picks the pod's CPUs from view, by its policies.
func (p *Plugin) choose(view *NodeView, req *podRequest, b binding) (cpuset.CPUSet, error) {
	pl, err := fit(view, req, b, p.pack(b), nil)
	if err != nil {
		return cpuset.New(), err
	}
	return view.Topo.Choose(pl.cpus(), pl.req)
}

// splitMemory charges the pod's memory to the NUMA nodes of its CPUs, in
// proportion to its CPUs on each (the first takes the remainder).
func splitMemory(topo *Topology, cpus cpuset.CPUSet, memory int64) map[int]int64 {
	if memory <= 0 || cpus.IsEmpty() {
		return nil
	}
	perNUMA := map[int]int64{}
	for _, c := range cpus.UnsortedList() {
		perNUMA[topo.NUMANodeOf(c)]++
	}
	out := make(map[int]int64, len(perNUMA))
	var given int64
	first := -1
	for _, id := range topo.NUMANodes() {
		if n := perNUMA[id]; n > 0 {
			out[id] = memory * n / int64(cpus.Size())
			given += out[id]
			if first < 0 {
				first = id
			}
		}
	}
	out[first] += memory - given
	return out
}

func resourceStatus(topo *Topology, a Allocation) (string, error) {
	var st extension.ResourceStatus
	st.SetCPUs(a.CPUs)
	perNUMA := map[int]int64{}
	for _, c := range a.CPUs.UnsortedList() {
		perNUMA[topo.NUMANodeOf(c)]++
	}
	for _, id := range topo.NUMANodes() {
		if perNUMA[id] == 0 {
			continue
		}
		res := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(perNUMA[id], resource.DecimalSI)}
		if m := a.Memory[id]; m > 0 {
			res[corev1.ResourceMemory] = *resource.NewQuantity(m, resource.BinarySI)
		}
		st.NUMANodeResources = append(st.NUMANodeResources, extension.NUMANodeResource{Node: int32(id), Resources: res})
	}
	return st.Marshal()
}

// Unreserve releases the CPUs Reserve held.
func (p *Plugin) Unreserve(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	if _, err := cs.Read(reservedKey); err == nil && p.state.Forget(pod.UID) {
		p.retryRejected()
	}
}
