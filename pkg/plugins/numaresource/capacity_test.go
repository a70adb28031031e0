package numaresource

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/topologytest"
)

// FuzzFitsAgreesWithChoose: Filter (Fits, on counts) and Reserve (Choose, on
// CPUs) must never disagree, or a pod would pass Filter and fail Reserve (or
// be kept off a node that has room). Random availability masks on a 2-socket,
// 4-NUMA, SMT-2 topology.
func FuzzFitsAgreesWithChoose(f *testing.F) {
	f.Add(uint64(0xffffffffffffffff), uint64(0), uint8(4), false, false)
	f.Add(uint64(0x00ff00ff00ff00ff), uint64(0xffff0000ffff0000), uint8(6), true, false)
	f.Add(uint64(0xaaaaaaaaaaaaaaaa), uint64(0x5555555555555555), uint8(2), false, true)
	f.Add(uint64(0x0f0f), uint64(0x0f0f), uint8(40), false, false)
	topo := linuxTopology(f, 2, 2, 16, 2) // 128 CPUs: mask words cover 0-63 and 64-127
	f.Fuzz(func(t *testing.T, lo, hi uint64, count uint8, single, spreadPolicy bool) {
		var ids []int
		for i := 0; i < 64; i++ {
			if lo&(1<<i) != 0 {
				ids = append(ids, i)
			}
			if hi&(1<<i) != 0 {
				ids = append(ids, 64+i)
			}
		}
		avail := cpuset.New(ids...)
		req := Request{Count: int(count), Policy: extension.CPUBindPolicyFullPCPUs, SingleNUMANode: single}
		if spreadPolicy {
			req.Policy = extension.CPUBindPolicySpreadByPCPUs
		}
		fitErr := Fits(topo.Capacity(avail), topo.ThreadsPerCore(), req)
		got, chooseErr := topo.Choose(avail, req)
		if (fitErr == nil) != (chooseErr == nil) {
			t.Fatalf("Fits says %v, Choose says %v (avail %s, %+v)", fitErr, chooseErr, avail, req)
		}
		if fitErr != nil {
			if fitErr.Error() != chooseErr.Error() {
				t.Fatalf("different reasons: Fits %q, Choose %q", fitErr, chooseErr)
			}
			return
		}
		if got.Size() != req.Count || !got.IsSubsetOf(avail) {
			t.Fatalf("Choose(%+v) = %s from %s", req, got, avail)
		}
		if single && len(numaNodesOf(topo, got)) != 1 {
			t.Fatalf("SingleNUMANode got %s across NUMA nodes", got)
		}
		if req.Policy == extension.CPUBindPolicyFullPCPUs && !wholeCores(topo, got) {
			t.Fatalf("FullPCPUs got %s, not whole cores", got)
		}
	})
}

// FuzzPodAndNodePolicies: whatever a pod's annotations and a node's labels
// say, deciding how the pod binds never panics; a rejection names the
// annotation or label at fault, or says what the request lacks; an accepted
// binding asks for at least one whole CPU by a policy the chooser knows.
func FuzzPodAndNodePolicies(f *testing.F) {
	f.Add(`{"preferredCPUBindPolicy":"FullPCPUs"}`, `{"numaTopologyPolicy":"SingleNUMANode"}`, "FullPCPUsOnly", "Restricted", int64(2000), "LSR")
	f.Add(`{"requiredCPUBindPolicy":"SpreadByPCPUs","preferredCPUExclusivePolicy":"PCPULevel"}`, `{}`, "FullPCPUsOnly", "", int64(3000), "LS")
	f.Add(`{"preferredCPUBindPolicy":`, `null`, "x", "y", int64(1500), "BE")
	f.Add(``, ``, "", "", int64(0), "")
	f.Fuzz(func(t *testing.T, spec, numa, nodeBind, nodeNUMA string, cpuMilli int64, qos string) {
		if cpuMilli < 0 || cpuMilli > 1<<40 {
			return
		}
		pod := lsr("p", fmt.Sprintf("%dm", cpuMilli), "1Gi", map[string]string{
			extension.AnnotationResourceSpec: spec, extension.AnnotationNUMATopologySpec: numa})
		pod.Labels[extension.LabelPodQoS] = qos
		req, err := newPodRequest(pod, extension.CPUBindPolicyFullPCPUs)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, extension.AnnotationResourceSpec) && !strings.Contains(msg, extension.AnnotationNUMATopologySpec) && !strings.Contains(msg, "whole number of CPUs") {
				t.Fatalf("error names no key: %v", err)
			}
			return
		}
		n := node("n", map[string]string{extension.LabelNodeCPUBindPolicy: nodeBind, extension.LabelNodeNUMATopologyPolicy: nodeNUMA})
		b, binds, err := req.on(n)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "label ") {
				t.Fatalf("node-level rejection names no label: %v", err)
			}
			return
		}
		if !binds {
			return
		}
		if b.count < 1 || int64(b.count)*1000 != cpuMilli {
			t.Fatalf("binds %d CPUs for %dm", b.count, cpuMilli)
		}
		if b.policy != extension.CPUBindPolicyFullPCPUs && b.policy != extension.CPUBindPolicySpreadByPCPUs {
			t.Fatalf("binds by %q", b.policy)
		}
	})
}

// A relabelled node binds by its new labels; a malformed value names the label.
func TestPoliciesFollowTheNodeLabels(t *testing.T) {
	req, err := newPodRequest(lsr("p", "2", "1Gi", nil), extension.CPUBindPolicyFullPCPUs)
	if err != nil {
		t.Fatal(err)
	}
	if b, _, err := req.on(node("n", nil)); err != nil || b.policy != extension.CPUBindPolicyFullPCPUs {
		t.Fatalf("unlabelled node: %v %v", b, err)
	}
	spread := node("n", map[string]string{extension.LabelNodeCPUBindPolicy: string(extension.NodeCPUBindPolicySpreadByPCPUs)})
	if b, _, err := req.on(spread); err != nil || b.policy != extension.CPUBindPolicySpreadByPCPUs {
		t.Fatalf("node relabelled SpreadByPCPUs: %v %v", b, err)
	}
	bad := node("n", map[string]string{extension.LabelNodeNUMATopologyPolicy: "Sometimes"})
	if _, _, err := req.on(bad); err == nil || !strings.Contains(err.Error(), extension.LabelNodeNUMATopologyPolicy) {
		t.Fatalf("malformed label: %v", err)
	}
}

// FuzzFitMasksLikeSets: fit narrows a view's per-NUMA capacities instead of
// its CPU sets. Whatever the node holds (PCPULevel- and NUMANodeLevel-
// exclusive pods, memory) and whatever the pod asks, the capacities fit
// works with must be those of the CPUs the pod may use, worked out on sets
// (the view's available CPUs less the cores of PCPULevel pods for a PCPULevel
// pod, less every NUMA node holding a NUMANodeLevel pod for such a pod, less
// every NUMA node short of the pod's memory when it must fit in one), and
// Reserve must choose from exactly those CPUs.
func FuzzFitMasksLikeSets(f *testing.F) {
	// A PCPULevel pod beside one, on a single NUMA node short of memory.
	f.Add(uint64(0x3), uint64(0x30000), uint8(4), uint8(4), uint8(1), uint8(1), uint8(8))
	// A NUMANodeLevel pod beside one.
	f.Add(uint64(0), uint64(0xff00000000), uint8(0), uint8(6), uint8(2), uint8(0), uint8(0))
	// A Restricted pod that must fit in one NUMA node, none short.
	f.Add(uint64(0xf0), uint64(0), uint8(1), uint8(2), uint8(0), uint8(2), uint8(1))
	info := topologytest.Linux(2, 2, 8, 2, 8*gi) // 64 CPUs, 4 NUMA nodes of 8 GiB
	f.Fuzz(func(t *testing.T, pcpuMask, numaMask uint64, heldGiB, count, exclusive, numaPolicy, podGiB uint8) {
		s := NewState()
		s.SetTopology("n", info, nil)
		view, err := s.View("n")
		if err != nil {
			t.Fatal(err)
		}
		topo := view.Topo
		// Two holders: one PCPULevel pod on pcpuMask's CPUs, one
		// NUMANodeLevel pod on numaMask's (less the first's), with heldGiB
		// of memory on the first NUMA node of its CPUs.
		pcpu := maskCPUs(pcpuMask)
		numa := maskCPUs(numaMask).Difference(pcpu)
		if !pcpu.IsEmpty() {
			if err := s.Assume("n", "pcpu", Allocation{CPUs: pcpu, Exclusive: extension.CPUExclusivePolicyPCPULevel}); err != nil {
				t.Fatal(err)
			}
		}
		if !numa.IsEmpty() {
			mem := map[int]int64{topo.NUMANodeOf(numa.List()[0]): int64(heldGiB%9) * gi}
			if err := s.Assume("n", "numa", Allocation{CPUs: numa, Exclusive: extension.CPUExclusivePolicyNUMANodeLevel, Memory: mem}); err != nil {
				t.Fatal(err)
			}
		}
		if view, err = s.View("n"); err != nil {
			t.Fatal(err)
		}
		r := &podRequest{memory: int64(podGiB%9) * gi,
			exclusive: []extension.CPUExclusivePolicy{extension.CPUExclusivePolicyNone, extension.CPUExclusivePolicyPCPULevel, extension.CPUExclusivePolicyNUMANodeLevel}[exclusive%3]}
		b := binding{policy: extension.CPUBindPolicySpreadByPCPUs, count: int(count%16) + 1,
			numaPolicy: []extension.NUMATopologyPolicy{extension.NUMATopologyPolicyNone, extension.NUMATopologyPolicySingleNUMANode, extension.NUMATopologyPolicyRestricted}[numaPolicy%3]}
		var buf [4]NUMACapacity
		pl, fitErr := fit(view, r, b, false, buf[:0])

		want := view.Available
		if r.exclusive == extension.CPUExclusivePolicyPCPULevel {
			want = want.Difference(view.PCPUExclusive)
		}
		for _, id := range topo.NUMANodes() {
			if (r.exclusive == extension.CPUExclusivePolicyNUMANodeLevel && view.NUMAExclusive[id]) ||
				(pl.req.SingleNUMANode && r.memory > 0 && view.MemoryFree[id] < r.memory) {
				want = want.Difference(topo.NUMACPUs(id))
			}
		}
		if got := pl.cpus(); !got.Equals(want) {
			t.Fatalf("pod may use %s, want %s (%+v, %+v)", got, want, *r, b)
		}
		if wantCaps := topo.Capacity(want); fmt.Sprint(pl.caps) != fmt.Sprint(wantCaps) {
			t.Fatalf("capacities %+v, want %+v (%+v, %+v)", pl.caps, wantCaps, *r, b)
		}
		if refErr := Fits(topo.Capacity(want), topo.ThreadsPerCore(), pl.req); (fitErr == nil) != (refErr == nil) {
			t.Fatalf("fit: %v, on sets: %v", fitErr, refErr)
		}
	})
}

// maskCPUs is the CPUs whose bits are set, of the first 64.
func maskCPUs(mask uint64) cpuset.CPUSet {
	var ids []int
	for i := 0; i < 64; i++ {
		if mask&(1<<i) != 0 {
			ids = append(ids, i)
		}
	}
	return cpuset.New(ids...)
}
