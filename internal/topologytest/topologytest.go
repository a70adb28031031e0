// Package topologytest describes machines this one is not (two sockets, SMT,
// several NUMA nodes) as koordlet would publish them, for tests and the demo.
package topologytest

import (
	"fmt"

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
