// Package index holds what koord-manager's controllers share: the pod
// field index and the event mappings.
package index

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// PodNodeName indexes pods by spec.nodeName.
const PodNodeName = "spec.nodeName"

// Register adds the indexes the controllers list by.
func Register(ctx context.Context, idx client.FieldIndexer) error {
	return idx.IndexField(ctx, &corev1.Pod{}, PodNodeName, func(o client.Object) []string {
		if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
}

// SameName maps a per-node object (NodeMetric, NodeSLO) to its node.
func SameName(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
}

// AllNodes maps an event to every node (a configuration change).
func AllNodes(c client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes); err != nil {
			klog.FromContext(ctx).Error(err, "listing nodes after a configuration change")
			return nil
		}
		reqs := make([]reconcile.Request, len(nodes.Items))
		for i := range nodes.Items {
			reqs[i].Name = nodes.Items[i].Name
		}
		return reqs
	}
}

// Is passes only events of the object named key.
func Is(key types.NamespacedName) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == key.Name && o.GetNamespace() == key.Namespace
	})
}

// OwnedBy makes a per-node object go when its node goes.
func OwnedBy(node *corev1.Node) metav1.OwnerReference {
	return *metav1.NewControllerRef(node, corev1.SchemeGroupVersion.WithKind("Node"))
}
