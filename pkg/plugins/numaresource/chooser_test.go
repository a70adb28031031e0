package numaresource

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// linuxTopology numbers CPUs the way Linux does on SMT servers: thread 0 of
// every core first, then thread 1 (siblings are N and N+cores).
func linuxTopology(t testing.TB, sockets, numaPerSocket, coresPerNUMA, threads int) *Topology {
	t.Helper()
	cores := sockets * numaPerSocket * coresPerNUMA
	var detail []extension.CPUInfo
	for th := 0; th < threads; th++ {
		for c := 0; c < cores; c++ {
			numa := c / coresPerNUMA
			detail = append(detail, extension.CPUInfo{ID: int32(th*cores + c), Core: int32(c), Socket: int32(numa / numaPerSocket), Node: int32(numa)})
		}
	}
	topo, err := NewTopology(extension.CPUTopology{Detail: detail})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func choose(t *testing.T, topo *Topology, avail cpuset.CPUSet, req Request) cpuset.CPUSet {
	t.Helper()
	got, err := topo.Choose(avail, req)
	if err != nil {
		t.Fatalf("Choose(%v): %v", req, err)
	}
	if got.Size() != req.Count {
		t.Fatalf("Choose(%v) = %s: %d CPUs", req, got, got.Size())
	}
	if !got.IsSubsetOf(avail) {
		t.Fatalf("Choose(%v) = %s: not all available (%s)", req, got, avail)
	}
	return got
}

func full(n int) Request   { return Request{Count: n, Policy: extension.CPUBindPolicyFullPCPUs} }
func spread(n int) Request { return Request{Count: n, Policy: extension.CPUBindPolicySpreadByPCPUs} }

func numaNodesOf(topo *Topology, cpus cpuset.CPUSet) map[int]bool {
	nodes := map[int]bool{}
	for _, c := range cpus.List() {
		nodes[topo.NUMANodeOf(c)] = true
	}
	return nodes
}

func wholeCores(topo *Topology, cpus cpuset.CPUSet) bool {
	for _, c := range cpus.List() {
		info := topo.cpus[c]
		for _, sib := range topo.coreCPUs[coreKey{info.Socket, info.Core}] {
			if !cpus.Contains(sib) {
				return false
			}
		}
	}
	return true
}

// This machine: one socket, two cores, no SMT.
func TestChooseSmallMachine(t *testing.T) {
	topo := linuxTopology(t, 1, 1, 2, 1)
	if got := choose(t, topo, topo.CPUs(), full(1)); !got.Equals(cpuset.New(0)) {
		t.Errorf("got %s, want 0", got)
	}
	if got := choose(t, topo, cpuset.New(1), full(1)); !got.Equals(cpuset.New(1)) {
		t.Errorf("got %s, want 1", got)
	}
	if _, err := topo.Choose(topo.CPUs(), full(3)); err == nil || !strings.Contains(err.Error(), "the node has 2 free whole cores, 3 needed") {
		t.Errorf("3 of 2 CPUs: %v", err)
	}
}

// 2 sockets × 2 NUMA nodes × 16 cores × 2 threads = 128 CPUs.
func TestChooseTwoSocketServer(t *testing.T) {
	topo := linuxTopology(t, 2, 2, 16, 2)
	all := topo.CPUs()

	if got := choose(t, topo, all, full(4)); !got.Equals(cpuset.New(0, 1, 64, 65)) {
		t.Errorf("FullPCPUs 4 = %s, want two whole cores of NUMA node 0: 0-1,64-65", got)
	}
	if _, err := topo.Choose(all, full(3)); err == nil || !strings.Contains(err.Error(), "multiple of 2") {
		t.Errorf("FullPCPUs 3 on SMT-2: %v", err)
	}
	if got := choose(t, topo, all, spread(4)); !got.Equals(cpuset.New(0, 1, 2, 3)) {
		t.Errorf("SpreadByPCPUs 4 = %s, want one thread of each of four cores: 0-3", got)
	}

	// NUMA node 0 partly used: the next pod goes to the least-used node.
	used := cpuset.New(0, 1, 2, 3, 64, 65, 66, 67)
	if got := choose(t, topo, all.Difference(used), full(4)); !got.Equals(cpuset.New(16, 17, 80, 81)) {
		t.Errorf("after NUMA 0 is partly used: %s, want 16-17,80-81 on NUMA node 1", got)
	}

	// Larger than a NUMA node (16 cores): stays within socket 0.
	big := choose(t, topo, all, full(40))
	if nodes := numaNodesOf(topo, big); len(nodes) != 2 || !nodes[0] || !nodes[1] {
		t.Errorf("40 CPUs spread over NUMA nodes %v, want 0 and 1 (socket 0)", nodes)
	}
	if !wholeCores(topo, big) {
		t.Errorf("40 CPUs %s are not whole cores", big)
	}
	if _, err := topo.Choose(all, Request{Count: 40, Policy: extension.CPUBindPolicyFullPCPUs, SingleNUMANode: true}); err == nil ||
		!strings.Contains(err.Error(), "no NUMA node has 20 free whole cores (the most any has is 16)") {
		t.Errorf("SingleNUMANode larger than a NUMA node: %v", err)
	}
}

// 4 NUMA nodes per socket: a 12-core pod fills two NUMA nodes of one socket.
func TestChooseFourNUMAPerSocket(t *testing.T) {
	topo := linuxTopology(t, 2, 4, 8, 2)
	got := choose(t, topo, topo.CPUs(), full(24))
	nodes := numaNodesOf(topo, got)
	if len(nodes) != 2 {
		t.Errorf("24 CPUs over NUMA nodes %v, want 2", nodes)
	}
	for n := range nodes {
		if topo.numaSocket[n] != 0 {
			t.Errorf("NUMA node %d is on socket %d, want all on socket 0", n, topo.numaSocket[n])
		}
	}
}

// kubelet-reserved CPUs and half-used cores are never part of a whole core.
func TestChooseWithReservedAndFragmentation(t *testing.T) {
	topo := linuxTopology(t, 1, 1, 4, 2)              // CPUs 0-3 thread 0, 4-7 thread 1
	avail := topo.CPUs().Difference(cpuset.New(0, 4)) // kubelet reservedCPUs "0,4"
	if got := choose(t, topo, avail, full(2)); !got.Equals(cpuset.New(1, 5)) {
		t.Errorf("with core 0 reserved: %s, want 1,5", got)
	}
	// Only one thread of each core is free: no whole core, but Spread works.
	half := cpuset.New(0, 1, 2, 3)
	if _, err := topo.Choose(half, full(2)); err == nil {
		t.Error("FullPCPUs from half cores must fail")
	}
	if got := choose(t, topo, half, spread(2)); !got.Equals(cpuset.New(0, 1)) {
		t.Errorf("Spread from half cores: %s", got)
	}
}

// Sixteen 2-CPU FullPCPUs pods on 2 NUMA × 8 cores × 2 threads: pairwise
// disjoint, each one whole core within one NUMA node, and the same answer
// every time for the same input.
func TestChooseSequenceDisjoint(t *testing.T) {
	topo := linuxTopology(t, 1, 2, 8, 2)
	avail := topo.CPUs()
	var all []cpuset.CPUSet
	for i := 0; i < 16; i++ {
		got := choose(t, topo, avail, full(2))
		again := choose(t, topo, avail, full(2))
		if !got.Equals(again) {
			t.Fatalf("not deterministic: %s then %s", got, again)
		}
		if len(numaNodesOf(topo, got)) != 1 || !wholeCores(topo, got) {
			t.Errorf("pod %d got %s: want one whole core in one NUMA node", i, got)
		}
		for j, prev := range all {
			if !got.Intersection(prev).IsEmpty() {
				t.Errorf("pod %d's %s overlaps pod %d's %s", i, got, j, prev)
			}
		}
		all = append(all, got)
		avail = avail.Difference(got)
	}
	if !avail.IsEmpty() {
		t.Errorf("CPUs left over after 16 × 2 on 32: %s", avail)
	}
	if _, err := topo.Choose(avail, full(2)); err == nil {
		t.Error("a 17th pod must not fit")
	}
}

func BenchmarkChoose2x2x16x2(b *testing.B) {
	topo := linuxTopology(b, 2, 2, 16, 2)
	avail := topo.CPUs().Difference(cpuset.New(0, 1, 2, 3, 64, 65, 66, 67))
	for _, req := range []Request{full(4), spread(4), full(40)} {
		b.Run(string(req.Policy)+"-"+strconv.Itoa(req.Count), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := topo.Choose(avail, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Koordinator's SpreadByPCPUs (its cpu accumulator's spread order): one
// thread of every core, across NUMA nodes too, before any second thread.
func TestSpreadThreadOrder(t *testing.T) {
	// 1 socket, 2 NUMA nodes of 4 cores, 2 threads: node 0 is cores 0-3
	// (CPUs 0-3 and 8-11), node 1 cores 4-7 (CPUs 4-7 and 12-15).
	topo := linuxTopology(t, 1, 2, 4, 2)
	all := cpuset.New(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
	// Ten CPUs span both NUMA nodes (a node has 8): the first threads of
	// node 0 and of node 1 come before any second thread.
	if got := choose(t, topo, all, spread(10)); !got.Equals(cpuset.New(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)) {
		t.Errorf("spread(10) across NUMA nodes = %s, want 0-9 (every core's first thread, then two second threads)", got)
	}
	// Six fit one NUMA node (8 CPUs), which Koordinator prefers to
	// spreading over two: doubled up there.
	got := choose(t, topo, all, spread(6))
	if numaNodes := numaNodesOf(topo, got); len(numaNodes) != 1 {
		t.Errorf("spread(6) = %s on NUMA nodes %v, want one", got, numaNodes)
	}
	// Node 0 has 4 free CPUs on 2 whole cores (fewer free CPUs); node 1
	// has 6 free CPUs, one thread or more on each of its 4 cores. Packing
	// (MostAllocated) still picks node 1 for 4 CPUs: there the pod gets
	// one thread of each core, on node 0 it would double up. (Koordinator
	// packs onto node 0; Koord keeps its README's rule, one thread of each
	// core before any second thread, and docs/compatibility.md says so.)
	avail := cpuset.New(0, 1, 8, 9, 4, 5, 6, 7, 12, 13)
	req := spread(4)
	req.Pack = true
	if got := choose(t, topo, avail, req); !got.Equals(cpuset.New(4, 5, 6, 7)) {
		t.Errorf("packed spread(4) = %s, want 4-7 (one thread of each of node 1's cores)", got)
	}
	// When no node can give one thread per core, packing doubles up on the
	// fullest node that holds the pod.
	if got := choose(t, topo, avail, func() Request { r := spread(6); r.Pack = true; return r }()); !got.Equals(cpuset.New(4, 5, 6, 7, 12, 13)) {
		t.Errorf("packed spread(6) = %s, want 4-7,12-13", got)
	}
}
