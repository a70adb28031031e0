package cgroup

import (
	corev1 "k8s.io/api/core/v1"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"

	"github.com/koord-project/koord/apis/extension"
)

// PodCgroups is a pod as koordlet's QoS strategies see it: its classes and
// the cgroups of the pod and of each running container.
type PodCgroups struct {
	Pod *corev1.Pod
	// QoS is its Koordinator class; KubeQoS decides where kubelet put it.
	QoS     extension.QoSClass
	KubeQoS corev1.PodQOSClass
	Dir     string
	// Containers are the app containers with a cgroup (a container ID).
	Containers []ContainerCgroup
}

// ContainerCgroup is a running app container and its cgroup.
type ContainerCgroup struct {
	Spec *corev1.Container
	Dir  string
}

// Pods resolves the cgroups of pods (a malformed QoS label falls back to
// the Kubernetes QoS class, as everywhere in Koord).
func (l Layout) Pods(pods []*corev1.Pod) []PodCgroups {
	out := make([]PodCgroups, 0, len(pods))
	for _, p := range pods {
		kq := v1qos.GetPodQOS(p)
		pc := PodCgroups{Pod: p, QoS: extension.EnforcedQoSClass(p), KubeQoS: kq, Dir: l.PodDir(kq, p.UID)}
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			for _, st := range p.Status.ContainerStatuses {
				if st.Name != c.Name || st.ContainerID == "" {
					continue
				}
				if dir, err := l.ContainerDir(pc.Dir, st.ContainerID); err == nil {
					pc.Containers = append(pc.Containers, ContainerCgroup{Spec: c, Dir: dir})
				}
			}
		}
		out = append(out, pc)
	}
	return out
}

// Resources is what kubelet sets a cgroup from: CPU in milli-cores, memory
// in bytes; a limit of Unlimited is none.
type Resources struct {
	MilliCPURequest, MilliCPULimit int64
	MemoryRequest, MemoryLimit     int64
}

// ContainerResources reads a container's requests and limits of cpu and
// memory (names cpu and mem) from its spec: batch-cpu is already milli-cores,
// cpu is converted.
func ContainerResources(c *corev1.Container, cpu, mem corev1.ResourceName) Resources {
	r := Resources{MilliCPULimit: Unlimited, MemoryLimit: Unlimited}
	milli := func(rl corev1.ResourceList) (int64, bool) {
		q, ok := rl[cpu]
		if !ok {
			return 0, false
		}
		if cpu == corev1.ResourceCPU {
			return q.MilliValue(), true
		}
		return q.Value(), true
	}
	r.MilliCPURequest, _ = milli(c.Resources.Requests)
	if v, ok := milli(c.Resources.Limits); ok && v > 0 {
		r.MilliCPULimit = v
	}
	if q, ok := c.Resources.Requests[mem]; ok {
		r.MemoryRequest = q.Value()
	}
	if q, ok := c.Resources.Limits[mem]; ok && q.Value() > 0 {
		r.MemoryLimit = q.Value()
	}
	return r
}

// PodResources sums its app containers' resources; a limit is set only
// when every container has one, as kubelet sets a pod's cgroup.
func PodResources(p *corev1.Pod, cpu, mem corev1.ResourceName) Resources {
	var sum Resources
	for i := range p.Spec.Containers {
		c := ContainerResources(&p.Spec.Containers[i], cpu, mem)
		sum.MilliCPURequest += c.MilliCPURequest
		sum.MemoryRequest += c.MemoryRequest
		sum.MilliCPULimit = addLimit(sum.MilliCPULimit, c.MilliCPULimit, i == 0)
		sum.MemoryLimit = addLimit(sum.MemoryLimit, c.MemoryLimit, i == 0)
	}
	if len(p.Spec.Containers) == 0 {
		sum.MilliCPULimit, sum.MemoryLimit = Unlimited, Unlimited
	}
	return sum
}

func addLimit(sum, v int64, first bool) int64 {
	switch {
	case v == Unlimited || (!first && sum == Unlimited):
		return Unlimited
	case first:
		return v
	}
	return sum + v
}

// MilliCPUToShares is kubelet's cpu.shares for a CPU request.
func MilliCPUToShares(milli int64) int64 {
	return min(max(milli*1024/1000, 2), 262144)
}

// MilliCPUToQuota is kubelet's CFS quota (µs per period) for a CPU limit;
// Unlimited for none.
func MilliCPUToQuota(milli, period int64) int64 {
	if milli <= 0 {
		return Unlimited
	}
	return max(milli*period/1000, 1000)
}

// Owner names the pod in Setting.Owner, so that failures are reported against it.
func (p PodCgroups) Owner() string { return PodOwner(p.Pod) }

// PodOwner is Setting.Owner for a pod's cgroups.
func PodOwner(p *corev1.Pod) string { return "pod " + p.Namespace + "/" + p.Name }
