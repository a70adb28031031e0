// Package topologytest describes machines this one is not (two sockets, SMT,
// several NUMA nodes) as koordlet would publish them, for tests and the demo.
package topologytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

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

// WriteCgroup makes a fixture cgroup dir (relative to the hierarchies' root
// dir) with every file koordlet reads or writes, at the kernel's defaults:
// in each v1 controller's hierarchy, or in the one v2 hierarchy (whose root
// also gets cgroup.controllers). cpus is its cpuset.cpus.
func WriteCgroup(root string, v2 bool, dir, cpus string) error {
	files := map[string]string{
		"cpuset/" + dir + "/cpuset.cpus": cpus, "cpu/" + dir + "/cpu.shares": "2", "cpu/" + dir + "/cpu.cfs_quota_us": "-1",
		"cpu/" + dir + "/cpu.cfs_period_us": "100000", "cpu/" + dir + "/cpu.cfs_burst_us": "0", "cpu/" + dir + "/cpu.idle": "0",
		"cpu/" + dir + "/cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0", "cpuacct/" + dir + "/cpuacct.usage": "123456789",
		"memory/" + dir + "/memory.limit_in_bytes": "9223372036854771712", "memory/" + dir + "/memory.usage_in_bytes": "104857600",
		"memory/" + dir + "/memory.stat": "total_inactive_file 1048576",
	}
	if v2 {
		files = map[string]string{
			"cgroup.controllers": "cpuset cpu io memory pids",
			dir + "/cpuset.cpus": cpus, dir + "/cpu.weight": "1", dir + "/cpu.max": "max 100000", dir + "/cpu.max.burst": "0",
			dir + "/cpu.idle": "0", dir + "/cpu.stat": "usage_usec 123456\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0",
			dir + "/memory.max": "max", dir + "/memory.min": "0", dir + "/memory.low": "0", dir + "/memory.high": "max",
			dir + "/memory.current": "104857600", dir + "/memory.stat": "anon 103809024\ninactive_file 1048576",
		}
	}
	for f, content := range files {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// SimulateLoad rewrites procfs/stat every few milliseconds, as if cores()
// of the machine's cpus CPUs were busy, until ctx ends; done is closed then.
func SimulateLoad(ctx context.Context, procfs string, cpus int, cores func() float64) (done <-chan struct{}) {
	d := make(chan struct{})
	go func() {
		defer close(d)
		var busy, idle float64
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-time.After(5 * time.Millisecond):
				c := cores()
				secs := now.Sub(last).Seconds()
				last = now
				busy += c * 100 * secs
				idle += (float64(cpus) - c) * 100 * secs
				tmp := filepath.Join(procfs, "stat.tmp")
				if os.WriteFile(tmp, []byte(ProcStat(uint64(busy), uint64(idle))), 0o644) == nil {
					_ = os.Rename(tmp, filepath.Join(procfs, "stat"))
				}
			}
		}
	}()
	return d
}

// Hostile is the numa-info a compromised koordlet could publish to burn
// whoever parses it: a machine of cpus CPUs on one NUMA node whose shared
// pools and kubelet pins, entries of each, all name every CPU. rev changes
// a pin's name, so that rewriting it is an update.
func Hostile(cpus, entries, rev int) *extension.NUMAInfo {
	info := Linux(1, 1, cpus, 1, 1<<30)
	all := info.NUMANodes[0].CPUs
	info.CPUSharedPools = nil
	for i := range entries {
		info.CPUSharedPools = append(info.CPUSharedPools, extension.CPUSharedPool{CPUSet: all})
		info.PodCPUAllocs = append(info.PodCPUAllocs, extension.PodCPUAlloc{Namespace: "x", Name: fmt.Sprintf("p%d-%d", i, rev), UID: fmt.Sprint(i), CPUSet: all})
	}
	return info
}
