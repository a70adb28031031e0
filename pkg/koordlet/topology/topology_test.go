package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/topologytest"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fakeSysfs(t *testing.T, sockets, numaPerSocket, coresPerNUMA, threads int, memPerNUMA int64) (sysfs, procfs string) {
	t.Helper()
	sysfs, procfs, err := topologytest.WriteSysfs(t.TempDir(), sockets, numaPerSocket, coresPerNUMA, threads, memPerNUMA)
	if err != nil {
		t.Fatal(err)
	}
	return sysfs, procfs
}

func TestReadMachineFixtures(t *testing.T) {
	for _, shape := range [][4]int{{1, 1, 2, 1}, {2, 2, 8, 2}, {2, 2, 16, 2}} {
		t.Run(fmt.Sprint(shape), func(t *testing.T) {
			sysfs, procfs := fakeSysfs(t, shape[0], shape[1], shape[2], shape[3], 16<<30)
			m, err := ReadMachine(sysfs, procfs)
			if err != nil {
				t.Fatal(err)
			}
			want := topologytest.Linux(shape[0], shape[1], shape[2], shape[3], 16<<30)
			if d := cmp.Diff(want.CPUTopology, m.CPUTopology); d != "" {
				t.Errorf("cpu-topology (-want +got):\n%s", d)
			}
			if d := cmp.Diff(want.NUMANodes, m.NUMANodes); d != "" {
				t.Errorf("numa-nodes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(want.CPUBasicInfo, m.BasicInfo); d != "" {
				t.Errorf("cpu-basic-info (-want +got):\n%s", d)
			}
		})
	}
}

// Without NUMA support the kernel has no node directory: one NUMA node with
// all memory.
func TestReadMachineWithoutNUMA(t *testing.T) {
	sysfs, procfs := fakeSysfs(t, 1, 1, 2, 1, 4<<30)
	if err := os.RemoveAll(filepath.Join(sysfs, "devices/system/node")); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMachine(sysfs, procfs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.NUMANodes) != 1 || m.NUMANodes[0].CPUs != "0-1" || m.NUMANodes[0].MemoryBytes != 4<<30 {
		t.Errorf("NUMA nodes %+v", m.NUMANodes)
	}
}

func TestReadMachineErrorsNameTheFile(t *testing.T) {
	sysfs, procfs := fakeSysfs(t, 1, 1, 2, 1, 4<<30)
	write(t, filepath.Join(sysfs, "devices/system/cpu/cpu1/topology/core_id"), "one\n")
	if _, err := ReadMachine(sysfs, procfs); err == nil || !strings.Contains(err.Error(), "cpu1/topology/core_id") {
		t.Errorf("malformed core_id: %v", err)
	}
}

// This machine, read for real: every online CPU appears once, and what is
// published parses back.
func TestReadThisMachine(t *testing.T) {
	m, err := ReadMachine("/sys", "/proc")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.CPUTopology.Detail) != runtime.NumCPU() {
		t.Errorf("%d CPUs in the topology, runtime says %d", len(m.CPUTopology.Detail), runtime.NumCPU())
	}
	info, err := NUMAInfo(m, &Kubelet{Policy: extension.KubeletCPUManagerPolicy{Policy: "none"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := extension.NewNUMAInfoConfigMap("this-node", info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := extension.ParseNUMAInfo(cm); err != nil {
		t.Errorf("what koordlet would publish for this machine does not parse: %v", err)
	}
}

func TestReadKubelet(t *testing.T) {
	root := t.TempDir()
	k, err := ReadKubelet(root)
	if err != nil || k.Policy.Policy != "none" || len(k.Pinned) != 0 {
		t.Fatalf("no files: %+v, %v", k, err)
	}
	write(t, filepath.Join(root, "config.yaml"), "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\ncpuManagerPolicyOptions: {full-pcpus-only: \"true\"}\nreservedSystemCPUs: \"0,16\"\n")
	// A v4 checkpoint as kubelet 1.37 writes it; the v2 fields are inline.
	write(t, filepath.Join(root, "cpu_manager_state"), `{"policyName":"static","defaultCpuSet":"0,3-15,16,19-31","entries":{"uid-a":{"app":"1","sidecar":"17"},"uid-b":{"db":"2,18"}},"checksum":1,"data":"{}","dataChecksum":2}`)
	k, err = ReadKubelet(root)
	if err != nil {
		t.Fatal(err)
	}
	if k.Policy.Policy != "static" || k.Policy.ReservedCPUs != "0,16" || k.Policy.Options["full-pcpus-only"] != "true" {
		t.Errorf("policy %+v", k.Policy)
	}
	if !k.Pinned["uid-a"].Equals(cpuset.New(1, 17)) || !k.Pinned["uid-b"].Equals(cpuset.New(2, 18)) {
		t.Errorf("pinned %v", k.Pinned)
	}

	m := &Machine{CPUTopology: topologytest.Linux(1, 2, 8, 2, 1<<30).CPUTopology, NUMANodes: topologytest.Linux(1, 2, 8, 2, 1<<30).NUMANodes}
	info, err := NUMAInfo(m, k, []PodRef{
		{Namespace: "default", Name: "a", UID: "uid-a"},
		{Namespace: "default", Name: "web", UID: "uid-web", CPUs: cpuset.New(8, 24)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.PodCPUAllocs) != 2 || info.PodCPUAllocs[0].Name != "a" || info.PodCPUAllocs[0].CPUSet != "1,17" || info.PodCPUAllocs[1].Name != "" {
		t.Errorf("pod-cpu-allocs %+v", info.PodCPUAllocs)
	}
	// NUMA 0 has cores 0-7 (CPUs 0-7,16-23): less kubelet's 1,2,17,18; reserved 0,16 stay shared.
	if got := info.CPUSharedPools[0].CPUSet; got != "0,3-7,16,19-23" {
		t.Errorf("NUMA 0 shared pool %s", got)
	}
	// NUMA 1 (8-15,24-31) less the scheduler-bound 8,24.
	if got := info.CPUSharedPools[1].CPUSet; got != "9-15,25-31" {
		t.Errorf("NUMA 1 shared pool %s", got)
	}
	cm, err := extension.NewNUMAInfoConfigMap("n1", info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := extension.ParseNUMAInfo(cm); err != nil {
		t.Errorf("published info does not parse: %v", err)
	}

	write(t, filepath.Join(root, "cpu_manager_state"), `{"policyName":"static","entries":{"uid-a":{"app":"1-"}}}`)
	if _, err := ReadKubelet(root); err == nil || !strings.Contains(err.Error(), "cpu_manager_state: pod uid-a container app") {
		t.Errorf("malformed state: %v", err)
	}
}
