package elasticquota

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/quota"
	"github.com/koord-project/koord/pkg/reservationutil"
)

// treeChanged says whether an ElasticQuota update changes the tree: not
// when only its status or the figures koord-manager writes moved (they
// change with every pod, and a rebuild charges every pod again).
func treeChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*schedulingsigsv1alpha1.ElasticQuota)
	n, ok2 := newObj.(*schedulingsigsv1alpha1.ElasticQuota)
	if !ok1 || !ok2 {
		return true
	}
	figures := func(m map[string]string) map[string]string {
		out := maps.Clone(m)
		delete(out, extension.AnnotationRuntime)
		delete(out, extension.AnnotationRequest)
		return out
	}
	return !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !maps.Equal(o.Labels, n.Labels) ||
		!maps.Equal(figures(o.Annotations), figures(n.Annotations))
}

// rebuild reads the quotas anew and charges every pod again: a quota
// created, deleted or re-parented changes which quota pods belong to.
func (p *Plugin) rebuild() {
	var list []*quota.Quota
	if p.quotas != nil {
		eqs, err := p.quotas.List(labels.Everything())
		if err != nil {
			p.logger.Error(err, "Listing ElasticQuotas")
			return
		}
		for _, eq := range eqs {
			q := quota.QuotaOf(eq)
			list = append(list, q)
		}
	}
	tree := quota.NewTree(list)
	for _, q := range tree.Quotas() {
		if q.Err != nil {
			p.logger.Info("An ElasticQuota cannot be used; its pods stay pending", "err", q.Err)
		}
	}
	p.mu.Lock()
	p.tree = tree
	p.mu.Unlock()
	pods, err := p.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		p.onPod(pod)
	}
	if p.reservations != nil {
		if rs, err := p.reservations.List(labels.Everything()); err == nil {
			for _, r := range rs {
				p.onReservation(r)
			}
		}
	}
	p.wake()
}

func (p *Plugin) onReservation(obj any) {
	r, ok := obj.(*schedulingv1alpha1.Reservation)
	if !ok {
		return
	}
	p.mu.Lock()
	e, holds := p.tree.ReservationEntry(r)
	p.unhold(r.UID)
	if holds && e.Quota != "" {
		if p.held[e.Quota] == nil {
			p.held[e.Quota] = map[types.UID]*schedulingv1alpha1.Reservation{}
		}
		p.held[e.Quota][r.UID] = r
	}
	p.mu.Unlock()
	if !holds {
		p.forget(r.UID)
		return
	}
	p.ledger.Set(r.UID, e)
}

func (p *Plugin) onReservationDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if r, ok := obj.(*schedulingv1alpha1.Reservation); ok {
		p.mu.Lock()
		p.unhold(r.UID)
		p.mu.Unlock()
		p.forget(r.UID)
	}
}

// unhold drops a reservation from the per-quota index; p.mu is held.
func (p *Plugin) unhold(uid types.UID) {
	for name, rs := range p.held {
		delete(rs, uid)
		if len(rs) == 0 {
			delete(p.held, name)
		}
	}
}

// credit is what an Available reservation of the pod's quota already
// holds for it: an owner placed into it takes nothing more from the quota.
func (p *Plugin) credit(quotaName string, pod *corev1.Pod, req quota.Vec) quota.Vec {
	if reservationutil.PlaceholderOf(pod) != "" {
		return nil
	}
	p.mu.RLock()
	rs := make([]*schedulingv1alpha1.Reservation, 0, len(p.held[quotaName]))
	for _, r := range p.held[quotaName] {
		rs = append(rs, r)
	}
	p.mu.RUnlock()
	for _, r := range rs {
		e, ok := p.ledger.Get(r.UID)
		if !ok || e.Quota != quotaName || !reservationutil.IsOwner(r, pod) {
			continue
		}
		covers := true
		for name, v := range req {
			if e.Requests[name] < v {
				covers = false
			}
		}
		if covers {
			return req
		}
	}
	return nil
}

// wake sends the pods the quotas refused back to the active queue.
func (p *Plugin) wake() {
	p.mu.Lock()
	if len(p.refused) == 0 {
		p.mu.Unlock()
		return
	}
	pods := make(map[string]*corev1.Pod, len(p.refused))
	for _, pod := range p.refused {
		pods[pod.Namespace+"/"+pod.Name] = pod
	}
	p.mu.Unlock()
	p.h.Activate(p.logger, pods)
}

// onPod charges a pod as the informer shows it.
func (p *Plugin) onPod(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		p.charge(pod, true)
	}
}

// charge records a pod's part. seen says the object is the informer's:
// its nodeName then means bound, and the assumption is over. (The object
// Reserve is given carries the chosen node already, and the informer may
// still deliver an older copy without it.)
func (p *Plugin) charge(pod *corev1.Pod, seen bool) {
	if !quota.Counts(pod) {
		p.forget(pod.UID)
		return
	}
	p.mu.Lock()
	if seen && pod.Spec.NodeName != "" {
		delete(p.assumed, pod.UID)
	}
	placed := pod.Spec.NodeName != "" || p.assumed[pod.UID]
	leaving := pod.DeletionTimestamp != nil || p.preempted[pod.UID]
	name, _ := p.tree.Resolve(pod) // a pod that names a quota wrongly is in none (PreFilter says why)
	if placed {
		delete(p.refused, pod.UID)
	}
	p.mu.Unlock()
	_, known := p.ledger.Get(pod.UID)
	p.ledger.Set(pod.UID, quota.Entry{Quota: name, Requests: quota.PodRequests(pod), Placed: placed, Leaving: leaving, NonPreemptible: !quota.Preemptible(pod)})
	if !known && name != "" {
		p.wake() // its quota asks more: its runtime may grow
	}
}

func (p *Plugin) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.forget(pod.UID)
	}
}

func (p *Plugin) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.assumed, uid)
	delete(p.refused, uid)
	delete(p.preempted, uid)
	p.mu.Unlock()
	if _, ok := p.ledger.Get(uid); ok {
		p.ledger.Remove(uid)
		p.wake()
	}
}

func (p *Plugin) onNode(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		p.setCapacity(node.Name, quota.VecOf(node.Status.Allocatable))
	}
}

func (p *Plugin) onNodeDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		p.setCapacity(node.Name, nil)
	}
}

func (p *Plugin) setCapacity(node string, v quota.Vec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.capacity[node]; ok && v != nil && old.Equal(v) {
		return // a node's status moved, not what it has to allocate
	}
	if old, ok := p.capacity[node]; ok {
		p.total.Sub(old)
		delete(p.capacity, node)
	}
	if v != nil {
		p.capacity[node] = v
		p.total.Add(v)
	}
	p.totalVersion++
	if len(p.refused) > 0 {
		go p.wake()
	}
}
