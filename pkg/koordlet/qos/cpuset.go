// Package qos pins pods to CPUs: latency-critical pods to the cpuset the
// scheduler chose, BE pods to the BE CPUs (the shared pool, or the part of it
// BE CPU suppression leaves them), every other pod to the shared pool.
package qos

import (
	"errors"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
)

// Plan is the cpuset each pod should run on.
type Plan map[types.UID]cpuset.CPUSet

// Bound reads, once per pass, the CPUs the scheduler bound each pod to (its
// resource-status cpuset; pods without one are absent). Pods whose
// annotation does not parse are in malformed, with the error naming the pod
// and key.
func Bound(pods []*corev1.Pod) (bound map[types.UID]cpuset.CPUSet, malformed map[types.UID]error) {
	bound, malformed = map[types.UID]cpuset.CPUSet{}, map[types.UID]error{}
	for _, p := range pods {
		st, err := extension.GetResourceStatus(p.Annotations)
		switch {
		case err != nil:
			malformed[p.UID] = fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		case !st.CPUs().IsEmpty():
			bound[p.UID] = st.CPUs()
		}
	}
	return bound, malformed
}

// Exclusive is every CPU held for one owner: the scheduler's bound cpusets,
// kubelet's static-policy pins and the CPUs Available reservations pin for
// their owners (held before any owner arrives).
func Exclusive(bound, kubeletPinned map[types.UID]cpuset.CPUSet, reservations []cpuset.CPUSet) cpuset.CPUSet {
	out := cpuset.New()
	for _, cpus := range kubeletPinned {
		out = out.Union(cpus)
	}
	for _, cpus := range bound {
		out = out.Union(cpus)
	}
	for _, cpus := range reservations {
		out = out.Union(cpus)
	}
	return out
}

// PlanCPUSets decides every pod's cpuset: its bound cpuset if the scheduler
// bound it; the BE CPUs (be) for a BE pod; else the shared pool (all CPUs
// less every exclusive one and kubelet's reserved CPUs). Pods in kubelet's
// besteffort cgroup are left out: they follow that cgroup (see
// cgroup.SetCPUSetTree). Pods kubelet's static policy pinned and pods whose
// annotation is malformed (their current cpuset is kept) are left alone, and
// so are pods whose set would be empty.
func PlanCPUSets(pods []*corev1.Pod, bound map[types.UID]cpuset.CPUSet, malformed map[types.UID]error, shared, be cpuset.CPUSet, kubeletPinned map[types.UID]cpuset.CPUSet) Plan {
	plan := Plan{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if cpus, ok := bound[p.UID]; ok {
			plan[p.UID] = cpus
			continue
		}
		if _, bad := malformed[p.UID]; bad {
			continue
		}
		if _, pinned := kubeletPinned[p.UID]; pinned {
			continue
		}
		if v1qos.GetPodQOS(p) == corev1.PodQOSBestEffort {
			continue
		}
		cpus := shared
		if extension.EnforcedQoSClass(p) == extension.QoSBE {
			cpus = be
		}
		if !cpus.IsEmpty() {
			plan[p.UID] = cpus
		}
	}
	return plan
}

// ErrCgroupMissing means a pod's cgroup is not there (yet, or any more):
// nothing was written, try again later.
var ErrCgroupMissing = errors.New("cgroup not found")

// ApplyCPUSet makes a pod's cgroup and all its child cgroups (containers and
// sandbox) run on cpus, writing only files that differ. In cgroup v1 a
// child's CPUs must lie within its parent's, so the pod cgroup is first
// widened to old ∪ new, then the children set, then the pod narrowed. It returns how many files it wrote.
func ApplyCPUSet(l cgroup.Layout, pod *corev1.Pod, cpus cpuset.CPUSet) (int, error) {
	podDir := l.PodDir(v1qos.GetPodQOS(pod), pod.UID)
	old, err := l.CPUSet(podDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("pod %s/%s %s: %w", pod.Namespace, pod.Name, podDir, ErrCgroupMissing)
	}
	if err != nil {
		return 0, err
	}
	// Every child cgroup, not only the containers the pod's status lists: the
	// sandbox (pause) container is a child too, and cgroup v1 refuses to
	// narrow a parent below any child's CPUs (EBUSY).
	dirs, err := l.Children(podDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	writes := 0
	count := func(wrote bool, err error) error {
		if wrote {
			writes++
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a container that just exited or is not created yet
		}
		return err
	}
	// Widen the pod first so that every container's new set lies within it.
	widened := old.Union(cpus)
	if err := count(l.ReplaceCPUSet(podDir, old, widened)); err != nil {
		return writes, err
	}
	for _, d := range dirs {
		if err := count(l.SetCPUSet(d, cpus)); err != nil {
			return writes, err
		}
	}
	return writes, count(l.ReplaceCPUSet(podDir, widened, cpus))
}
