// Package nodemetric keeps one NodeMetric per node with the collection policy
// of the colocation config, which koordlet follows when it reports.
package nodemetric

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/slo/config"
	"github.com/koord-project/koord/pkg/slo/index"
)

const Name = "nodemetric"

type Reconciler struct {
	Client client.Client
	Config *config.Store
}

// Spec is the collection policy a colocation config asks of koordlet, with
// the API's default windows (the ones LoadAwareScheduling reads).
func Spec(c config.Colocation) slov1alpha1.NodeMetricSpec {
	agg, report := c.MetricAggregateDurationSeconds, c.MetricReportIntervalSeconds
	var windows []metav1.Duration
	if c.MetricAggregatePolicy != nil && len(c.MetricAggregatePolicy.Durations) > 0 {
		windows = append(windows, c.MetricAggregatePolicy.Durations...)
	} else {
		for _, w := range slov1alpha1.DefaultAggregateWindows() {
			windows = append(windows, metav1.Duration{Duration: w})
		}
	}
	return slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{
		AggregateDurationSeconds: &agg,
		ReportIntervalSeconds:    &report,
		NodeAggregatePolicy:      &slov1alpha1.AggregatePolicy{Durations: windows},
		NodeMemoryCollectPolicy:  c.MetricMemoryCollectPolicy,
	}}
}

// New is the NodeMetric koord-manager creates for node: the only creator;
// koordlet writes its status.
func New(node *corev1.Node, c config.Colocation) *slov1alpha1.NodeMetric {
	return &slov1alpha1.NodeMetric{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, OwnerReferences: []metav1.OwnerReference{index.OwnedBy(node)}},
		Spec:       Spec(c),
	}
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var node corev1.Node
	if err := r.Client.Get(ctx, req.NamespacedName, &node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	colocation, err := r.Config.Get(ctx).ColocationForNode(&node)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring the node's own colocation settings that do not apply", "node", node.Name)
	}
	want := Spec(colocation)
	var nm slov1alpha1.NodeMetric
	err = r.Client.Get(ctx, req.NamespacedName, &nm)
	if apierrors.IsNotFound(err) {
		// Another replica's create, just before a handover: the next event brings us back.
		return reconcile.Result{}, client.IgnoreAlreadyExists(r.Client.Create(ctx, New(&node, colocation)))
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if equality.Semantic.DeepEqual(nm.Spec, want) {
		return reconcile.Result{}, nil
	}
	nm.Spec = want
	return reconcile.Result{}, r.Client.Update(ctx, &nm)
}

func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		// A node's labels pick its nodeConfigs entry; they and its
		// colocation-strategy annotation override the entry's fields.
		For(&corev1.Node{}, builder.WithPredicates(predicate.Or[client.Object](predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Only spec changes of NodeMetric matter here; koordlet's status updates do not.
		Watches(&slov1alpha1.NodeMetric{}, handler.EnqueueRequestsFromMapFunc(index.SameName),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(index.AllNodes(mgr.GetClient())),
			builder.WithPredicates(index.Is(r.Config.Key))).
		Complete(r)
}
