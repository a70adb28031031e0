package numaresource

import (
	"fmt"
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
}

// Choose picks req.Count CPUs out of available. It keeps the pod on one NUMA
// node when one can hold it (the least-used such node), else within one
// socket, else across sockets using as few NUMA nodes as it can. The result
// depends only on its inputs.
func (t *Topology) Choose(available cpuset.CPUSet, req Request) (cpuset.CPUSet, error) {
	if req.Count <= 0 {
		return cpuset.New(), fmt.Errorf("cannot bind %d CPUs", req.Count)
	}
	full := req.Policy != extension.CPUBindPolicySpreadByPCPUs
	need := req.Count
	if full {
		if req.Count%t.threadsPerCore != 0 {
			return cpuset.New(), fmt.Errorf("%s needs a multiple of %d CPUs (threads per core) on this node, got %d", extension.CPUBindPolicyFullPCPUs, t.threadsPerCore, req.Count)
		}
		need = req.Count / t.threadsPerCore
	}
	available = available.Intersection(t.all)

	// Capacity per NUMA node: whole free cores (FullPCPUs) or free threads.
	type numaFree struct {
		id, socket, capacity, freeCPUs int
	}
	nodes := make([]numaFree, 0, len(t.numaIDs))
	for _, id := range t.numaIDs {
		nf := numaFree{id: id, socket: t.numaSocket[id]}
		for _, k := range t.numaCores[id] {
			free := 0
			for _, cpu := range t.coreCPUs[k] {
				if available.Contains(cpu) {
					free++
				}
			}
			nf.freeCPUs += free
			if full {
				if free == len(t.coreCPUs[k]) {
					nf.capacity++
				}
			} else {
				nf.capacity += free
			}
		}
		nodes = append(nodes, nf)
	}
	// Most free first; lowest id on ties, so the choice is deterministic.
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].freeCPUs != nodes[j].freeCPUs {
			return nodes[i].freeCPUs > nodes[j].freeCPUs
		}
		return nodes[i].id < nodes[j].id
	})

	unit := "free CPUs"
	if full {
		unit = "free whole cores"
	}
	for _, n := range nodes {
		if n.capacity >= need {
			return t.take(available, []int{n.id}, need, full), nil
		}
	}
	if req.SingleNUMANode {
		best := 0
		for _, n := range nodes {
			best = max(best, n.capacity)
		}
		return cpuset.New(), fmt.Errorf("no NUMA node has %d %s (the most any has is %d)", need, unit, best)
	}

	// Within one socket: the one with the most free CPUs that can hold it.
	bySocket := map[int][]int{}
	socketCap, socketFree := map[int]int{}, map[int]int{}
	var sockets []int
	for _, n := range nodes {
		if _, ok := bySocket[n.socket]; !ok {
			sockets = append(sockets, n.socket)
		}
		bySocket[n.socket] = append(bySocket[n.socket], n.id)
		socketCap[n.socket] += n.capacity
		socketFree[n.socket] += n.freeCPUs
	}
	sort.SliceStable(sockets, func(i, j int) bool {
		if socketFree[sockets[i]] != socketFree[sockets[j]] {
			return socketFree[sockets[i]] > socketFree[sockets[j]]
		}
		return sockets[i] < sockets[j]
	})
	for _, s := range sockets {
		if socketCap[s] >= need {
			return t.take(available, bySocket[s], need, full), nil
		}
	}

	total := 0
	order := make([]int, 0, len(nodes))
	for _, n := range nodes {
		total += n.capacity
		order = append(order, n.id)
	}
	if total < need {
		return cpuset.New(), fmt.Errorf("the node has %d %s, %d needed", total, unit, need)
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
	for _, n := range numaOrder {
		taken := map[int]bool{}
		for pass := 0; pass < t.threadsPerCore && need > 0; pass++ {
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
		if need == 0 {
			break
		}
	}
	return cpuset.New(picked...)
}
