// Package nodeslo keeps one NodeSLO per node, its spec the strategies of
// the slo-controller-config ConfigMap for that node (each key's
// clusterStrategy, or the first of its nodeStrategies whose nodeSelector
// matches the node's labels); koordlet reads it to enforce QoS.
package nodeslo

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

const Name = "nodeslo"

type Reconciler struct {
	Client client.Client
	Config *config.Store
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var node corev1.Node
	if err := r.Client.Get(ctx, req.NamespacedName, &node); err != nil {
		// A deleted node's NodeSLO goes with it (owner reference).
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want := r.Config.Get(ctx).NodeSLOFor(node.Labels)
	var slo slov1alpha1.NodeSLO
	err := r.Client.Get(ctx, req.NamespacedName, &slo)
	if apierrors.IsNotFound(err) {
		slo = slov1alpha1.NodeSLO{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, OwnerReferences: []metav1.OwnerReference{index.OwnedBy(&node)}},
			Spec:       *want.DeepCopy(),
		}
		return reconcile.Result{}, client.IgnoreAlreadyExists(r.Client.Create(ctx, &slo))
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if equality.Semantic.DeepEqual(slo.Spec, want) {
		return reconcile.Result{}, nil
	}
	slo.Spec = *want.DeepCopy()
	return reconcile.Result{}, r.Client.Update(ctx, &slo)
}

func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		// A node's labels pick its nodeStrategies; nothing else of it matters.
		For(&corev1.Node{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&slov1alpha1.NodeSLO{}, handler.EnqueueRequestsFromMapFunc(index.SameName)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(index.AllNodes(mgr.GetClient())),
			builder.WithPredicates(index.Is(r.Config.Key))).
		Complete(r)
}
