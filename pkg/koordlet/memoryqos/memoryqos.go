// Package memoryqos protects latency-sensitive pods' memory from reclaim and
// throttles growth before the hard limit (Koordinator's CgroupReconcile,
// resourceQOSStrategy.<class>.memoryQOS), with cgroup v2's memcg knobs:
//
//	memory.min  = request × minLimitPercent        (never reclaimed)
//	memory.low  = request × lowLimitPercent        (reclaimed last; at least memory.min)
//	memory.high = request + (limit − request) × throttlingPercent, per container
//	              (limit: the node's memory when the container has none; 0 % means no throttling)
//
// Pods get the sums of their containers' min and low, and kubelet's QoS
// cgroups the sums of their pods', because v2 grants a child no more
// protection than its parent has. LSE follows the lsrClass. A class whose
// memoryQOS is off gets the kernel defaults (0, 0, max). Kernels without the
// files (cgroup v1 upstream) are reported once by the applier.
package memoryqos

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

// Plan returns the memcg settings of the QoS cgroups, pods and containers.
// nodeMemory (bytes) stands in for a missing limit.
func Plan(l cgroup.Layout, pods []cgroup.PodCgroups, s nodeslo.Strategy, on bool, nodeMemory int64) []cgroup.Setting {
	var out []cgroup.Setting
	sums := map[corev1.PodQOSClass]*[2]int64{}
	for _, kq := range []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		sums[kq] = &[2]int64{}
	}
	for _, p := range pods {
		c := s.Class(p.QoS)
		if !on {
			c = nodeslo.ClassQOS{}
		}
		var podMin, podLow int64
		for _, ct := range p.Containers {
			r := cgroup.ContainerResources(ct.Spec, corev1.ResourceCPU, corev1.ResourceMemory)
			minV, lowV, high := values(c, r.MemoryRequest, r.MemoryLimit, nodeMemory)
			podMin, podLow = podMin+minV, podLow+lowV
			out = append(out,
				cgroup.Setting{Dir: ct.Dir, Knob: cgroup.MemoryMin, Value: minV, Owner: p.Owner()},
				cgroup.Setting{Dir: ct.Dir, Knob: cgroup.MemoryLow, Value: lowV, Owner: p.Owner()},
				cgroup.Setting{Dir: ct.Dir, Knob: cgroup.MemoryHigh, Value: high, Owner: p.Owner()})
		}
		out = append(out,
			cgroup.Setting{Dir: p.Dir, Knob: cgroup.MemoryMin, Value: podMin, Owner: p.Owner()},
			cgroup.Setting{Dir: p.Dir, Knob: cgroup.MemoryLow, Value: podLow, Owner: p.Owner()})
		sums[p.KubeQoS][0] += podMin
		sums[p.KubeQoS][1] += podLow
	}
	// Guaranteed pods sit directly in kubepods, beside the other QoS cgroups:
	// kubepods covers everything.
	top := sums[corev1.PodQOSGuaranteed]
	for _, kq := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort} {
		sum := sums[kq]
		top[0], top[1] = top[0]+sum[0], top[1]+sum[1]
		out = append(out,
			cgroup.Setting{Dir: l.QoSDir(kq), Knob: cgroup.MemoryMin, Value: sum[0], Owner: "qos " + string(kq)},
			cgroup.Setting{Dir: l.QoSDir(kq), Knob: cgroup.MemoryLow, Value: sum[1], Owner: "qos " + string(kq)})
	}
	out = append(out,
		cgroup.Setting{Dir: l.QoSDir(corev1.PodQOSGuaranteed), Knob: cgroup.MemoryMin, Value: top[0], Owner: "qos kubepods"},
		cgroup.Setting{Dir: l.QoSDir(corev1.PodQOSGuaranteed), Knob: cgroup.MemoryLow, Value: top[1], Owner: "qos kubepods"})
	return out
}

// values are a container's memory.min, memory.low and memory.high.
func values(c nodeslo.ClassQOS, request, limit, nodeMemory int64) (minV, low, high int64) {
	high = cgroup.Unlimited
	if !c.MemoryEnable {
		return 0, 0, high
	}
	minV = request * c.MinLimitPercent / 100
	low = max(request*c.LowLimitPercent/100, minV)
	if c.ThrottlingPercent > 0 {
		if limit == cgroup.Unlimited {
			limit = nodeMemory
		}
		high = max(request+(limit-request)*c.ThrottlingPercent/100, minV)
	}
	return minV, low, high
}
