package numaresource

import (
	"fmt"
	"sort"

	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Topology is a node's CPUs indexed the ways the chooser needs: by core, by
// NUMA node and by socket. Cores are identified by (socket, core id) since
// Linux core ids repeat across sockets on some machines.
type Topology struct {
	cpus           map[int]extension.CPUInfo
	coreCPUs       map[coreKey][]int
	numaCores      map[int][]coreKey // sorted
	numaSocket     map[int]int
	numaCPUs       map[int]cpuset.CPUSet
	numaIDs        []int // sorted
	threadsPerCore int
	all            cpuset.CPUSet
}

type coreKey struct{ socket, core int32 }

func (k coreKey) less(o coreKey) bool {
	if k.socket != o.socket {
		return k.socket < o.socket
	}
	return k.core < o.core
}

// NewTopology indexes a parsed cpu-topology.
func NewTopology(t extension.CPUTopology) (*Topology, error) {
	topo := &Topology{
		cpus:       map[int]extension.CPUInfo{},
		coreCPUs:   map[coreKey][]int{},
		numaCores:  map[int][]coreKey{},
		numaSocket: map[int]int{},
		numaCPUs:   map[int]cpuset.CPUSet{},
	}
	ids := make([]int, 0, len(t.Detail))
	for _, c := range t.Detail {
		id := int(c.ID)
		if _, dup := topo.cpus[id]; dup {
			return nil, fmt.Errorf("cpu %d listed twice", id)
		}
		topo.cpus[id] = c
		ids = append(ids, id)
		k := coreKey{c.Socket, c.Core}
		if len(topo.coreCPUs[k]) == 0 {
			topo.numaCores[int(c.Node)] = append(topo.numaCores[int(c.Node)], k)
		}
		topo.coreCPUs[k] = append(topo.coreCPUs[k], id)
		if s, ok := topo.numaSocket[int(c.Node)]; ok && s != int(c.Socket) {
			return nil, fmt.Errorf("NUMA node %d spans sockets %d and %d", c.Node, s, c.Socket)
		}
		topo.numaSocket[int(c.Node)] = int(c.Socket)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no CPUs")
	}
	topo.all = cpuset.New(ids...)
	for k := range topo.coreCPUs {
		sort.Ints(topo.coreCPUs[k])
		if n := len(topo.coreCPUs[k]); n > topo.threadsPerCore {
			topo.threadsPerCore = n
		}
	}
	for n := range topo.numaCores {
		cores := topo.numaCores[n]
		sort.Slice(cores, func(i, j int) bool { return cores[i].less(cores[j]) })
		topo.numaIDs = append(topo.numaIDs, n)
	}
	sort.Ints(topo.numaIDs)
	byNUMA := map[int][]int{}
	for _, id := range ids {
		n := int(topo.cpus[id].Node)
		byNUMA[n] = append(byNUMA[n], id)
	}
	for n, cpus := range byNUMA {
		topo.numaCPUs[n] = cpuset.New(cpus...)
	}
	return topo, nil
}

// CPUs is every logical CPU.
func (t *Topology) CPUs() cpuset.CPUSet { return t.all }

// ThreadsPerCore is the SMT width (1 without hyper-threading).
func (t *Topology) ThreadsPerCore() int { return t.threadsPerCore }

// NUMANodeOf is the NUMA node of a CPU.
func (t *Topology) NUMANodeOf(cpu int) int { return int(t.cpus[cpu].Node) }

// NUMANodes are the NUMA node ids, ascending.
func (t *Topology) NUMANodes() []int { return t.numaIDs }

// NUMACPUs is every CPU of one NUMA node.
func (t *Topology) NUMACPUs(id int) cpuset.CPUSet { return t.numaCPUs[id] }

// NUMACores is how many physical cores one NUMA node has.
func (t *Topology) NUMACores(id int) int { return len(t.numaCores[id]) }

// CoresOf is every CPU of the physical cores that cpus touch: what a
// PCPULevel-exclusive pod keeps other such pods away from.
func (t *Topology) CoresOf(cpus cpuset.CPUSet) cpuset.CPUSet {
	var out []int
	seen := map[coreKey]bool{}
	for _, c := range cpus.UnsortedList() {
		info, ok := t.cpus[c]
		if !ok {
			continue
		}
		k := coreKey{info.Socket, info.Core}
		if !seen[k] {
			seen[k] = true
			out = append(out, t.coreCPUs[k]...)
		}
	}
	return cpuset.New(out...)
}
