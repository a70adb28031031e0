package numaresource

import (
	"fmt"

	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// NUMACapacity is what one NUMA node can still give: computed when a node's
// topology or allocations change, so that Filter only compares numbers.
type NUMACapacity struct {
	ID, Socket int
	// FreeCores counts cores whose every thread is available.
	FreeCores int
	// FreeCPUs counts available logical CPUs.
	FreeCPUs int
	// SpreadCores counts cores with at least one available thread: as many
	// CPUs as SpreadByPCPUs can take one per core.
	SpreadCores int
	// Cores and CPUs are the NUMA node's totals.
	Cores, CPUs int
}

// Capacity summarises available per NUMA node, in NUMA id order.
func (t *Topology) Capacity(available cpuset.CPUSet) []NUMACapacity {
	caps := make([]NUMACapacity, 0, len(t.numaIDs))
	for _, id := range t.numaIDs {
		c := NUMACapacity{ID: id, Socket: t.numaSocket[id], Cores: len(t.numaCores[id]), CPUs: t.numaCPUs[id].Size()}
		for _, k := range t.numaCores[id] {
			free := 0
			for _, cpu := range t.coreCPUs[k] {
				if available.Contains(cpu) {
					free++
				}
			}
			c.FreeCPUs += free
			if free > 0 {
				c.SpreadCores++
			}
			if free == len(t.coreCPUs[k]) {
				c.FreeCores++
			}
		}
		caps = append(caps, c)
	}
	return caps
}

// Fits says whether Choose would succeed for req on a node with these
// capacities, without building any cpuset; the error says why not.
func Fits(caps []NUMACapacity, threadsPerCore int, req Request) error {
	if req.Count <= 0 {
		return fmt.Errorf("cannot bind %d CPUs", req.Count)
	}
	full := req.Policy != extension.CPUBindPolicySpreadByPCPUs
	need, unit := req.Count, "free CPUs"
	if full {
		if req.Count%threadsPerCore != 0 {
			return fmt.Errorf("%s needs a multiple of %d CPUs (threads per core) on this node, got %d", extension.CPUBindPolicyFullPCPUs, threadsPerCore, req.Count)
		}
		need, unit = req.Count/threadsPerCore, "free whole cores"
	}
	total, best := 0, 0
	for _, c := range caps {
		have := c.FreeCPUs
		if full {
			have = c.FreeCores
		}
		total += have
		best = max(best, have)
	}
	if best >= need {
		return nil
	}
	if req.SingleNUMANode {
		return fmt.Errorf("no NUMA node has %d %s (the most any has is %d)", need, unit, best)
	}
	if total < need {
		return fmt.Errorf("the node has %d %s, %d needed", total, unit, need)
	}
	return nil
}
