package reservationutil

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func consumer(name string, r *schedulingv1alpha1.Reservation) *corev1.Pod {
	p := testPod("prod", name, nil, nil)
	v, _ := (&extension.ReservationAllocated{Name: r.Name, UID: r.UID}).Marshal()
	p.Annotations = map[string]string{extension.AnnotationReservationAllocated: v}
	p.Spec.NodeName = "n1"
	return p
}

func TestNext(t *testing.T) {
	base := reservation("r1")
	base.CreationTimestamp = metav1.NewTime(t0)
	no := false

	// Unused and young: nothing changes; come back at expiry (24h default).
	l := Next(base, nil, true, t0.Add(time.Hour))
	if l.Changed || l.RequeueAfter != 23*time.Hour {
		t.Errorf("young unused: %+v", l)
	}
	// Unused past its TTL: Failed, Expired.
	short := base.DeepCopy()
	short.Spec.TTL = &metav1.Duration{Duration: 30 * time.Minute}
	l = Next(short, nil, true, t0.Add(31*time.Minute))
	if l.Status.Phase != schedulingv1alpha1.ReservationFailed || FinishedAt(&schedulingv1alpha1.Reservation{Status: l.Status}).IsZero() ||
		l.Status.Conditions[0].Reason != schedulingv1alpha1.ReasonReservationExpired {
		t.Errorf("expired: %+v", l.Status)
	}
	// expires wins over ttl; a pending reservation expires too.
	pending := short.DeepCopy()
	pending.Status = schedulingv1alpha1.ReservationStatus{Phase: schedulingv1alpha1.ReservationPending}
	pending.Spec.Expires = &metav1.Time{Time: t0.Add(2 * time.Hour)}
	if l := Next(pending, nil, true, t0.Add(time.Hour)); l.Changed || l.RequeueAfter != time.Hour {
		t.Errorf("pending before expires: %+v", l)
	}
	if l := Next(pending, nil, true, t0.Add(3*time.Hour)); l.Status.Phase != schedulingv1alpha1.ReservationFailed {
		t.Errorf("pending after expires: %+v", l.Status)
	}
	// Consumed under allocateOnce: Succeeded, with its owner and allocation.
	l = Next(base, []*corev1.Pod{consumer("a", base)}, true, t0.Add(time.Hour))
	if l.Status.Phase != schedulingv1alpha1.ReservationSucceeded || len(l.Status.CurrentOwners) != 1 || !l.Changed {
		t.Errorf("allocateOnce: %+v", l.Status)
	}
	// allocateOnce false: stays Available with its owners, and does not expire while used.
	multi := base.DeepCopy()
	multi.Spec.AllocateOnce = &no
	l = Next(multi, []*corev1.Pod{consumer("a", multi), consumer("b", multi)}, true, t0.Add(48*time.Hour))
	if l.Status.Phase != schedulingv1alpha1.ReservationAvailable || len(l.Status.CurrentOwners) != 2 || l.RequeueAfter != 0 {
		t.Errorf("allocateOnce=false with owners: %+v", l)
	}
	if cpu := l.Status.Allocated[corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("allocated cpu %s, want 2", cpu.String())
	}
	// An owner deleted: its share comes back (derived from the pods that remain).
	multi.Status = l.Status
	l = Next(multi, []*corev1.Pod{consumer("b", multi)}, true, t0.Add(time.Hour))
	if cpu := l.Status.Allocated[corev1.ResourceCPU]; cpu.String() != "1" || len(l.Status.CurrentOwners) != 1 {
		t.Errorf("after an owner left: %+v", l.Status)
	}
	// The node is gone: Failed, NodeDeleted.
	l = Next(base, nil, false, t0.Add(time.Hour))
	if l.Status.Phase != schedulingv1alpha1.ReservationFailed || !strings.Contains(l.Status.Conditions[0].Message, "node n1 was deleted") {
		t.Errorf("node deleted: %+v", l.Status)
	}
	// Terminal reservations stay as they are.
	done := base.DeepCopy()
	done.Status.Phase = schedulingv1alpha1.ReservationSucceeded
	if l := Next(done, nil, false, t0.Add(100*time.Hour)); l.Changed {
		t.Errorf("terminal reservation changed: %+v", l.Status)
	}
	// ttl 0 never expires.
	forever := base.DeepCopy()
	forever.Spec.TTL = &metav1.Duration{}
	if l := Next(forever, nil, true, t0.Add(1000*time.Hour)); l.Changed || l.RequeueAfter != 0 {
		t.Errorf("ttl 0: %+v", l)
	}
	// A pod annotated for a re-created reservation of the same name does not count.
	other := base.DeepCopy()
	other.UID = types.UID("another")
	if l := Next(base, []*corev1.Pod{consumer("a", other)}, true, t0.Add(time.Hour)); l.Changed {
		t.Errorf("a consumer of another reservation of the same name counted: %+v", l.Status)
	}
}
