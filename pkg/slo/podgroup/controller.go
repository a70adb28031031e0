// Package podgroup keeps each PodGroup's status (scheduling.sigs.k8s.io)
// current from its pods: how many are scheduled, running, succeeded and
// failed, and the gang's phase. koord-scheduler's Coscheduling plugin
// places the gang; this controller, leader-elected in koord-manager,
// reports on it.
package podgroup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

// Reconciler writes PodGroup status.
type Reconciler struct {
	Client client.Client
}

// Setup registers the controller when the PodGroup CRD is served, and
// says so when it is not (the chart's crds.podgroups may be off).
func Setup(mgr ctrl.Manager) (bool, error) {
	gk := schedulingsigsv1alpha1.SchemeGroupVersion.WithKind("PodGroup").GroupKind()
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, schedulingsigsv1alpha1.SchemeGroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, err
	}
	r := &Reconciler{Client: mgr.GetClient()}
	return true, ctrl.NewControllerManagedBy(mgr).Named("podgroup").For(&schedulingsigsv1alpha1.PodGroup{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := o.GetLabels()[extension.LabelPodGroup]; name != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
			}
			return nil
		})).Complete(r)
}

// Reconcile counts the PodGroup's pods (by label) and derives its phase.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pg := &schedulingsigsv1alpha1.PodGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, pg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(req.Namespace), client.MatchingLabels{extension.LabelPodGroup: req.Name}); err != nil {
		return ctrl.Result{}, err
	}
	st := Status(pg, pods.Items)
	if apiequality.Semantic.DeepEqual(st, pg.Status) {
		return ctrl.Result{}, nil
	}
	pg.Status = st
	return ctrl.Result{}, r.Client.Status().Update(ctx, pg)
}

// Status is a PodGroup's status given its pods:
//   - Pending: none scheduled; Scheduling: some, fewer than minMember;
//   - Scheduled: minMember scheduled; Running: minMember running (or done);
//   - Finished: minMember succeeded;
//   - Failed: some failed, and with them the gang can no longer reach
//     minMember running.
func Status(pg *schedulingsigsv1alpha1.PodGroup, pods []corev1.Pod) schedulingsigsv1alpha1.PodGroupStatus {
	st := schedulingsigsv1alpha1.PodGroupStatus{ScheduleStartTime: pg.Status.ScheduleStartTime, OccupiedBy: pg.Status.OccupiedBy}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName != "" {
			st.Scheduled++
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			st.Running++
		case corev1.PodSucceeded:
			st.Succeeded++
		case corev1.PodFailed:
			st.Failed++
		}
		if st.OccupiedBy == "" {
			if ref := metav1.GetControllerOf(p); ref != nil {
				st.OccupiedBy = fmt.Sprintf("%s/%s", p.Namespace, ref.Name)
			}
		}
	}
	min := pg.Spec.MinMember
	switch {
	case min > 0 && st.Succeeded >= min:
		st.Phase = schedulingsigsv1alpha1.PodGroupFinished
	case st.Failed > 0 && st.Running+st.Succeeded < min && st.Running+st.Succeeded+st.Failed >= min:
		st.Phase = schedulingsigsv1alpha1.PodGroupFailed
	case st.Running+st.Succeeded >= min && st.Running > 0:
		st.Phase = schedulingsigsv1alpha1.PodGroupRunning
	case st.Scheduled >= min && st.Scheduled > 0:
		st.Phase = schedulingsigsv1alpha1.PodGroupScheduled
	case st.Scheduled > 0:
		st.Phase = schedulingsigsv1alpha1.PodGroupScheduling
	default:
		st.Phase = schedulingsigsv1alpha1.PodGroupPending
	}
	if st.Phase != schedulingsigsv1alpha1.PodGroupPending && st.ScheduleStartTime.IsZero() {
		st.ScheduleStartTime = metav1.Now()
	}
	return st
}
