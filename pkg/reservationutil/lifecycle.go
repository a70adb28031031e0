package reservationutil

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

// DefaultTTL is how long a reservation lives unused when spec.ttl is unset.
const DefaultTTL = 24 * time.Hour

// ExpiresAt is when an unused reservation fails: spec.expires if set, else
// creation + spec.ttl (default 24h); zero when ttl is explicitly 0 (never).
func ExpiresAt(r *schedulingv1alpha1.Reservation) time.Time {
	if r.Spec.Expires != nil {
		return r.Spec.Expires.Time
	}
	ttl := DefaultTTL
	if r.Spec.TTL != nil {
		ttl = r.Spec.TTL.Duration
	}
	if ttl <= 0 {
		return time.Time{}
	}
	return r.CreationTimestamp.Add(ttl)
}

// AllocateOnce is spec.allocateOnce, default true.
func AllocateOnce(r *schedulingv1alpha1.Reservation) bool {
	return r.Spec.AllocateOnce == nil || *r.Spec.AllocateOnce
}

// IsTerminal reports a reservation that will hold nothing again.
func IsTerminal(r *schedulingv1alpha1.Reservation) bool {
	return r.Status.Phase == schedulingv1alpha1.ReservationSucceeded || r.Status.Phase == schedulingv1alpha1.ReservationFailed
}

// Lifecycle is what the reservation controller decides for one reservation.
type Lifecycle struct {
	// Status is the status it should have (equal to the current one when
	// nothing changes; Changed says so).
	Status  schedulingv1alpha1.ReservationStatus
	Changed bool
	// RequeueAfter is when to look again without an event (expiry), 0 for never.
	RequeueAfter time.Duration
}

// Next is the lifecycle of a reservation: owners and allocation derived from
// the pods that consume it; an Available reservation consumed under
// allocateOnce turns Succeeded, one whose node is gone turns Failed
// (NodeDeleted), one unused past its expiry turns Failed (Expired). Terminal
// reservations do not change. pods may be any superset of the consumers.
func Next(r *schedulingv1alpha1.Reservation, pods []*corev1.Pod, nodeExists bool, now time.Time) Lifecycle {
	st := *r.Status.DeepCopy()
	if IsTerminal(r) {
		return Lifecycle{Status: st}
	}
	owners, allocated := Derive(r, pods)
	if IsAvailable(r) {
		st.CurrentOwners, st.Allocated = owners, allocated
		if len(st.CurrentOwners) == 0 {
			st.CurrentOwners = nil
		}
		switch {
		case !nodeExists:
			fail(&st, schedulingv1alpha1.ReasonReservationNodeDeleted, fmt.Sprintf("node %s was deleted", r.Status.NodeName), now)
		case AllocateOnce(r) && len(owners) > 0:
			st.Phase = schedulingv1alpha1.ReservationSucceeded
			setCondition(&st, schedulingv1alpha1.ReservationConditionReady, corev1.ConditionFalse, schedulingv1alpha1.ReasonReservationSucceeded,
				fmt.Sprintf("consumed by %s/%s (allocateOnce)", owners[0].Namespace, owners[0].Name), now)
		}
	}
	var requeue time.Duration
	if st.Phase != schedulingv1alpha1.ReservationSucceeded && st.Phase != schedulingv1alpha1.ReservationFailed && len(owners) == 0 {
		if at := ExpiresAt(r); !at.IsZero() {
			if !now.Before(at) {
				fail(&st, schedulingv1alpha1.ReasonReservationExpired, fmt.Sprintf("unused since it was created; expired at %s", at.UTC().Format(time.RFC3339)), now)
			} else {
				requeue = at.Sub(now)
			}
		}
	}
	return Lifecycle{Status: st, Changed: !equality.Semantic.DeepEqual(st, r.Status), RequeueAfter: requeue}
}

func fail(st *schedulingv1alpha1.ReservationStatus, reason, msg string, now time.Time) {
	st.Phase = schedulingv1alpha1.ReservationFailed
	setCondition(st, schedulingv1alpha1.ReservationConditionReady, corev1.ConditionFalse, reason, msg, now)
}

// setCondition sets a condition, keeping its transition time when its status
// does not change.
func setCondition(st *schedulingv1alpha1.ReservationStatus, t schedulingv1alpha1.ReservationConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) {
	c := schedulingv1alpha1.ReservationCondition{Type: t, Status: s, Reason: reason, Message: msg, LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status == s {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// FinishedAt is when a terminal reservation became terminal (its Ready
// condition's transition), for garbage collection; zero if unknown.
func FinishedAt(r *schedulingv1alpha1.Reservation) time.Time {
	for _, c := range r.Status.Conditions {
		if c.Type == schedulingv1alpha1.ReservationConditionReady && c.Status == corev1.ConditionFalse {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
