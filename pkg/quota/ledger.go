package quota

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
)

// Resolve is the quota a pod is charged to: the one its label names, or
// else the quota named after its namespace in that namespace, or else one
// whose namespaces annotation lists the namespace; "" for none. A quota
// named by label must be in the pod's namespace or list it (a tenant may
// not charge its pods to another team's quota), must be usable, and must
// not be a parent: otherwise the error says why, naming the key. A
// reservation's placeholder pod is charged by its labels alone, as its
// Reservation is.
func (t *Tree) Resolve(pod *corev1.Pod) (string, error) {
	if reservationutil.PlaceholderOf(pod) != "" {
		return t.ResolveLabels(pod.Labels)
	}
	name, err := extension.PodQuotaName(pod.Labels)
	if err != nil {
		return "", err
	}
	if name == "" {
		if q := t.quotas[pod.Namespace]; q != nil && q.Namespace == pod.Namespace && q.Err == nil && !q.IsParent {
			return q.Name, nil
		}
		return t.byNamespace(pod.Namespace), nil
	}
	q := t.quotas[name]
	if q != nil && q.Namespace != pod.Namespace && !slices.Contains(q.Namespaces, pod.Namespace) {
		return "", fmt.Errorf("label %s=%s: the quota is in namespace %s and its annotation %s does not list %s", extension.LabelQuotaName, name, q.Namespace, extension.AnnotationQuotaNamespaces, pod.Namespace)
	}
	return t.usable(name)
}

// ResolveLabels is the quota a label set names, with no namespace rule:
// for Reservations (cluster-scoped: their authors may use any quota) and
// their placeholder pods. "" when the labels name none.
func (t *Tree) ResolveLabels(labels map[string]string) (string, error) {
	name, err := extension.PodQuotaName(labels)
	if err != nil || name == "" {
		return "", err
	}
	return t.usable(name)
}

// usable checks that a quota named by label can take pods.
func (t *Tree) usable(name string) (string, error) {
	q := t.quotas[name]
	switch {
	case q == nil:
		return "", fmt.Errorf("label %s=%s: no ElasticQuota has that name", extension.LabelQuotaName, name)
	case q.Err != nil:
		return "", fmt.Errorf("label %s=%s: %w", extension.LabelQuotaName, name, q.Err)
	case q.IsParent:
		return "", fmt.Errorf("label %s=%s: the quota is a parent (%s=true); pods go in its children", extension.LabelQuotaName, name, extension.LabelQuotaIsParent)
	}
	return name, nil
}

// byNamespace is the usable leaf quota whose namespaces annotation lists
// ns; the first by name when several do, so the answer does not depend on
// event order.
func (t *Tree) byNamespace(ns string) string {
	best := ""
	for name, q := range t.quotas {
		if q.Err == nil && !q.IsParent && slices.Contains(q.Namespaces, ns) && (best == "" || name < best) {
			best = name
		}
	}
	return best
}

// PodRequests is what a pod asks, as a Vec.
func PodRequests(pod *corev1.Pod) Vec {
	return VecOf(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}

// Ledger sums, per quota, what its pods hold (placed: bound, or assumed
// by the scheduler) and ask (placed or pending), and what placed pods in
// no quota hold. It is safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	pods    map[types.UID]Entry
	used    map[string]Vec
	request map[string]Vec
	leaving map[string]Vec
	// pinned is, per quota, what its placed non-preemptible pods hold:
	// no preemption can take it back, so it may not pass the quota's min.
	pinned  map[string]Vec
	outside Vec
	// version counts the changes to what the quotas share: any quota's
	// request, or what pods outside the tree hold. Runtimes depend on
	// these alone (a pod placed moves from asking to using, not the sum).
	version uint64
}

// Entry is one pod's part.
type Entry struct {
	Quota    string // "" for none
	Requests Vec
	Placed   bool
	// Leaving: the pod is being deleted (preempted, evicted) but still
	// holds what it holds until it is gone.
	Leaving bool
	// NonPreemptible: the pod is labelled preemptible=false (Preemptible).
	NonPreemptible bool
}

// shared is what an entry adds to what runtimes depend on: its quota's
// request, or (outside the tree, placed) what it holds; nothing else.
func (e Entry) shared() (string, Vec) {
	if e.Quota == "" && !e.Placed {
		return "", nil
	}
	return e.Quota, e.Requests
}

// NewLedger is an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{pods: map[types.UID]Entry{}, used: map[string]Vec{}, request: map[string]Vec{}, leaving: map[string]Vec{}, pinned: map[string]Vec{}, outside: Vec{}}
}

// Set records a pod's part, replacing what it had.
func (l *Ledger) Set(uid types.UID, e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.pods[uid] // the zero Entry shares nothing
	oq, ov := old.shared()
	nq, nv := e.shared()
	if oq != nq || !ov.Equal(nv) {
		l.version++
	}
	l.remove(uid)
	l.pods[uid] = e
	l.apply(e, 1)
}

// apply adds (sign 1) or takes away (sign -1) an entry's part.
func (l *Ledger) apply(e Entry, sign int64) {
	if e.Quota == "" {
		if e.Placed {
			l.outside.addScaled(e.Requests, sign)
		}
		return
	}
	addTo(l.request, e.Quota, e.Requests, sign)
	if e.Placed {
		addTo(l.used, e.Quota, e.Requests, sign)
		if e.Leaving {
			addTo(l.leaving, e.Quota, e.Requests, sign)
		}
		if e.NonPreemptible {
			addTo(l.pinned, e.Quota, e.Requests, sign)
		}
	}
}

// Remove forgets a pod.
func (l *Ledger) Remove(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.pods[uid]; ok {
		if _, v := e.shared(); len(v) > 0 {
			l.version++
		}
	}
	l.remove(uid)
}

func (l *Ledger) remove(uid types.UID) {
	if e, ok := l.pods[uid]; ok {
		delete(l.pods, uid)
		l.apply(e, -1)
	}
}

func addTo(m map[string]Vec, name string, v Vec, sign int64) {
	if m[name] == nil {
		m[name] = Vec{}
	}
	m[name].addScaled(v, sign)
}

// Get is a pod's part.
func (l *Ledger) Get(uid types.UID) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.pods[uid]
	return e, ok
}

// Totals are copies of the sums: used and requested per quota, and what
// placed pods in no quota hold.
func (l *Ledger) Totals() (used, request map[string]Vec, outside Vec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	used, request = make(map[string]Vec, len(l.used)), make(map[string]Vec, len(l.request))
	for name, v := range l.used {
		used[name] = v.Clone()
	}
	for name, v := range l.request {
		request[name] = v.Clone()
	}
	return used, request, l.outside.Clone()
}

// Version changes whenever a quota's request or what pods outside the
// tree hold changes: runtimes computed at one version hold until it moves.
func (l *Ledger) Version() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// UsedBy is a copy of what one quota's pods hold.
func (l *Ledger) UsedBy(name string) Vec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used[name].Clone()
}

// NonPreemptibleUsedBy is a copy of what one quota's placed
// non-preemptible pods hold.
func (l *Ledger) NonPreemptibleUsedBy(name string) Vec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pinned[name].Clone()
}

// Leaving is, per quota, what its placed pods that are being deleted
// hold: preemption does not count on it to keep a quota at its min.
func (l *Ledger) Leaving() map[string]Vec {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Vec, len(l.leaving))
	for name, v := range l.leaving {
		out[name] = v.Clone()
	}
	return out
}

// Counts says whether a pod holds or asks anything: pods that finished do
// not.
func Counts(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Preemptible is false for a pod labelled quota.scheduling.koordinator.sh/
// preemptible=false.
func Preemptible(pod *corev1.Pod) bool {
	return pod.Labels[extension.LabelPreemptible] != "false"
}

// ReservationEntry is what an Available reservation holds, as a ledger
// entry: the part its owners have not taken yet (owners' pods are charged
// to their own quotas), charged to the quota its template's label (or its
// own) names, or outside the tree. ok is false for a reservation that
// holds nothing.
func (t *Tree) ReservationEntry(r *schedulingv1alpha1.Reservation) (e Entry, ok bool) {
	if !reservationutil.IsAvailable(r) || r.Status.NodeName == "" {
		return Entry{}, false
	}
	labels := r.Labels
	if r.Spec.Template != nil && r.Spec.Template.Labels[extension.LabelQuotaName] != "" {
		labels = r.Spec.Template.Labels
	}
	name, _ := t.ResolveLabels(labels) // one that names a quota wrongly holds outside it
	return Entry{Quota: name, Requests: VecOf(reservationutil.Remaining(r.Status.Allocatable, r.Status.Allocated)), Placed: true}, true
}
