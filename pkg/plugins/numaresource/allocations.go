package numaresource

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Allocations records which CPUs each pod holds on each node. It is rebuilt
// from the pods' resource-status annotations (so a restarted scheduler knows
// what is taken) and extended by the scheduler's own assumptions between
// Reserve and binding. No CPU is ever recorded for two pods: Assume checks
// and records under one lock.
type Allocations struct {
	mu    sync.RWMutex
	nodes map[string]*nodeAllocations
	// podNode finds a pod's node when only its UID is known (deletes).
	podNode map[types.UID]string
}

type nodeAllocations struct {
	byPod map[types.UID]cpuset.CPUSet
	held  cpuset.CPUSet
}

// NewAllocations returns an empty record.
func NewAllocations() *Allocations {
	return &Allocations{nodes: map[string]*nodeAllocations{}, podNode: map[types.UID]string{}}
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

// Assume records cpus for a pod on a node, unless any of them is held by
// another pod (then it returns a *Conflict and records nothing). Recording the
// same pod again replaces its previous CPUs.
func (a *Allocations) Assume(node string, uid types.UID, cpus cpuset.CPUSet) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if prev, ok := a.podNode[uid]; ok && prev != node {
		a.forgetLocked(uid)
	}
	n := a.nodes[node]
	if n == nil {
		n = &nodeAllocations{byPod: map[types.UID]cpuset.CPUSet{}, held: cpuset.New()}
		a.nodes[node] = n
	}
	own := n.byPod[uid]
	if overlap := n.held.Difference(own).Intersection(cpus); !overlap.IsEmpty() {
		for holder, held := range n.byPod {
			if holder != uid && !held.Intersection(overlap).IsEmpty() {
				return &Conflict{Node: node, CPUs: held.Intersection(overlap), Holder: holder}
			}
		}
	}
	n.held = n.held.Difference(own).Union(cpus)
	n.byPod[uid] = cpus
	a.podNode[uid] = node
	return nil
}

// Forget releases whatever a pod holds (Unreserve, deletion, completion).
func (a *Allocations) Forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetLocked(uid)
}

func (a *Allocations) forgetLocked(uid types.UID) {
	node, ok := a.podNode[uid]
	if !ok {
		return
	}
	delete(a.podNode, uid)
	n := a.nodes[node]
	if n == nil {
		return
	}
	n.held = n.held.Difference(n.byPod[uid])
	delete(n.byPod, uid)
	if len(n.byPod) == 0 {
		delete(a.nodes, node)
	}
}

// ObservePod records (or releases) a pod's CPUs from its resource-status, as
// the pod informer delivers it. A pod that finished or carries no cpuset
// holds nothing. A malformed annotation or a conflict with another pod is
// returned and the pod's previous record is kept, so nothing is lost.
func (a *Allocations) ObservePod(pod *corev1.Pod) error {
	if pod.Spec.NodeName == "" {
		return nil
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		a.Forget(pod.UID)
		return nil
	}
	status, err := extension.GetResourceStatus(pod.Annotations)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if status.CPUs().IsEmpty() {
		// An assumed pod's annotation may not have arrived yet: keep what we hold.
		return nil
	}
	return a.Assume(pod.Spec.NodeName, pod.UID, status.CPUs())
}

// Held is every CPU held on a node.
func (a *Allocations) Held(node string) cpuset.CPUSet {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if n := a.nodes[node]; n != nil {
		return n.held
	}
	return cpuset.New()
}

// Available is what a node can still hand out: all its CPUs, less kubelet's
// reserved CPUs, the CPUs kubelet pinned for its own pods, and every CPU held
// by a pod here. info must come from extension.ParseNUMAInfo.
func Available(info *extension.NUMAInfo, held cpuset.CPUSet) cpuset.CPUSet {
	return info.AllCPUs().Difference(info.ReservedCPUs()).Difference(info.KubeletPinnedCPUs()).Difference(held)
}
