package numaresource

import (
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Allocation is what one pod holds on its node.
type Allocation struct {
	CPUs cpuset.CPUSet
	// Exclusive keeps other pods with the same policy off this pod's cores
	// (PCPULevel) or NUMA nodes (NUMANodeLevel).
	Exclusive extension.CPUExclusivePolicy
	// Memory is bytes of memory per NUMA node id.
	Memory map[int]int64

	// assumed is set from Reserve until the informer shows the pod bound.
	assumed bool
}

func (a Allocation) empty() bool { return a.CPUs.IsEmpty() && len(a.Memory) == 0 }

// State is the plugin's view of every node: its topology, from koordlet's
// numa-info ConfigMap, and what each pod on it holds. It is rebuilt from the
// API server (ConfigMaps and pods' resource-status annotations) and extended
// by the scheduler's own assumptions between Reserve and binding. No CPU is
// ever recorded for two pods: Assume checks and records under one lock.
type State struct {
	mu    sync.RWMutex
	nodes map[string]*nodeState
	// podNode finds a pod's node when only its UID is known (deletes).
	podNode map[types.UID]string
	// evicted are assumed pods whose CPUs turned out to belong to a bound pod.
	evicted map[types.UID]bool
	// views publishes each node's built view (node name → *NodeView) to
	// Filter and Score, which read it under viewsMu alone, held only to read
	// or replace an entry; none means "build it". A plain map, not a
	// sync.Map, for the cache misses a lookup costs (see loadaware's
	// usageCache).
	viewsMu sync.RWMutex
	views   map[string]*NodeView
	// policies are each node's policy labels, parsed when the Node changes
	// (SetNodePolicies) and carried in its view: Filter and Score need them
	// for every binding pod on every node, and reading them from the Node's
	// labels was more than a third of the plugin's Filter time in
	// BenchmarkPaired's binding mix (280 of 740 ms of CPU), the label map
	// being one more cache miss per node.
	policies map[string]nodePolicies
}

type nodeState struct {
	// info and topo come from the numa-info ConfigMap; topoErr says why they
	// are missing (not published yet, or malformed).
	info    *extension.NUMAInfo
	topo    *Topology
	topoErr error

	pods map[types.UID]Allocation
	held cpuset.CPUSet
	// view is derived from the above and rebuilt lazily after a change;
	// State.views publishes it.
	view *NodeView
}

// invalidate drops node's view after a change; the next View builds it again.
func (s *State) invalidate(node string, n *nodeState) {
	n.view = nil
	s.setView(node, nil)
}

// setView publishes node's view (nil: none built).
func (s *State) setView(node string, v *NodeView) {
	s.viewsMu.Lock()
	defer s.viewsMu.Unlock()
	if v == nil {
		delete(s.views, node)
	} else {
		s.views[node] = v
	}
}

// NodeView is a node's free capacity, computed once per change so that
// Filter and Score only compare numbers. It is never modified once built.
type NodeView struct {
	// threadsPerCore is Topo's, so that Filter needs not read Topo.
	threadsPerCore int
	// Caps are the free CPUs and cores per NUMA node, in capsInline when
	// the node has up to two NUMA nodes (most), so that Filter reads one
	// object per node, not two: each is a cache miss by the time the next
	// pod gets to the node.
	Caps       []NUMACapacity
	capsInline [2]NUMACapacity
	// Available is Allocatable less every CPU a pod holds.
	Available cpuset.CPUSet
	Topo      *Topology
	// Counted once per view for Score: allocatable and available CPUs,
	// memory given to pods.
	allocatableCPUs, availableCPUs int
	memoryUsed                     int64
	// MemoryTotal is the memory of all NUMA nodes.
	MemoryTotal int64

	Info *extension.NUMAInfo
	// Allocatable is every CPU pods may be bound to: all CPUs less kubelet's
	// reserved CPUs and the CPUs kubelet pinned for its own pods.
	Allocatable cpuset.CPUSet
	// PCPUExclusive is every CPU on a core held by a PCPULevel pod;
	// NUMAExclusive every NUMA node holding a NUMANodeLevel pod.
	PCPUExclusive cpuset.CPUSet
	NUMAExclusive map[int]bool
	// MemoryFree is bytes of memory not yet given to pods, per NUMA node.
	MemoryFree map[int]int64
	// pcpuCaps are the capacities left to a PCPULevel-exclusive pod (Available
	// less PCPUExclusive), nil when that takes nothing away.
	pcpuCaps []NUMACapacity
	// policies are the node's policy labels as its Node events said, nil
	// when none has come yet (then the Node object's labels are read).
	policies *nodePolicies
}

// policiesFor are the node's policies: its view's, or its labels' when it
// has no view or the view has none.
func (v *NodeView) policiesFor(node *corev1.Node) nodePolicies {
	if v != nil && v.policies != nil {
		return *v.policies
	}
	return policiesOf(node.Labels)
}

// NewState returns an empty state.
func NewState() *State {
	return &State{nodes: map[string]*nodeState{}, podNode: map[types.UID]string{}, evicted: map[types.UID]bool{},
		views: map[string]*NodeView{}, policies: map[string]nodePolicies{}}
}

// Conflict says that CPUs are already held by another pod.
type Conflict struct {
	Node   string
	CPUs   cpuset.CPUSet
	Holder types.UID
}

func (c *Conflict) Error() string {
	return fmt.Sprintf("CPUs %s on node %s are already held by pod %s", c.CPUs, c.Node, c.Holder)
}

func (s *State) node(name string) *nodeState {
	n := s.nodes[name]
	if n == nil {
		n = &nodeState{pods: map[types.UID]Allocation{}, held: cpuset.New(), topoErr: errNoTopology}
		s.nodes[name] = n
	}
	return n
}

// errNoTopology is replaced by a message naming the node's ConfigMap.
var errNoTopology = errors.New("not found")

// SetTopology records a node's parsed numa-info ConfigMap, or the error that
// parsing it gave (then the node cannot bind CPUs until it is fixed).
func (s *State) SetTopology(node string, info *extension.NUMAInfo, err error) {
	var topo *Topology
	if err == nil {
		topo, err = NewTopology(info.CPUTopology)
		if err != nil {
			err = fmt.Errorf("configmap %s/%s key %s: %w", extension.NUMAInfoNamespace, extension.NUMAInfoConfigMapName(node), extension.NUMAInfoKeyCPUTopology, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(node)
	if err != nil {
		n.info, n.topo, n.topoErr = nil, nil, err
	} else {
		n.info, n.topo, n.topoErr = info, topo, nil
	}
	s.invalidate(node, n)
}

// SetNodePolicies records a node's policy labels as its Node now has them.
func (s *State) SetNodePolicies(node string, p nodePolicies) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.policies[node]; ok && old.equal(p) {
		return
	}
	s.policies[node] = p
	if n := s.nodes[node]; n != nil {
		s.invalidate(node, n)
	}
}

// RemoveNodePolicies forgets a deleted Node's policies.
func (s *State) RemoveNodePolicies(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.policies, node)
	if n := s.nodes[node]; n != nil {
		s.invalidate(node, n)
	}
}

// RemoveTopology forgets a node's topology (its ConfigMap was deleted). What
// pods hold there is kept: they still run.
func (s *State) RemoveTopology(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[node]
	if n == nil {
		return
	}
	n.info, n.topo, n.topoErr = nil, nil, errNoTopology
	s.invalidate(node, n)
	s.dropIfEmpty(node, n)
}

func (s *State) dropIfEmpty(name string, n *nodeState) {
	if len(n.pods) == 0 && n.topo == nil && errors.Is(n.topoErr, errNoTopology) {
		delete(s.nodes, name)
		s.setView(name, nil)
	}
}

// Assume records what the scheduler chose for a pod in Reserve, unless any of
// its CPUs is held by another pod (then it returns a *Conflict and records
// nothing). Recording the same pod again replaces its previous allocation.
func (s *State) Assume(node string, uid types.UID, a Allocation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.assumed = true
	return s.recordLocked(node, uid, a, false)
}

// recordLocked records a, failing on CPUs another pod holds. With
// evictAssumed, CPUs held only by assumed (not yet bound) pods are taken from
// them instead: a pod the API server shows bound is a fact, an assumption is
// not (another scheduler instance may have bound it during a handover).
func (s *State) recordLocked(node string, uid types.UID, a Allocation, evictAssumed bool) error {
	n := s.node(node)
	own := n.pods[uid].CPUs
	if overlap := n.held.Difference(own).Intersection(a.CPUs); !overlap.IsEmpty() {
		var evict []types.UID
		for holder, held := range n.pods {
			if holder == uid || held.CPUs.Intersection(overlap).IsEmpty() {
				continue
			}
			if !evictAssumed || !held.assumed {
				return &Conflict{Node: node, CPUs: held.CPUs.Intersection(overlap), Holder: holder}
			}
			evict = append(evict, holder)
		}
		for _, holder := range evict {
			s.forgetLocked(holder)
			s.evicted[holder] = true
		}
		n = s.node(node)
	}
	if prev, ok := s.podNode[uid]; ok && prev != node {
		s.forgetLocked(uid)
	}
	n.held = n.held.Difference(n.pods[uid].CPUs).Union(a.CPUs)
	n.pods[uid] = a
	s.invalidate(node, n)
	s.podNode[uid] = node
	delete(s.evicted, uid)
	return nil
}

// StillAssumed says whether the CPUs assumed for a pod are still its own; they
// are not once a pod bound elsewhere was found holding them.
func (s *State) StillAssumed(uid types.UID) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.evicted[uid]
}

// Forget releases whatever a pod holds (Unreserve, deletion, completion) and
// says whether it held anything.
func (s *State) Forget(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, held := s.podNode[uid]
	s.forgetLocked(uid)
	delete(s.evicted, uid)
	return held
}

func (s *State) forgetLocked(uid types.UID) {
	node, ok := s.podNode[uid]
	if !ok {
		return
	}
	delete(s.podNode, uid)
	n := s.nodes[node]
	if n == nil {
		return
	}
	n.held = n.held.Difference(n.pods[uid].CPUs)
	delete(n.pods, uid)
	s.invalidate(node, n)
	s.dropIfEmpty(node, n)
}

// ObservePod records (or releases) what a pod holds, from its resource-status
// and resource-spec annotations, as the pod informer delivers it. A pod that
// finished holds nothing. A malformed annotation or a conflict with another
// pod is returned and the pod's previous record is kept, so nothing is lost.
func (s *State) ObservePod(pod *corev1.Pod) error {
	if pod.Spec.NodeName == "" {
		return nil
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		s.Forget(pod.UID)
		return nil
	}
	a, err := AllocationOf(pod)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if a.empty() {
		// An assumed pod's annotation may not have arrived yet: keep what we hold.
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.nodes[pod.Spec.NodeName]; n != nil && n.topo != nil {
		if missing := a.CPUs.Difference(n.topo.CPUs()); !missing.IsEmpty() {
			return fmt.Errorf("pod %s/%s: annotation %s names CPUs %s that node %s does not have", pod.Namespace, pod.Name,
				extension.AnnotationResourceStatus, missing, pod.Spec.NodeName)
		}
	}
	return s.recordLocked(pod.Spec.NodeName, pod.UID, a, true)
}

// AllocationOf reads what a bound pod holds from its annotations.
func AllocationOf(pod *corev1.Pod) (Allocation, error) {
	status, err := extension.GetResourceStatus(pod.Annotations)
	if err != nil {
		return Allocation{}, err
	}
	a := Allocation{CPUs: status.CPUs(), Memory: status.NUMAMemory()}
	if !a.CPUs.IsEmpty() {
		// The exclusivity a pod asked for binds it for as long as it runs.
		spec, err := extension.GetResourceSpec(pod.Annotations)
		if err != nil {
			return Allocation{}, err
		}
		a.Exclusive = spec.PreferredCPUExclusivePolicy
	}
	return a, nil
}

// Held is every CPU held on a node.
func (s *State) Held(node string) cpuset.CPUSet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := s.nodes[node]; n != nil {
		return n.held
	}
	return cpuset.New()
}

// Built is node's view when it is built, nil otherwise: no lock, no build.
func (s *State) Built(node string) *NodeView {
	s.viewsMu.RLock()
	defer s.viewsMu.RUnlock()
	return s.views[node]
}

// View is a node's free capacity, or the error that keeps it from binding
// CPUs (no numa-info ConfigMap, or a malformed one).
func (s *State) View(node string) (*NodeView, error) {
	if v := s.Built(node); v != nil {
		return v, nil
	}
	// Nodes without a topology are common (no koordlet there): answered
	// under the read lock, so that Filter's goroutines do not queue.
	s.mu.RLock()
	n := s.nodes[node]
	if n == nil || n.topo == nil {
		defer s.mu.RUnlock()
		return nil, s.noViewLocked(node, n)
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	n = s.nodes[node]
	if n == nil || n.topo == nil {
		return nil, s.noViewLocked(node, n)
	}
	if n.view == nil {
		pol, known := s.policies[node]
		n.view = n.buildView()
		if known {
			n.view.policies = &pol
		}
		s.setView(node, n.view)
	}
	return n.view, nil
}

// noViewLocked says why node has no view.
func (s *State) noViewLocked(node string, n *nodeState) error {
	err := errNoTopology
	if n != nil {
		err = n.topoErr
	}
	if errors.Is(err, errNoTopology) {
		return fmt.Errorf("configmap %s/%s not found: koordlet has not published this node's CPU topology",
			extension.NUMAInfoNamespace, extension.NUMAInfoConfigMapName(node))
	}
	return err
}

func (n *nodeState) buildView() *NodeView {
	v := &NodeView{
		Info:           n.info,
		Topo:           n.topo,
		threadsPerCore: n.topo.ThreadsPerCore(),
		Allocatable:    Allocatable(n.info),
		NUMAExclusive:  map[int]bool{},
		MemoryFree:     map[int]int64{},
	}
	v.Available = v.Allocatable.Difference(n.held)
	v.Caps = n.topo.Capacity(v.Available)
	if len(v.Caps) <= len(v.capsInline) {
		v.Caps = append(v.capsInline[:0], v.Caps...)
	}
	for _, numa := range n.info.NUMANodes {
		v.MemoryFree[int(numa.ID)] = numa.MemoryBytes
		v.MemoryTotal += numa.MemoryBytes
	}
	var pcpu []int
	for _, a := range n.pods {
		for id, m := range a.Memory {
			v.MemoryFree[id] -= m
		}
		switch a.Exclusive {
		case extension.CPUExclusivePolicyPCPULevel:
			pcpu = append(pcpu, n.topo.CoresOf(a.CPUs).UnsortedList()...)
		case extension.CPUExclusivePolicyNUMANodeLevel:
			for _, c := range a.CPUs.UnsortedList() {
				v.NUMAExclusive[n.topo.NUMANodeOf(c)] = true
			}
		}
	}
	v.PCPUExclusive = cpuset.New(pcpu...)
	v.derive()
	return v
}

// derive fills in what Filter and Score read that follows from v's sets and
// maps: the counts Score weighs, and the capacities left to PCPULevel-
// exclusive pods. Called whenever Available changes.
func (v *NodeView) derive() {
	v.allocatableCPUs, v.availableCPUs = v.Allocatable.Size(), v.Available.Size()
	v.memoryUsed = v.MemoryTotal
	for _, free := range v.MemoryFree {
		v.memoryUsed -= free
	}
	v.pcpuCaps = nil
	if !v.PCPUExclusive.IsEmpty() && !v.Available.Intersection(v.PCPUExclusive).IsEmpty() {
		v.pcpuCaps = v.Topo.Capacity(v.Available.Difference(v.PCPUExclusive))
	}
}

// Allocatable is what a node can hand out at all: its CPUs less kubelet's
// reserved CPUs and the CPUs kubelet pinned for its own pods. info must come
// from extension.ParseNUMAInfo.
func Allocatable(info *extension.NUMAInfo) cpuset.CPUSet {
	return info.AllCPUs().Difference(info.ReservedCPUs()).Difference(info.KubeletPinnedCPUs())
}
