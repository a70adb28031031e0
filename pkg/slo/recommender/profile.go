package recommender

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
)

// LabelProfile marks a Recommendation a RecommendationProfile made, with
// the profile's name.
const LabelProfile = "analysis.koordinator.sh/profile"

// profileKinds are the workload kinds a profile can select.
var profileKinds = map[string]schema.GroupVersionKind{
	"Deployment":  {Group: "apps", Version: "v1", Kind: "Deployment"},
	"StatefulSet": {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	"DaemonSet":   {Group: "apps", Version: "v1", Kind: "DaemonSet"},
	"ReplicaSet":  {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	"Job":         {Group: "batch", Version: "v1", Kind: "Job"},
	"CronJob":     {Group: "batch", Version: "v1", Kind: "CronJob"},
}

// ProfileReconciler keeps, for each RecommendationProfile, one
// Recommendation per selected workload: it creates the missing ones and
// deletes those whose workload is gone or no longer selected. The profile
// owns them, so deleting it deletes them.
type ProfileReconciler struct {
	Client client.Client
}

// SetupProfiles registers the profile controller: a profile is reconciled
// when it, a Recommendation it owns, a namespace or a workload changes.
func SetupProfiles(mgr ctrl.Manager) error {
	p := &ProfileReconciler{Client: mgr.GetClient()}
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list analysisv1alpha1.RecommendationProfileList
		if err := p.Client.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, pr := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: pr.Name}})
		}
		return out
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("recommendationprofile").For(&analysisv1alpha1.RecommendationProfile{}).
		Owns(&analysisv1alpha1.Recommendation{}).
		Watches(&corev1.Namespace{}, all)
	for _, name := range slices.Sorted(maps.Keys(profileKinds)) {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(profileKinds[name])
		b = b.WatchesMetadata(m, all)
	}
	return b.Complete(p)
}

// RecommendationName is the name of the Recommendation a profile makes
// for a workload: its kind and name, hashed when too long for a name.
func RecommendationName(kind, name string) string {
	n := strings.ToLower(kind) + "-" + name
	if len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:240] + "-" + hex.EncodeToString(sum[:])[:12]
}

// Reconcile brings one profile's Recommendations in line with its spec.
func (p *ProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	profile := &analysisv1alpha1.RecommendationProfile{}
	if err := p.Client.Get(ctx, req.NamespacedName, profile); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	namespaces, err := p.namespaces(ctx, profile)
	if err != nil {
		return ctrl.Result{}, err
	}
	want := map[types.NamespacedName]*analysisv1alpha1.Recommendation{}
	for _, kind := range profile.Spec.ControllerKinds {
		gvk, ok := profileKinds[kind]
		if !ok {
			continue // the CRD refuses other kinds; an object stored before is skipped
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := p.Client.List(ctx, list); err != nil {
			return ctrl.Result{}, err
		}
		for _, w := range list.Items {
			if !namespaces[w.Namespace] || w.DeletionTimestamp != nil {
				continue
			}
			// A Deployment's ReplicaSets and a CronJob's Jobs are profiled
			// as their owner, if at all.
			if (kind == "ReplicaSet" || kind == "Job") && metav1.GetControllerOf(&w) != nil {
				continue
			}
			rec := &analysisv1alpha1.Recommendation{
				ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: RecommendationName(kind, w.Name), Labels: map[string]string{LabelProfile: profile.Name}},
				Spec: analysisv1alpha1.RecommendationSpec{
					Target: analysisv1alpha1.RecommendationTarget{Type: analysisv1alpha1.RecommendationTargetWorkload,
						Workload: &analysisv1alpha1.CrossVersionObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: kind, Name: w.Name}},
					UpdatePolicy: profile.Spec.UpdatePolicy.DeepCopy(),
				},
			}
			want[client.ObjectKeyFromObject(rec)] = rec
		}
	}
	var have analysisv1alpha1.RecommendationList
	if err := p.Client.List(ctx, &have, client.MatchingLabels{LabelProfile: profile.Name}); err != nil {
		return ctrl.Result{}, err
	}
	owned := 0
	for i := range have.Items {
		cur := &have.Items[i]
		if !metav1.IsControlledBy(cur, profile) {
			continue
		}
		w, ok := want[client.ObjectKeyFromObject(cur)]
		if !ok {
			if err := p.Client.Delete(ctx, cur); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
			continue
		}
		delete(want, client.ObjectKeyFromObject(cur))
		owned++
		if !apiequality.Semantic.DeepEqual(cur.Spec, w.Spec) {
			cur.Spec = w.Spec
			if err := p.Client.Update(ctx, cur); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	for _, rec := range want {
		if err := controllerutil.SetControllerReference(profile, rec, p.Client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		// A Recommendation of that name made by someone else is theirs.
		if err := p.Client.Create(ctx, rec); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("creating recommendation %s/%s: %w", rec.Namespace, rec.Name, err)
		} else if err == nil {
			owned++
		}
	}
	st := analysisv1alpha1.RecommendationProfileStatus{Recommendations: int32(owned), ObservedGeneration: profile.Generation}
	if st != profile.Status {
		profile.Status = st
		return ctrl.Result{}, p.Client.Status().Update(ctx, profile)
	}
	return ctrl.Result{}, nil
}

// namespaces are the names of the namespaces the profile selects.
func (p *ProfileReconciler) namespaces(ctx context.Context, profile *analysisv1alpha1.RecommendationProfile) (map[string]bool, error) {
	sel := labels.Everything()
	if profile.Spec.NamespaceSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(profile.Spec.NamespaceSelector); err != nil {
			return nil, fmt.Errorf("recommendationprofile %s spec.namespaceSelector: %w", profile.Name, err)
		}
	}
	var list corev1.NamespaceList
	if err := p.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ns := range list.Items {
		if len(profile.Spec.EnabledNamespaces) > 0 && !slices.Contains(profile.Spec.EnabledNamespaces, ns.Name) {
			continue
		}
		if slices.Contains(profile.Spec.DisabledNamespaces, ns.Name) {
			continue
		}
		out[ns.Name] = true
	}
	return out, nil
}
