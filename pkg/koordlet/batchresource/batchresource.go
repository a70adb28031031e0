// Package batchresource makes batch capacity real: a BE pod that asks for
// kubernetes.io/batch-cpu (milli-cores) and kubernetes.io/batch-memory
// (bytes) runs in kubelet's besteffort cgroup with no CPU weight, quota or
// memory limit of its own, because kubelet does not know those resources.
// koordlet gives its pod and container cgroups the CPU weight of its
// batch-cpu request, the CFS quota of its batch-cpu limit and the memory
// limit of its batch-memory limit, as Koordinator's runtime hook does.
package batchresource

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
)

// Plan returns the settings of every pod that asks for batch resources (BE
// by koordlet's rule, extension.EnforcedQoSClass, whatever its label says),
// on its pod cgroup (the sum of its containers; a limit only when every
// container has one) and each running container's. When off, it returns
// what kubelet set from the pod's cpu and memory, so that turning the gate
// off undoes what it did. period is the CFS period in µs.
func Plan(pods []cgroup.PodCgroups, period int64, on bool) []cgroup.Setting {
	var out []cgroup.Setting
	for _, p := range pods {
		if p.QoS != extension.QoSBE || !extension.RequestsBatch(p.Pod) {
			continue
		}
		cpu, mem := corev1.ResourceName(extension.BatchCPU), corev1.ResourceName(extension.BatchMemory)
		if !on {
			cpu, mem = corev1.ResourceCPU, corev1.ResourceMemory
		}
		owner := p.Owner()
		out = appendSettings(out, p.Dir, owner, cgroup.PodResources(p.Pod, cpu, mem), period)
		for _, c := range p.Containers {
			out = appendSettings(out, c.Dir, owner, cgroup.ContainerResources(c.Spec, cpu, mem), period)
		}
	}
	return out
}

func appendSettings(out []cgroup.Setting, dir, owner string, r cgroup.Resources, period int64) []cgroup.Setting {
	return append(out,
		cgroup.Setting{Dir: dir, Knob: cgroup.CPUShares, Value: cgroup.MilliCPUToShares(r.MilliCPURequest), Owner: owner},
		cgroup.Setting{Dir: dir, Knob: cgroup.CPUQuota, Value: cgroup.MilliCPUToQuota(r.MilliCPULimit, period), Owner: owner},
		cgroup.Setting{Dir: dir, Knob: cgroup.MemoryLimit, Value: r.MemoryLimit, Owner: owner},
	)
}
