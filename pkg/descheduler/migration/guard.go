package migration

import (
	"fmt"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/descheduler/pkg/utils"

	"github.com/koord-project/koord/apis/extension"
)

// Guard holds every PodMigrationJob, whoever created it, to the rules that
// decide which pods koord-descheduler may move at all: MigrationController's
// namespaces, the evictor's filters (no bare, DaemonSet, mirror, static or
// terminating pods; system-critical, local-storage and PVC pods only where
// its args allow; its label selector and priority threshold) and a
// pod's eviction cost of 2147483647. Without it, anyone who may create a
// job could evict any pod by naming it. Koordinator fails such jobs with
// ForbiddenMigratePod; so does Koord.
type Guard struct {
	rules atomic.Pointer[GuardRules]
}

// GuardRules are the checks, set once the caches they read have synced.
type GuardRules struct {
	// Namespace says whether pods of a namespace may move.
	Namespace func(string) bool
	// Filter and PreEvictionFilter are the evictor's.
	Filter, PreEvictionFilter func(*corev1.Pod) bool
}

// Set installs the rules.
func (g *Guard) Set(r GuardRules) { g.rules.Store(&r) }

// Forbidden says why pod may not move ("" when it may); ready is false
// until the rules are set (the job waits).
func (g *Guard) Forbidden(pod *corev1.Pod) (why string, ready bool) {
	r := g.rules.Load()
	if r == nil {
		return "", false
	}
	switch {
	case r.Namespace != nil && !r.Namespace(pod.Namespace):
		return fmt.Sprintf("namespace %s is not one the descheduler moves pods of (MigrationController's namespaces)", pod.Namespace), true
	case extension.NeverEvict(pod.Annotations):
		return fmt.Sprintf("the pod's %s is 2147483647: it is never moved", extension.AnnotationEvictionCost), true
	case r.Filter != nil && !r.Filter(pod):
		return "the descheduler's evictor does not move it: " + evictorReason(pod), true
	case r.PreEvictionFilter != nil && !r.PreEvictionFilter(pod):
		return "the descheduler's evictor does not move it: its namespace does not match the evictor's namespaceLabelSelector", true
	}
	return "", true
}

// evictorReason names what the evictor's filter most likely refused.
func evictorReason(pod *corev1.Pod) string {
	var why []string
	for _, c := range []struct {
		is   bool
		what string
	}{
		{len(pod.OwnerReferences) == 0, "it is a bare pod, which nothing would recreate (evictFailedBarePods lets failed ones go)"},
		{utils.IsDaemonsetPod(pod.OwnerReferences), "it is a DaemonSet's pod"},
		{utils.IsMirrorPod(pod), "it is a mirror pod"},
		{utils.IsStaticPod(pod), "it is a static pod"},
		{utils.IsPodTerminating(pod), "it is terminating"},
		{utils.IsCriticalPriorityPod(pod), "it is system-critical (evictSystemCriticalPods)"},
		{utils.IsPodWithLocalStorage(pod), "it has local storage (evictLocalStoragePods)"},
		{utils.IsPodWithPVC(pod), "it uses a PersistentVolumeClaim (ignorePvcPods)"},
	} {
		if c.is {
			why = append(why, c.what)
		}
	}
	if len(why) == 0 {
		return "its labels or priority are outside MigrationController's labelSelector or priorityThreshold"
	}
	return strings.Join(why, "; ")
}
