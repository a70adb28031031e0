package reservation

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// PreBind writes reservation-allocated on an owner: the record koord-manager
// derives the reservation's status from, and a restarted scheduler its cache.
// Where this plugin binds (see Bind) the Binding carries it instead. A pod
// that consumes none this time loses the one a failed attempt left (a
// Binding can add annotations, not remove them).
func (p *Plugin) PreBind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	s := p.getState(cs)
	if s == nil || (s.reserved != nil && p.binding.Carried(p.ext, p.handle)) {
		return nil
	}
	if s.reserved == nil {
		if _, stale := pod.Annotations[extension.AnnotationReservationAllocated]; stale {
			if err := p.setAllocated(ctx, pod, nil); err != nil {
				return fwk.AsStatus(fmt.Errorf("removing %s: %w", extension.AnnotationReservationAllocated, err))
			}
		}
		return nil
	}
	if err := p.setAllocated(ctx, pod, &extension.ReservationAllocated{Name: s.reserved.Name, UID: s.reserved.UID}); err != nil {
		return fwk.AsStatus(fmt.Errorf("writing %s: %w", extension.AnnotationReservationAllocated, err))
	}
	s.annotated = true
	return nil
}

// setAllocated writes (or, with nil, removes) the pod's reservation-allocated annotation.
func (p *Plugin) setAllocated(ctx context.Context, pod *corev1.Pod, a *extension.ReservationAllocated) error {
	var value any // JSON null removes the key in a merge patch
	if a != nil {
		v, err := a.Marshal()
		if err != nil {
			return err
		}
		value = v
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{extension.AnnotationReservationAllocated: value}}})
	_, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// PreBindPreFlight skips PreBind for pods whose reservation-allocated rides
// on the Binding, and for pods that consume no reservation and carry no
// annotation of an earlier, failed attempt.
func (p *Plugin) PreBindPreFlight(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if s := p.getState(cs); s != nil && s.reserved != nil {
		if p.binding.Carried(p.ext, p.handle) {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
	}
	if _, stale := pod.Annotations[extension.AnnotationReservationAllocated]; stale {
		return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
	}
	return nil, fwk.NewStatus(fwk.Skip)
}

// Bind turns a placeholder into an Available reservation on nodeName and
// deletes the placeholder instead of binding it. Other pods are bound with
// the annotations Koord plugins recorded for them (frameworkext.Bind), or, with
// none, by the next binder.
func (p *Plugin) Bind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	name := reservationutil.PlaceholderOf(pod)
	if name == "" {
		return frameworkext.Bind(ctx, p.handle, cs, pod, nodeName)
	}
	logger := klog.FromContext(ctx)
	r, err := p.koord.SchedulingV1alpha1().Reservations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("placeholder %s/%s: reservation %s: %w", pod.Namespace, pod.Name, name, err))
	}
	if !ownedBy(pod, r) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("placeholder %s/%s is not owned by reservation %s (uid %s)", pod.Namespace, pod.Name, name, r.UID))
	}
	if reservationutil.IsAvailable(r) || reservationutil.IsTerminal(r) {
		// Placed already (a second placeholder raced the first): it holds
		// nothing more; dropping it frees what this cycle assumed.
		err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fwk.AsStatus(err)
		}
		return nil
	}
	// The CPUs NodeNUMAResource chose for the placeholder: recorded for the
	// Binding, or (profiles where its PreBind patches) on the placeholder in
	// the API, not on this copy.
	status, ok := frameworkext.Pending(cs, extension.AnnotationResourceStatus)
	if !ok {
		current, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("placeholder %s/%s: %w", pod.Namespace, pod.Name, err))
		}
		status, ok = current.Annotations[extension.AnnotationResourceStatus]
	}
	if ok {
		// CPUs NodeNUMAResource chose for the placeholder are the reservation's.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{extension.AnnotationResourceStatus: status}}})
		if r, err = p.koord.SchedulingV1alpha1().Reservations().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fwk.AsStatus(err)
		}
	}
	now := metav1.Now()
	r.Status.Phase = schedulingv1alpha1.ReservationAvailable
	r.Status.NodeName = nodeName
	r.Status.Allocatable = reservationutil.Requests(r)
	r.Status.Conditions = []schedulingv1alpha1.ReservationCondition{
		{Type: schedulingv1alpha1.ReservationConditionScheduled, Status: corev1.ConditionTrue, Reason: schedulingv1alpha1.ReasonReservationScheduled,
			Message: "scheduled on " + nodeName, LastProbeTime: now, LastTransitionTime: now},
		{Type: schedulingv1alpha1.ReservationConditionReady, Status: corev1.ConditionTrue, Reason: schedulingv1alpha1.ReasonReservationAvailable,
			LastProbeTime: now, LastTransitionTime: now},
	}
	updated, err := p.koord.SchedulingV1alpha1().Reservations().UpdateStatus(ctx, r, metav1.UpdateOptions{})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("reservation %s: %w", name, err))
	}
	// Held from this moment, before the informer brings the update: the
	// placeholder's resources leave the scheduler's cache when it is deleted.
	p.setReservation(logger, updated)
	err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "deleting the placeholder of an Available reservation; koord-manager will", "pod", klog.KObj(pod), "reservation", name)
	}
	logger.V(2).Info("reservation available", "reservation", name, "node", nodeName)
	return nil
}

func ownedBy(pod *corev1.Pod, r *schedulingv1alpha1.Reservation) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.UID == r.UID {
			return true
		}
	}
	return false
}
