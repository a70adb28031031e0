// Package qos applies Koord's QoS decisions to pod cgroups. Its first
// strategy pins pods to CPUs: latency-critical pods to the cpuset the
// scheduler chose, every other non-BE pod to the shared pool.
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

// PlanCPUSets decides every pod's cpuset: its resource-status cpuset if the
// scheduler bound it, else the shared pool (all CPUs less every exclusively
// bound CPU and kubelet's reserved CPUs). BE pods and pods kubelet's static
// policy pinned are left alone. Pods whose annotation is malformed are
// returned as errors (naming the pod and key) and keep their current cpuset.
func PlanCPUSets(pods []*corev1.Pod, all, reserved cpuset.CPUSet, kubeletPinned map[types.UID]cpuset.CPUSet) (Plan, []error) {
	var errs []error
	bound := map[types.UID]cpuset.CPUSet{}
	exclusive := cpuset.New()
	for _, cpus := range kubeletPinned {
		exclusive = exclusive.Union(cpus)
	}
	for _, p := range pods {
		st, err := extension.GetResourceStatus(p.Annotations)
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
			bound[p.UID] = cpuset.New() // unknown: do not touch
			continue
		}
		if !st.CPUs().IsEmpty() {
			bound[p.UID] = st.CPUs()
			exclusive = exclusive.Union(st.CPUs())
		}
	}
	shared := all.Difference(exclusive).Difference(reserved)
	plan := Plan{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if cpus, ok := bound[p.UID]; ok {
			if !cpus.IsEmpty() {
				plan[p.UID] = cpus
			}
			continue
		}
		if _, pinned := kubeletPinned[p.UID]; pinned {
			continue
		}
		if q, _ := extension.GetPodQoSClass(p); q == extension.QoSBE {
			continue
		}
		if !shared.IsEmpty() {
			plan[p.UID] = shared
		}
	}
	return plan, errs
}

// ErrCgroupMissing means a pod's cgroup is not there (yet, or any more):
// nothing was written, try again later.
var ErrCgroupMissing = errors.New("cgroup not found")

// ApplyCPUSet makes a pod's cgroup and its containers' run on cpus, writing
// only files that differ. In cgroup v1 a child's CPUs must lie within its
// parent's, so the pod cgroup is first widened to old ∪ new, then the
// containers set, then the pod narrowed. It returns how many files it wrote.
func ApplyCPUSet(l cgroup.Layout, pod *corev1.Pod, cpus cpuset.CPUSet) (int, error) {
	podDir := l.PodDir(v1qos.GetPodQOS(pod), pod.UID)
	old, err := l.CPUSet(podDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("pod %s/%s %s: %w", pod.Namespace, pod.Name, podDir, ErrCgroupMissing)
	}
	if err != nil {
		return 0, err
	}
	var dirs []string
	for _, c := range pod.Status.ContainerStatuses {
		if c.ContainerID == "" {
			continue
		}
		dir, err := l.ContainerDir(podDir, c.ContainerID)
		if err != nil {
			return 0, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		dirs = append(dirs, dir)
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
