package noderesource

import (
	"context"
	"maps"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/compat"
	"github.com/koord-project/koord/pkg/slo/config"
	"github.com/koord-project/koord/pkg/slo/index"
)

// Name is the controller's name in logs and metrics.
const Name = "noderesource"

// Reconciler keeps each Node's batch and mid resources in line with Calculate.
type Reconciler struct {
	Client client.Client
	Config *config.Store
	// Reporter, when set, reports NodeMetric fields Koord does not act on.
	Reporter *compat.Reporter
	// Now is the clock (tests move it).
	Now func() time.Time

	mu sync.Mutex
	// lastWrite is when each node's batch resources were last written by this
	// process; after a restart the first reconcile of a node compares only
	// amounts, so a restart does not rewrite every node at once.
	lastWrite map[string]time.Time
	// reported are the NodeMetrics whose fields were reported
	// (reportFields), by node.
	reported map[string]types.UID
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := klog.FromContext(ctx)
	var node corev1.Node
	if err := r.Client.Get(ctx, req.NamespacedName, &node); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			if r.Reporter != nil {
				r.Reporter.Forget(compat.NodeMetric, "", req.Name)
			}
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	cfg, err := r.Config.Get(ctx).ColocationForNode(&node)
	if err != nil {
		logger.Error(err, "Ignoring the node's own colocation settings that do not apply", "node", node.Name)
	}
	have := current(&node)
	if !cfg.Enable {
		if have == nil {
			return reconcile.Result{}, nil
		}
		logger.Info("colocation disabled: removing batch and mid resources", "node", node.Name)
		return reconcile.Result{}, r.write(ctx, &node, nil)
	}

	var metric *slov1alpha1.NodeMetric
	var nm slov1alpha1.NodeMetric
	switch err := r.Client.Get(ctx, types.NamespacedName{Name: node.Name}, &nm); {
	case err == nil:
		metric = &nm
		r.reportFields(&nm)
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.MatchingFields{index.PodNodeName: node.Name}); err != nil {
		return reconcile.Result{}, err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	now := r.now()
	want := Calculate(&node, metric, pods, cfg, now)
	// Come back when the metric would turn stale, so a silent koordlet
	// degrades its node even though nothing else changes.
	requeue := cfg.UpdateAfter()
	if metric != nil && metric.Status.UpdateTime != nil {
		if until := metric.Status.UpdateTime.Add(cfg.DegradeAfter()).Sub(now) + time.Second; until > 0 && until < requeue {
			requeue = until
		}
	}
	if !r.needsWrite(&node, have, want, cfg, now) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	logger.V(2).Info("updating batch and mid resources", "node", node.Name, "batchCPU", want.BatchMilliCPU, "batchMemory", want.BatchMemory,
		"midCPU", want.MidMilliCPU, "midMemory", want.MidMemory, "reason", want.Reason)
	return reconcile.Result{RequeueAfter: requeue}, r.write(ctx, &node, &want)
}

// offered are the node status resources the controller owns.
var offered = []corev1.ResourceName{extension.BatchCPU, extension.BatchMemory, extension.MidCPU, extension.MidMemory}

// current is what the node advertises now, nil when it has none of them.
func current(node *corev1.Node) *Offer {
	a := node.Status.Allocatable
	found := false
	for _, name := range offered {
		_, ok := a[name]
		found = found || ok
	}
	if !found {
		return nil
	}
	q := func(name corev1.ResourceName) int64 { v := a[name]; return v.Value() }
	return &Offer{BatchMilliCPU: q(extension.BatchCPU), BatchMemory: q(extension.BatchMemory), MidMilliCPU: q(extension.MidCPU), MidMemory: q(extension.MidMemory)}
}

func (o Offer) amounts() Offer { o.Reason = ""; return o }

func (r *Reconciler) needsWrite(node *corev1.Node, have *Offer, want Offer, cfg config.Colocation, now time.Time) bool {
	if have == nil {
		return true
	}
	if *have == want.amounts() {
		return false
	}
	// Degraded to nothing is always written: batch and mid pods must stop
	// landing there.
	if want.amounts() == (Offer{}) {
		return true
	}
	alloc := node.Status.Allocatable
	cpu, mem := alloc.Cpu().MilliValue(), alloc.Memory().Value()
	d := cfg.ResourceDiffThreshold
	if moved(have.BatchMilliCPU, want.BatchMilliCPU, cpu, d) || moved(have.BatchMemory, want.BatchMemory, mem, d) ||
		moved(have.MidMilliCPU, want.MidMilliCPU, cpu, d) || moved(have.MidMemory, want.MidMemory, mem, d) {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.lastWrite[node.Name]
	if !ok {
		r.remember(node.Name, now)
		return false
	}
	return now.Sub(last) >= cfg.UpdateAfter()
}

func moved(have, want, allocatable int64, threshold float64) bool {
	return math.Abs(float64(want-have)) > threshold*float64(allocatable)
}

// write sets (or, with nil, removes) the batch and mid resources on the Node's status.
func (r *Reconciler) write(ctx context.Context, node *corev1.Node, b *Offer) error {
	patch := client.MergeFrom(node.DeepCopy())
	for _, l := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		if l == nil {
			continue
		}
		if b == nil {
			for _, name := range offered {
				delete(l, name)
			}
			continue
		}
		l[extension.BatchCPU] = *resource.NewQuantity(b.BatchMilliCPU, resource.DecimalSI)
		l[extension.BatchMemory] = *resource.NewQuantity(b.BatchMemory, resource.BinarySI)
		l[extension.MidCPU] = *resource.NewQuantity(b.MidMilliCPU, resource.DecimalSI)
		l[extension.MidMemory] = *resource.NewQuantity(b.MidMemory, resource.BinarySI)
	}
	if err := r.Client.Status().Patch(ctx, node, patch); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b == nil {
		delete(r.lastWrite, node.Name)
	} else {
		r.remember(node.Name, r.now())
	}
	batchWrites.Inc()
	return nil
}

// reportFields reports the NodeMetric's fields Koord does not act on, once
// per object after its first report: every report has the same fields, and
// reading a whole NodeMetric at each one would cost more than the rest of
// the reconcile.
func (r *Reconciler) reportFields(nm *slov1alpha1.NodeMetric) {
	if r.Reporter == nil || nm.Status.UpdateTime == nil {
		return
	}
	r.mu.Lock()
	if r.reported == nil {
		r.reported = map[string]types.UID{}
	}
	done := r.reported[nm.Name] == nm.UID
	r.reported[nm.Name] = nm.UID
	r.mu.Unlock()
	if !done {
		r.Reporter.NotActedOn(nm, compat.NodeMetric, compat.NotActedOnIn(compat.NodeMetric, nm))
	}
}

func (r *Reconciler) remember(node string, t time.Time) {
	if r.lastWrite == nil {
		r.lastWrite = map[string]time.Time{}
	}
	r.lastWrite[node] = t
}

func (r *Reconciler) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.lastWrite, node)
	delete(r.reported, node)
}

// SetupWithManager watches Nodes (created, or allocatable changed: kubelet's
// heartbeats are ignored), NodeMetrics and the ConfigMap.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
				// Labels pick the node's nodeConfigs entry, and they and the
				// colocation-strategy annotation override its fields.
				return !equalResources(o.Status.Allocatable, n.Status.Allocatable) || !equalResources(o.Status.Capacity, n.Status.Capacity) ||
					!maps.Equal(o.Labels, n.Labels) ||
					o.Annotations[extension.AnnotationNodeColocationStrategy] != n.Annotations[extension.AnnotationNodeColocationStrategy]
			},
		})).
		Watches(&slov1alpha1.NodeMetric{}, handler.EnqueueRequestsFromMapFunc(index.SameName)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(index.AllNodes(mgr.GetClient())),
			builder.WithPredicates(index.Is(r.Config.Key))).
		Complete(r)
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
