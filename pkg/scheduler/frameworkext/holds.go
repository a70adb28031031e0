package frameworkext

// The reservation holds contract: the Reservation plugin decides which
// reservations a pod may consume; NodeNUMAResource and LoadAwareScheduling
// must count what the others hold against it. The Reservation plugin's
// PreFilter leaves a Holds in the cycle state; the others read it.

import (
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/cpuset"
)

// Hold is what one Available reservation keeps on its node, as other
// scheduler plugins need it: the Reservation plugin decides who may use a
// reservation; NodeNUMAResource and LoadAwareScheduling must count what it
// holds against everyone else.
type Hold struct {
	Name string
	UID  types.UID
	// MilliCPU and Memory are what is left of it (allocatable − allocated).
	MilliCPU, Memory int64
	// CPUs and NUMAMemory (bytes per NUMA node id) are the specific CPUs
	// and memory NodeNUMAResource chose for its template, from its
	// resource-status annotation; empty when the template binds none.
	CPUs       cpuset.CPUSet
	NUMAMemory map[int]int64
	// Consumers are the pods using it: what they hold is theirs now.
	Consumers []types.UID
}

// Pinned reports whether the reservation holds specific CPUs or NUMA memory.
func (h *Hold) Pinned() bool { return !h.CPUs.IsEmpty() || len(h.NUMAMemory) > 0 }

// HoldsStateKey is where the Reservation plugin's PreFilter leaves a pod's
// Holds in its scheduling cycle.
const HoldsStateKey fwk.StateKey = "koord.sh/reservation-holds"

// Holds relates the pod of one scheduling cycle to the reservations of any
// node.
type Holds interface {
	fwk.StateData
	// On returns the reservation the pod would consume on node (after
	// Reserve, the one it took) and the node's other reservations, which
	// are held against it. Nodes without reservations cost no allocation.
	// The list is shared: read it, do not change it.
	On(node *corev1.Node) (use *Hold, held []Hold)
	// Held is the CPU (milli-cores) and memory of held in total: what
	// LoadAwareScheduling adds on every node, without walking the list.
	Held(node *corev1.Node) (milliCPU, memory int64)
	// Most is at least what any one node's reservations hold against the
	// pod, and whether any reservation pins CPUs: a per-node check that
	// passes even with the most held, or that cares only about pinned CPUs,
	// need not ask On or Held for every node.
	Most() (milliCPU, memory int64, pinned bool)
}

// HoldsOf returns the pod's Holds, nil when the Reservation plugin is not in
// the profile (then no reservation exists for the scheduler).
func HoldsOf(cs fwk.CycleState) Holds {
	d, err := cs.Read(HoldsStateKey)
	if err != nil {
		return nil
	}
	h, _ := d.(Holds)
	return h
}

// HoldsOnce reads a cycle's Holds from the cycle state once, for a plugin
// that needs it on every node: the plugin keeps one in its own per-cycle
// state (the Reservation plugin's PreFilter may run after the plugin's own,
// so it cannot be read there). The zero value is ready.
type HoldsOnce struct{ p atomic.Pointer[holdsRef] }

type holdsRef struct{ Holds }

// Get is HoldsOf(cs), read on the first call.
func (o *HoldsOnce) Get(cs fwk.CycleState) Holds {
	if h := o.p.Load(); h != nil {
		return h.Holds
	}
	h := &holdsRef{HoldsOf(cs)}
	o.p.Store(h)
	return h.Holds
}
