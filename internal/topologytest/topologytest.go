// Package topologytest describes machines this one is not (two sockets, SMT,
// several NUMA nodes) as koordlet would publish them, for tests and the demo.
package topologytest

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
)

// Linux is the NUMA info of a machine of the given shape, with CPUs numbered
// the way Linux numbers SMT servers: thread 0 of every core first, then
// thread 1 (so the siblings of CPU n are n+cores, n+2*cores...).
func Linux(sockets, numaPerSocket, coresPerNUMA, threads int, memoryPerNUMA int64) *extension.NUMAInfo {
	cores := sockets * numaPerSocket * coresPerNUMA
	info := &extension.NUMAInfo{
		CPUBasicInfo:     extension.CPUBasicInfo{CPUModel: fmt.Sprintf("test %dx%dx%dx%d", sockets, numaPerSocket, coresPerNUMA, threads), HyperThreadEnabled: threads > 1},
		CPUManagerPolicy: extension.KubeletCPUManagerPolicy{Policy: extension.KubeletCPUManagerPolicyNone},
	}
	perNUMA := map[int][]int{}
	for th := 0; th < threads; th++ {
		for c := 0; c < cores; c++ {
			numa := c / coresPerNUMA
			id := th*cores + c
			info.CPUTopology.Detail = append(info.CPUTopology.Detail, extension.CPUInfo{
				ID: int32(id), Core: int32(c), Socket: int32(numa / numaPerSocket), Node: int32(numa),
			})
			perNUMA[numa] = append(perNUMA[numa], id)
		}
	}
	for numa := 0; numa < sockets*numaPerSocket; numa++ {
		cpus := cpuset.New(perNUMA[numa]...).String()
		info.NUMANodes = append(info.NUMANodes, extension.NUMANodeInfo{ID: int32(numa), CPUs: cpus, MemoryBytes: memoryPerNUMA})
		info.CPUSharedPools = append(info.CPUSharedPools, extension.CPUSharedPool{Socket: int32(numa / numaPerSocket), Node: int32(numa), CPUSet: cpus})
	}
	return info
}

// WriteSysfs writes, under dir, the sysfs and procfs files Linux has on a
// machine of the shape Linux describes (core_id restarting on each socket),
// so that koordlet can be pointed at a machine this one is not.
func WriteSysfs(dir string, sockets, numaPerSocket, coresPerNUMA, threads int, memoryPerNUMA int64) (sysfs, procfs string, err error) {
	sysfs, procfs = filepath.Join(dir, "sys"), filepath.Join(dir, "proc")
	files := map[string]string{}
	cores := sockets * numaPerSocket * coresPerNUMA
	coresPerSocket := numaPerSocket * coresPerNUMA
	perNUMA := map[int][]int{}
	for th := 0; th < threads; th++ {
		for c := 0; c < cores; c++ {
			cpu := th*cores + c
			topo := filepath.Join(sysfs, "devices/system/cpu", fmt.Sprintf("cpu%d", cpu), "topology")
			files[filepath.Join(topo, "physical_package_id")] = fmt.Sprintf("%d\n", c/coresPerSocket)
			files[filepath.Join(topo, "core_id")] = fmt.Sprintf("%d\n", c%coresPerSocket)
			perNUMA[c/coresPerNUMA] = append(perNUMA[c/coresPerNUMA], cpu)
		}
	}
	files[filepath.Join(sysfs, "devices/system/cpu/online")] = fmt.Sprintf("0-%d\n", cores*threads-1)
	nodes := sockets * numaPerSocket
	files[filepath.Join(sysfs, "devices/system/node/online")] = fmt.Sprintf("0-%d\n", nodes-1)
	for n := 0; n < nodes; n++ {
		d := filepath.Join(sysfs, "devices/system/node", fmt.Sprintf("node%d", n))
		files[filepath.Join(d, "cpulist")] = cpuset.New(perNUMA[n]...).String() + "\n"
		files[filepath.Join(d, "meminfo")] = fmt.Sprintf("Node %d MemTotal:       %d kB\nNode %d MemFree:        1024 kB\n", n, memoryPerNUMA/1024, n)
	}
	files[filepath.Join(procfs, "cpuinfo")] = fmt.Sprintf("processor\t: 0\nmodel name\t: test %dx%dx%dx%d\n", sockets, numaPerSocket, coresPerNUMA, threads)
	files[filepath.Join(procfs, "meminfo")] = fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\n",
		int64(nodes)*memoryPerNUMA/1024, int64(nodes)*memoryPerNUMA/4096, int64(nodes)*memoryPerNUMA/2048)
	files[filepath.Join(procfs, "stat")] = ProcStat(0, 0)
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", "", err
		}
	}
	return sysfs, procfs, nil
}

// ProcStat is a /proc/stat whose cpu line has busy jiffies as user time and
// idle jiffies as idle time; tests advance both to simulate load.
func ProcStat(busy, idle uint64) string {
	return fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 0 0 0\nintr 0\n", busy, idle)
}
