package numaresource

import (
	"sort"

	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Request is what a binding pod needs.
type Request struct {
	// Count is the number of logical CPUs.
	Count int
	// Policy is FullPCPUs (whole physical cores) or SpreadByPCPUs (one thread
	// per core first).
	Policy extension.CPUBindPolicy
	// SingleNUMANode requires every CPU from one NUMA node.
	SingleNUMANode bool
	// Pack prefers the fullest NUMA node and socket that can hold the pod
	// (numaScoringStrategy MostAllocated) over the least-used one.
	Pack bool
}

// Choose picks req.Count CPUs out of available. It keeps the pod on one NUMA
// node when one can hold it (the least-used such node, or the fullest with
// Pack), else within one socket, else across sockets using as few NUMA nodes
// as it can. The result depends only on its inputs.
func (t *Topology) Choose(available cpuset.CPUSet, req Request) (cpuset.CPUSet, error) {
	available = available.Intersection(t.all)
	caps := t.Capacity(available)
	// Fits gives the reason when it cannot be done, and Filter uses it too.
	if err := Fits(caps, t.threadsPerCore, req); err != nil {
		return cpuset.New(), err
	}
	full := req.Policy != extension.CPUBindPolicySpreadByPCPUs
	need := req.Count
	if full {
		need = req.Count / t.threadsPerCore
	}
	capacity := func(c NUMACapacity) int {
		if full {
			return c.FreeCores
		}
		return c.FreeCPUs
	}
	// Most free first (least free with Pack); lowest id on ties, so the
	// choice is deterministic.
	sort.SliceStable(caps, func(i, j int) bool {
		if caps[i].FreeCPUs != caps[j].FreeCPUs {
			return (caps[i].FreeCPUs > caps[j].FreeCPUs) != req.Pack
		}
		return caps[i].ID < caps[j].ID
	})
	// SpreadByPCPUs takes one thread of each core before any second
	// thread: a NUMA node that can give the pod that comes before one that
	// would double up on cores, whichever the ordering prefers.
	if !full {
		for _, c := range caps {
			if c.SpreadCores >= need {
				return t.take(available, []int{c.ID}, need, full), nil
			}
		}
	}
	for _, c := range caps {
		if capacity(c) >= need {
			return t.take(available, []int{c.ID}, need, full), nil
		}
	}

	// Within one socket: the one with the most free CPUs that can hold it.
	bySocket := map[int][]int{}
	socketCap, socketFree := map[int]int{}, map[int]int{}
	var sockets []int
	order := make([]int, 0, len(caps))
	free := map[int]int{}
	for _, c := range caps {
		free[c.ID] = c.FreeCPUs
		if _, ok := bySocket[c.Socket]; !ok {
			sockets = append(sockets, c.Socket)
		}
		bySocket[c.Socket] = append(bySocket[c.Socket], c.ID)
		socketCap[c.Socket] += capacity(c)
		socketFree[c.Socket] += c.FreeCPUs
		order = append(order, c.ID)
	}
	sort.SliceStable(sockets, func(i, j int) bool {
		if socketFree[sockets[i]] != socketFree[sockets[j]] {
			return (socketFree[sockets[i]] > socketFree[sockets[j]]) != req.Pack
		}
		return sockets[i] < sockets[j]
	})
	for _, s := range sockets {
		if socketCap[s] >= need {
			return t.take(available, bySocket[s], need, full), nil
		}
	}
	// Across sockets (Fits checked the total). Freest NUMA nodes first even
	// with Pack: the pod spans as few NUMA nodes as possible.
	if req.Pack {
		sort.SliceStable(order, func(i, j int) bool { return free[order[i]] > free[order[j]] })
	}
	return t.take(available, order, need, full), nil
}

// take collects need units from the NUMA nodes in the given order: whole free
// cores, or for SpreadByPCPUs one free thread per core before any second one.
func (t *Topology) take(available cpuset.CPUSet, numaOrder []int, need int, full bool) cpuset.CPUSet {
	var picked []int
	if full {
		for _, n := range numaOrder {
			for _, k := range t.numaCores[n] {
				if need == 0 {
					return cpuset.New(picked...)
				}
				cpus := t.coreCPUs[k]
				whole := true
				for _, cpu := range cpus {
					if !available.Contains(cpu) {
						whole = false
						break
					}
				}
				if whole {
					picked = append(picked, cpus...)
					need--
				}
			}
		}
		return cpuset.New(picked...)
	}
	// One pass per thread position over every NUMA node in order: a pod
	// spanning NUMA nodes gets the first threads of the next node before any
	// second thread of the first.
	taken := map[int]bool{}
	for pass := 0; pass < t.threadsPerCore && need > 0; pass++ {
		for _, n := range numaOrder {
			for _, k := range t.numaCores[n] {
				if need == 0 {
					break
				}
				// The pass-th free thread of this core, if it has one.
				seen := 0
				for _, cpu := range t.coreCPUs[k] {
					if !available.Contains(cpu) {
						continue
					}
					if seen == pass && !taken[cpu] {
						picked = append(picked, cpu)
						taken[cpu] = true
						need--
						break
					}
					seen++
				}
			}
		}
	}
	return cpuset.New(picked...)
}
