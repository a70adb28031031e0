package frameworkext

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Rejected remembers the pods a plugin turned away, so that the plugin can
// send them back to the active queue (Activate) once its own cache has taken
// in a change that may let them in: a NodeMetric with less load, CPUs freed,
// a reservation consumed.
//
// This is how Koord's plugins requeue pods on their own objects, instead of
// through queueing hints on the scheduler's event handlers: those run apart
// from the plugin's, so a pod requeued by one could be filtered before the
// plugin's cache had the change and be turned away again with nothing left
// to requeue it. Here the cache changes first and the pods follow. The
// scheduler also retries pods on its own events (a node added, a pod
// deleted) and every five minutes.
type Rejected struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
}

// Add remembers pod (call it once per scheduling cycle: Filter runs on many
// nodes at once).
func (r *Rejected) Add(pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[types.UID]*corev1.Pod{}
	}
	r.pods[pod.UID] = pod
}

// Forget drops a pod that was placed or deleted.
func (r *Rejected) Forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pods, uid)
}

// Activate moves every remembered pod to the active queue and forgets them:
// they are remembered again if turned away again.
func (r *Rejected) Activate(logger klog.Logger, h fwk.Handle) {
	r.mu.Lock()
	if len(r.pods) == 0 || h == nil {
		r.mu.Unlock()
		return
	}
	pods := make(map[string]*corev1.Pod, len(r.pods))
	for _, p := range r.pods {
		pods[p.Namespace+"/"+p.Name] = p
	}
	r.pods = nil
	r.mu.Unlock()
	h.Activate(logger, pods)
}

// Len is how many pods are remembered.
func (r *Rejected) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pods)
}
