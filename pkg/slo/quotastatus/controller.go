// Package quotastatus writes each ElasticQuota's figures where Koordinator
// writes them: status.used, and the annotations
// quota.scheduling.koordinator.sh/runtime, /request, /non-preemptible-used
// and /non-preemptible-request (ResourceLists in JSON). They are computed by package quota, as koord-scheduler's
// ElasticQuota plugin computes them, from the API's pods and nodes. The
// controller is leader-elected in koord-manager, so that one writer keeps
// them.
package quotastatus

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/quota"
)

// Reconciler keeps the quotas' figures. Every event maps to one key: the
// tree is computed whole, since one pod changes its siblings' runtimes.
type Reconciler struct {
	Client client.Client
	// MinInterval is the least time between two computations: with pods
	// arriving all the time, the one key would otherwise be computed back
	// to back, each time over every pod of the cluster. Events in between
	// are folded into the next computation.
	MinInterval time.Duration
	last        time.Time
}

// minInterval is koord-manager's MinInterval: the figures are for people
// and dashboards (the scheduler computes its own), a second late is fine.
const minInterval = time.Second

var treeKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "elastic-quota-tree"}}

// Setup registers the controller when the ElasticQuota CRD is served.
func Setup(mgr ctrl.Manager) (bool, error) {
	gk := schedulingsigsv1alpha1.SchemeGroupVersion.WithKind("ElasticQuota").GroupKind()
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, schedulingsigsv1alpha1.SchemeGroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, err
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{treeKey}
	})
	return true, ctrl.NewControllerManagedBy(mgr).Named("elasticquota").
		Watches(&schedulingsigsv1alpha1.ElasticQuota{}, all).
		Watches(&corev1.Pod{}, all).
		Watches(&corev1.Node{}, all).
		Watches(&schedulingv1alpha1.Reservation{}, all).
		Complete(&Reconciler{Client: mgr.GetClient(), MinInterval: minInterval})
}

// Reconcile computes the tree and writes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	// One worker runs the one key, so last needs no lock.
	if wait := r.MinInterval - time.Since(r.last); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.last = time.Now()
	var eqs schedulingsigsv1alpha1.ElasticQuotaList
	if err := r.Client.List(ctx, &eqs); err != nil {
		return ctrl.Result{}, err
	}
	if len(eqs.Items) == 0 {
		return ctrl.Result{}, nil
	}
	var pods corev1.PodList
	// Compute only reads them: no copy of every pod of the cache.
	if err := r.Client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, err
	}
	var reservations schedulingv1alpha1.ReservationList
	if err := r.Client.List(ctx, &reservations); err != nil {
		return ctrl.Result{}, err
	}
	figures := Compute(eqs.Items, pods.Items, nodes.Items, reservations.Items)
	for i := range eqs.Items {
		if err := r.write(ctx, &eqs.Items[i], figures); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// Figures are what is written for each quota.
type Figures struct {
	*quota.Shares
	// NonPreemptibleUsed and NonPreemptibleRequest are what pods labelled
	// preemptible=false hold (placed) and ask (placed or pending), per
	// quota; a parent's are its subtree's.
	NonPreemptibleUsed, NonPreemptibleRequest map[string]quota.Vec
}

// Compute is the tree's figures for these quotas, pods, nodes and
// reservations.
func Compute(eqs []schedulingsigsv1alpha1.ElasticQuota, pods []corev1.Pod, nodes []corev1.Node, reservations []schedulingv1alpha1.Reservation) *Figures {
	list := make([]*quota.Quota, 0, len(eqs))
	for i := range eqs {
		list = append(list, quota.QuotaOf(&eqs[i]))
	}
	tree := quota.NewTree(list)
	ledger := quota.NewLedger()
	f := &Figures{NonPreemptibleUsed: map[string]quota.Vec{}, NonPreemptibleRequest: map[string]quota.Vec{}}
	add := func(m map[string]quota.Vec, name string, v quota.Vec) {
		for _, q := range append([]*quota.Quota{tree.Get(name)}, tree.Ancestors(name)...) {
			if m[q.Name] == nil {
				m[q.Name] = quota.Vec{}
			}
			m[q.Name].Add(v)
		}
	}
	for i := range pods {
		p := &pods[i]
		if !quota.Counts(p) {
			continue
		}
		name, _ := tree.Resolve(p)
		e := quota.Entry{Quota: name, Requests: quota.PodRequests(p), Placed: p.Spec.NodeName != ""}
		ledger.Set(p.UID, e)
		if name != "" && !quota.Preemptible(p) {
			add(f.NonPreemptibleRequest, name, e.Requests)
			if e.Placed {
				add(f.NonPreemptibleUsed, name, e.Requests)
			}
		}
	}
	for i := range reservations {
		if e, ok := tree.ReservationEntry(&reservations[i]); ok {
			ledger.Set(reservations[i].UID, e)
		}
	}
	total := quota.Vec{}
	for i := range nodes {
		total.Add(quota.VecOf(nodes[i].Status.Allocatable))
	}
	used, request, outside := ledger.Totals()
	total.Sub(outside)
	f.Shares = tree.Compute(used, request, total)
	return f
}

// write updates one quota's annotations and status when they changed. A
// quota the tree could not use gets none (its figures would mean nothing).
func (r *Reconciler) write(ctx context.Context, eq *schedulingsigsv1alpha1.ElasticQuota, f *Figures) error {
	runtime, ok := f.Runtime[eq.Name]
	if !ok {
		return nil
	}
	want := map[string]quota.Vec{
		extension.AnnotationRuntime:               runtime,
		extension.AnnotationRequest:               f.Request[eq.Name],
		extension.AnnotationNonPreemptibleUsed:    f.NonPreemptibleUsed[eq.Name],
		extension.AnnotationNonPreemptibleRequest: f.NonPreemptibleRequest[eq.Name],
	}
	changed := map[string]string{}
	for key, v := range want {
		text, err := json.Marshal(v.List())
		if err != nil {
			return err
		}
		if eq.Annotations[key] != string(text) {
			changed[key] = string(text)
		}
	}
	if len(changed) > 0 {
		patch := client.MergeFrom(eq.DeepCopy())
		if eq.Annotations == nil {
			eq.Annotations = map[string]string{}
		}
		maps.Copy(eq.Annotations, changed)
		if err := r.Client.Patch(ctx, eq, patch); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	used := f.Used[eq.Name].List()
	if (len(used) == 0 && len(eq.Status.Used) == 0) || apiequality.Semantic.DeepEqual(used, eq.Status.Used) {
		return nil
	}
	patch := client.MergeFrom(eq.DeepCopy())
	eq.Status.Used = used
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, eq, patch))
}
