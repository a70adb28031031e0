package qos

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"
)

// Claims is what VetClaims needs to know about the node.
type Claims struct {
	// Schedulers are the schedulerNames whose pods' resource-status is the
	// scheduler's record (koord-scheduler's profiles); on any other pod it
	// is a claim nobody checked.
	Schedulers []string
	// All are the node's CPUs; Reserved kubelet's reserved CPUs.
	All, Reserved cpuset.CPUSet
	// KubeletPinned are the CPUs kubelet's static policy gave its own pods.
	KubeletPinned map[types.UID]cpuset.CPUSet
}

// VetClaims checks every pod's bound cpuset before koordlet applies it and
// returns the claims it refuses, each with the reason: a pod not bound by
// koord-scheduler, CPUs the node does not have, kubelet's reserved or pinned
// CPUs, or CPUs an older pod claimed first. Oldest first (creation time, then
// UID), so the answer is the same on every pass and after a restart, and a
// pod already running keeps its CPUs against a newcomer. A refused pod runs
// on the shared pool like an ordinary pod; its CPUs stay out of everyone's
// exclusive set. The scheduler never gives one CPU to two pods, so on a
// healthy node this refuses nothing: what it catches is an annotation
// written by someone else (the admission policy refuses those first).
func VetClaims(pods []*corev1.Pod, bound map[types.UID]cpuset.CPUSet, c Claims) map[types.UID]error {
	claimants := make([]*corev1.Pod, 0, len(bound))
	for _, p := range pods {
		if _, ok := bound[p.UID]; ok {
			claimants = append(claimants, p)
		}
	}
	slices.SortFunc(claimants, func(a, b *corev1.Pod) int {
		if d := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return cmp.Compare(a.UID, b.UID)
	})
	pinned := cpuset.New()
	for _, cpus := range c.KubeletPinned {
		pinned = pinned.Union(cpus)
	}
	refused := map[types.UID]error{}
	taken := map[int]*corev1.Pod{}
	for _, p := range claimants {
		cpus := bound[p.UID]
		if err := c.check(p, cpus, pinned, taken); err != nil {
			refused[p.UID] = fmt.Errorf("pod %s/%s: resource-status cpuset %s refused: %w; the pod runs on the shared pool", p.Namespace, p.Name, cpus, err)
			continue
		}
		for _, id := range cpus.UnsortedList() {
			taken[id] = p
		}
	}
	return refused
}

func (c Claims) check(p *corev1.Pod, cpus, pinned cpuset.CPUSet, taken map[int]*corev1.Pod) error {
	if !slices.Contains(c.Schedulers, p.Spec.SchedulerName) {
		return fmt.Errorf("schedulerName %q is not koord-scheduler's (%v), so no Koord scheduler chose these CPUs", p.Spec.SchedulerName, c.Schedulers)
	}
	if missing := cpus.Difference(c.All); !missing.IsEmpty() {
		return fmt.Errorf("CPUs %s are not on this node (%s)", missing, c.All)
	}
	if r := cpus.Intersection(c.Reserved); !r.IsEmpty() {
		return fmt.Errorf("CPUs %s are kubelet's reserved CPUs", r)
	}
	if k := cpus.Intersection(pinned); !k.IsEmpty() {
		return fmt.Errorf("CPUs %s are pinned by kubelet's static CPU manager policy", k)
	}
	for _, id := range cpus.List() {
		if holder := taken[id]; holder != nil {
			return fmt.Errorf("CPU %d is already pod %s/%s's, which claimed it first", id, holder.Namespace, holder.Name)
		}
	}
	return nil
}
