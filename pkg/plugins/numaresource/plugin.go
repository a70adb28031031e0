// Package numaresource implements NodeNUMAResource: latency-critical pods get
// exclusive, topology-aligned CPUs chosen by the scheduler from each node's
// CPU topology (koordlet's kube-system/<node>-numa-info ConfigMap), recorded
// on the pod as scheduling.koordinator.sh/resource-status for koordlet to pin.
// See README.md.
package numaresource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/config/validation"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Name is the plugin's registered name.
const Name = "NodeNUMAResource"

const (
	podStateKey  fwk.StateKey = Name + "/pod"
	reservedKey  fwk.StateKey = Name + "/reserved"
	maxNodeScore              = fwk.MaxNodeScore
)

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PreBindPlugin     = &Plugin{}
	_ fwk.PostBindPlugin    = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Plugin is NodeNUMAResource.
type Plugin struct {
	handle fwk.Handle
	ext    *frameworkext.Extender
	args   *config.NodeNUMAResourceArgs
	state  *State

	// synced are the event handlers that must have seen every existing pod
	// and topology before the first pod is placed, or a restarted scheduler
	// could hand out CPUs a running pod holds.
	synced []cache.InformerSynced
	ready  atomic.Bool

	// rejected are pods this plugin turned away somewhere; they are retried
	// as soon as a topology arrives or CPUs are freed. The scheduler
	// requeues them on pod deletion by itself, but its handler may run
	// before ours has released the deleted pod's CPUs.
	rejected frameworkext.Rejected
	logger   klog.Logger

	nodeScore, numaScore scorer

	// binding says whether the profile binds with frameworkext.Bind (the
	// chosen CPUs ride on the Binding) or needs the PreBind patch.
	binding frameworkext.CarriedOnce
}

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

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// New builds the plugin from its typed args and starts watching topologies
// and pods, so that its view of every node is rebuilt from the API server.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, ext *frameworkext.Extender) (fwk.Plugin, error) {
	args, ok := obj.(*config.NodeNUMAResourceArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type NodeNUMAResourceArgs, got %T", obj)
	}
	if err := validation.ValidateNodeNUMAResourceArgs(nil, args); err != nil {
		return nil, err
	}
	p := newPlugin(args, h, ext)
	p.logger = klog.FromContext(ctx).WithName(Name)
	// A reservation that ends or is consumed releases the CPUs it pinned.
	ext.OnHoldsChanged(p.retryRejected)
	topologySynced, err := p.watchTopology(ctx, h)
	if err != nil {
		return nil, err
	}
	reg, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onPod(ctx, obj) },
		UpdateFunc: func(_, obj any) { p.onPod(ctx, obj) },
		DeleteFunc: p.onPodDelete,
	})
	if err != nil {
		return nil, err
	}
	p.synced = append(p.synced, topologySynced, reg.HasSynced)
	return p, nil
}

// newPlugin is the plugin before it watches anything (tests start here).
func newPlugin(args *config.NodeNUMAResourceArgs, h fwk.Handle, ext *frameworkext.Extender) *Plugin {
	ext.RegisterBinder(Name)
	return &Plugin{
		handle:    h,
		ext:       ext,
		args:      args,
		state:     NewState(),
		logger:    klog.Background(),
		nodeScore: newScorer(args.ScoringStrategy),
		numaScore: newScorer(args.NUMAScoringStrategy),
	}
}

func (p *Plugin) onPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		p.rejected.Forget(pod.UID)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		if p.state.Forget(pod.UID) {
			p.retryRejected()
		}
		return
	}
	if err := p.state.ObservePod(pod); err != nil {
		// The pod keeps what it held; an operator must fix the annotation.
		klog.FromContext(ctx).Error(err, "Cannot account a pod's CPUs", "pod", klog.KObj(pod))
		if rec := p.handle.EventRecorder(); rec != nil {
			rec.Eventf(pod, nil, corev1.EventTypeWarning, "InvalidResourceStatus", "Scheduling", err.Error())
		}
	}
}

func (p *Plugin) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.rejected.Forget(pod.UID)
		if p.state.Forget(pod.UID) {
			p.retryRejected()
		}
	}
}

// retryRejected moves the pods this plugin turned away back to the active queue.
func (p *Plugin) retryRejected() { p.rejected.Activate(p.logger, p.handle) }

// EventsToRegister: CPUs free up when a pod leaves, and a node's labels decide
// its bind and NUMA policies. Topology changes, freed CPUs and reservations
// that release theirs re-activate the pods this plugin turned away directly
// (frameworkext.Rejected), once its state has the change.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}

type podState struct {
	req *podRequest
	// turnedAway is set when Filter first rejects a node for want of
	// topology or CPUs: the pod is then remembered once per cycle, not once
	// per node (Filter runs on many nodes in parallel).
	turnedAway atomic.Bool
	// holds is the pod's frameworkext.Holds, read once per cycle.
	holds frameworkext.HoldsOnce
}

func (s *podState) Clone() fwk.StateData { return s }

// reserved is what Reserve chose, for PreBind to write and Unreserve to undo.
type reserved struct {
	alloc  Allocation
	status string
}

func (r *reserved) Clone() fwk.StateData { return r }

// PreFilter reads the pod once; pods that can bind CPUs nowhere skip the plugin.
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.ready.Load() {
		if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
			return nil, fwk.AsStatus(errors.New("pods and node topologies are not synced yet"))
		}
		p.ready.Store(true)
	}
	req, err := newPodRequest(pod, p.args.DefaultCPUBindPolicy)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !req.mayBind() && req.numaPolicy == extension.NUMATopologyPolicyNone {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cs.Write(podStateKey, &podState{req: req})
	return nil, nil
}

// PreFilterExtensions: the plugin does not track other pods' requests per cycle.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *Plugin) readPodState(cs fwk.CycleState) (*podState, *fwk.Status) {
	d, err := cs.Read(podStateKey)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("reading %q from cycle state: %w", podStateKey, err))
	}
	st, ok := d.(*podState)
	if !ok {
		return nil, fwk.AsStatus(fmt.Errorf("%q in cycle state is a %T", podStateKey, d))
	}
	return st, nil
}

// Filter keeps a binding pod off nodes that cannot give it the CPUs its
// policies ask for, saying which policy and count failed.
func (p *Plugin) Filter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	st, status := p.readPodState(cs)
	if status != nil {
		return status
	}
	req := st.req
	node := nodeInfo.Node()
	b, binds, err := req.on(node)
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !binds {
		return nil
	}
	view, err := p.state.View(node.Name)
	if err != nil {
		p.turnAway(st, pod)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
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
				narrowed[i].FreeCPUs, narrowed[i].FreeCores = 0, 0
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
	b, binds, err := req.on(node)
	if err != nil || !binds {
		return 0, nil
	}
	view, err := p.state.View(node.Name)
	if err != nil {
		return 0, nil
	}
	view, _ = p.forPod(st, cs, node, view)
	var buf [4]NUMACapacity
	pl, err := fit(view, req, b, p.numaScore.most, buf[:0])
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
	b, binds, err := req.on(nodeInfo.Node())
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if !binds {
		return nil
	}
	view, err := p.state.View(nodeName)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
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
	pl, err := fit(view, req, b, p.numaScore.most, nil)
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

// PreBindPreFlight skips PreBind for pods that bind no CPUs, and for all
// pods when the CPUs ride on the Binding (see Bind).
func (p *Plugin) PreBindPreFlight(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if _, err := cs.Read(reservedKey); err != nil || p.binding.Carried(p.ext, p.handle) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}

// Bind binds the pod with its resource-status (and whatever other Koord
// plugins recorded) in one write; pods that bind no CPUs go on to the next
// binder. Only in effect where this plugin comes before DefaultBinder in the
// profile's bind list.
func (p *Plugin) Bind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	return frameworkext.Bind(ctx, p.handle, cs, pod, nodeName)
}

// PostBind lets go of a reservation's placeholder: the Reservation plugin's
// Bind has just made the CPUs chosen for it the reservation's own, which
// holds them from then on (through frameworkext.Holds); the placeholder itself
// never runs.
func (p *Plugin) PostBind(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	if reservationutil.PlaceholderOf(pod) == "" {
		return
	}
	if _, err := cs.Read(reservedKey); err == nil {
		p.state.Forget(pod.UID)
	}
}

// PreBind writes the chosen CPUs on the pod for koordlet, before the pod is
// bound, so that a bound pod always says which CPUs it holds: in profiles
// whose first binder is DefaultBinder. Otherwise Bind carries them.
func (p *Plugin) PreBind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	d, err := cs.Read(reservedKey)
	if err != nil || p.binding.Carried(p.ext, p.handle) {
		return nil
	}
	r := d.(*reserved)
	if s := p.stillAssumed(pod, r.alloc); s != nil {
		return s
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{extension.AnnotationResourceStatus: r.status}}})
	if err != nil {
		return fwk.AsStatus(err)
	}
	if _, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fwk.AsStatus(fmt.Errorf("writing annotation %s: %w", extension.AnnotationResourceStatus, err))
	}
	return nil
}

// stillAssumed refuses the binding if the CPUs Reserve held for pod were
// bound to another pod meanwhile.
func (p *Plugin) stillAssumed(pod *corev1.Pod, alloc Allocation) *fwk.Status {
	if !p.state.StillAssumed(pod.UID) {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("CPUs %s were bound to another pod meanwhile", alloc.CPUs))
	}
	return nil
}
