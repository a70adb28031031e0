package cpusuppress

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
)

// QuotaSettings are cfsQuota suppression's CFS quotas, for the BE pods
// wherever kubelet put them: most run in its besteffort cgroup, but a BE pod
// that also asks for a little native CPU (1m is enough) runs in the
// burstable one, outside the besteffort quota. The besteffort cgroup and
// each BE pod outside it share what BE may use, in proportion to their CPU
// requests (each pod counts at least FloorMilli), so that together they
// stay within it.
//
// r nil means no cfsQuota decision: the besteffort cgroup is unlimited and
// each outside pod keeps its own limit. planned are the other planners'
// settings (batch resources' quotas): an outside pod's quota is the lower of
// its share and what they ask, and its containers' quotas are in the result
// too, so that the applier caps them at the pod's (cgroup v1 refuses a pod
// quota below a container's).
func QuotaSettings(l cgroup.Layout, pods []cgroup.PodCgroups, r *Result, period int64, planned []cgroup.Setting) []cgroup.Setting {
	weights := []int64{0}
	var outside []cgroup.PodCgroups
	for _, p := range pods {
		if p.QoS != extension.QoSBE || p.Pod.Status.Phase == corev1.PodSucceeded || p.Pod.Status.Phase == corev1.PodFailed {
			continue
		}
		w := weight(p.Pod)
		if p.KubeQoS == corev1.PodQOSBestEffort {
			weights[0] += w
			continue
		}
		outside = append(outside, p)
		weights = append(weights, w)
	}
	shares := make([]int64, len(weights))
	for i := range shares {
		shares[i] = cgroup.Unlimited
	}
	if r != nil {
		shares = r.share(period, weights)
	}
	out := []cgroup.Setting{{Dir: l.QoSDir(corev1.PodQOSBestEffort), Knob: cgroup.CPUQuota, Value: shares[0], Owner: "qos BestEffort"}}
	asked := map[string]int64{}
	for _, s := range planned {
		if s.Knob == cgroup.CPUQuota {
			asked[s.Dir] = s.Value
		}
	}
	quotaOf := func(dir string, r cgroup.Resources) int64 {
		if v, ok := asked[dir]; ok {
			return v
		}
		return cgroup.MilliCPUToQuota(r.MilliCPULimit, period)
	}
	for i, p := range outside {
		owner := p.Owner()
		pod := quotaOf(p.Dir, cgroup.PodResources(p.Pod, corev1.ResourceCPU, corev1.ResourceMemory))
		out = append(out, cgroup.Setting{Dir: p.Dir, Knob: cgroup.CPUQuota, Value: lowerQuota(pod, shares[i+1]), Owner: owner})
		for _, c := range p.Containers {
			out = append(out, cgroup.Setting{Dir: c.Dir, Knob: cgroup.CPUQuota, Value: quotaOf(c.Dir, cgroup.ContainerResources(c.Spec, corev1.ResourceCPU, corev1.ResourceMemory)), Owner: owner})
		}
	}
	return out
}

// weight is a BE pod's claim on the BE share: its CPU requests, batch and
// native, in milli-cores, at least FloorMilli.
func weight(p *corev1.Pod) int64 {
	batch := cgroup.PodResources(p, extension.BatchCPU, extension.BatchMemory).MilliCPURequest
	native := cgroup.PodResources(p, corev1.ResourceCPU, corev1.ResourceMemory).MilliCPURequest
	return max(batch+native, FloorMilli)
}

// share splits AllowedMilli by weight into quotas of at least the kernel's
// 1 ms a period. A group without weight (a besteffort cgroup with no BE
// pod) gets that minimum.
func (r Result) share(period int64, weights []int64) []int64 {
	var total int64
	for _, w := range weights {
		total += w
	}
	out := make([]int64, len(weights))
	for i, w := range weights {
		milli := r.AllowedMilli
		if len(weights) > 1 {
			milli = 0
			if total > 0 {
				milli = r.AllowedMilli * w / total
			}
		}
		out[i] = max(milli*period/1000, 1000)
	}
	return out
}

// lowerQuota is the tighter of two quotas (Unlimited is none).
func lowerQuota(a, b int64) int64 {
	switch {
	case a == cgroup.Unlimited:
		return b
	case b == cgroup.Unlimited:
		return a
	}
	return min(a, b)
}
