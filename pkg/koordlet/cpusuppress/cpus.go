package cpusuppress

import (
	"sort"

	"k8s.io/utils/cpuset"
)

// Pick chooses n CPUs of pool for BE pods. Whole physical cores come first
// (both threads in the pool), so a BE thread rarely shares a core with an LS
// thread through SMT; cores are spread over NUMA nodes, highest core ids
// first (the scheduler binds from the lowest); CPUs BE had before are kept
// where the rest allows, so that a small change moves few tasks. Fewer than
// n CPUs in the pool gives the whole pool.
func Pick(pool cpuset.CPUSet, cpus []CPU, n int, prev cpuset.CPUSet) cpuset.CPUSet {
	if n >= pool.Size() {
		return pool
	}
	type core struct {
		key         [2]int // node, core
		ids         []int
		whole, kept bool
		rank        int // position within its NUMA node, highest core id first
	}
	siblings := map[[2]int]int{}
	byKey := map[[2]int]*core{}
	for _, c := range cpus {
		k := [2]int{c.Node, c.Core}
		siblings[k]++
		if !pool.Contains(c.ID) {
			continue
		}
		if byKey[k] == nil {
			byKey[k] = &core{key: k}
		}
		byKey[k].ids = append(byKey[k].ids, c.ID)
		if prev.Contains(c.ID) {
			byKey[k].kept = true
		}
	}
	cores := make([]*core, 0, len(byKey))
	perNode := map[int][]*core{}
	for k, c := range byKey {
		c.whole = len(c.ids) == siblings[k]
		sort.Ints(c.ids)
		cores = append(cores, c)
		perNode[k[0]] = append(perNode[k[0]], c)
	}
	for _, cs := range perNode {
		sort.Slice(cs, func(i, j int) bool { return cs[i].key[1] > cs[j].key[1] })
		for i, c := range cs {
			c.rank = i
		}
	}
	sort.Slice(cores, func(i, j int) bool {
		a, b := cores[i], cores[j]
		switch {
		case a.whole != b.whole:
			return a.whole
		case a.kept != b.kept:
			return a.kept
		case a.rank != b.rank:
			return a.rank < b.rank
		}
		return a.key[0] < b.key[0]
	})
	var out []int
	for _, c := range cores {
		for _, id := range c.ids {
			if len(out) == n {
				return cpuset.New(out...)
			}
			out = append(out, id)
		}
	}
	// CPUs of the pool the topology does not list (it is re-read each
	// minute): take them last rather than never.
	for _, id := range pool.List() {
		if len(out) == n {
			break
		}
		if !cpuset.New(out...).Contains(id) {
			out = append(out, id)
		}
	}
	return cpuset.New(out...)
}
