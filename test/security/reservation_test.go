package security

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// team-a reserves 4 CPUs for its pods labelled app=db. A team-b pod
// labelled the same, with reservation affinity to team-a's reservation,
// is no owner (owners by label are pods of the template's namespace) and
// waits, saying so; team-a's own pod consumes the reservation.
func TestReservationsCannotBeSquattedAcrossNamespaces(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	createNamespaces(t, ctx, c.ControlPlane, "team-a", "team-b")
	for _, n := range []string{"n1", "n2"} {
		// Filled by requests here: the load estimate is not under test.
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"usageThresholds\":{\"cpu\":100,\"memory\":100}}"}}}`, extension.AnnotationCustomUsageThresholds)
		if _, err := c.Client.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reportIdle(t, ctx, c.ControlPlane, "n1", "n2")
	sched, err := c.StartScheduler(ctx, manifests.SchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Stop)
	startManager(t, ctx, c.ControlPlane)
	four := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	r := &schedulingv1alpha1.Reservation{ObjectMeta: metav1.ObjectMeta{Name: "team-a-db"},
		Spec: schedulingv1alpha1.ReservationSpec{
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}, Spec: corev1.PodSpec{SchedulerName: "koord-scheduler",
				Containers: []corev1.Container{{Name: "main", Image: "pause", Resources: corev1.ResourceRequirements{Requests: four}}}}},
			Owners: []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
		}}
	if _, err := c.Koord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err = c.Koord.SchedulingV1alpha1().Reservations().Get(ctx, "team-a-db", metav1.GetOptions{})
		return err == nil && r.Status.Phase == schedulingv1alpha1.ReservationAvailable, nil
	})
	if err != nil {
		t.Fatalf("the reservation never became Available: %+v", r.Status)
	}
	affinity := map[string]string{extension.AnnotationReservationAffinity: `{"name":"team-a-db"}`}
	db := func(ns string) controlplane.PodSpec {
		return controlplane.PodSpec{Namespace: ns, Name: "db", CPU: "4", Memory: "1Gi", SchedulerName: "koord-scheduler",
			Labels: map[string]string{"app": "db"}, Annotations: affinity}
	}
	if _, err := c.CreatePod(ctx, db("team-b")); err != nil {
		t.Fatal(err)
	}
	var msg string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods("team-b").Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Spec.NodeName != "" {
			msg = "bound to " + p.Spec.NodeName
			return true, nil
		}
		msg = controlplane.PodUnschedulableMessage(p)
		return strings.Contains(msg, "no reservation on the node matches"), nil
	})
	if err != nil || strings.HasPrefix(msg, "bound to") {
		t.Errorf("team-b's look-alike pod: %q, want it pending as no owner of team-a-db", msg)
	}
	if _, err := c.CreatePod(ctx, db("team-a")); err != nil {
		t.Fatal(err)
	}
	pod, err := c.WaitForPodBound(ctx, "team-a", "db", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := extension.GetReservationAllocated(pod.Annotations); err != nil || a == nil || a.Name != "team-a-db" {
		t.Errorf("team-a's pod consumed %+v (%v), want team-a-db", a, err)
	}
}
