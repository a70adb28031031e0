package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/plugins/numaresource"
	"github.com/koord-project/koord/pkg/slo/reservationlifecycle"
)

// reservationNode is a node whose LoadAwareScheduling thresholds are lifted
// (the per-node annotation): these tests fill nodes by requests, which the
// load estimate of a 4-CPU node would refuse long before.
func reservationNode(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name, cpu, memory string) {
	t.Helper()
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: name, CPU: cpu, Memory: memory}); err != nil {
		t.Fatal(err)
	}
	reportedIdle(t, ctx, cp, name)
}

// reportedIdle makes a node's NodeMetric report it nearly idle, as its
// koordlet would, with LoadAwareScheduling's thresholds lifted for it: with
// koord-manager running, a NodeMetric nobody reports keeps the node out.
func reportedIdle(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"usageThresholds\":{\"cpu\":100,\"memory\":100}}"}}}`, extension.AnnotationCustomUsageThresholds)
	if _, err := cp.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cp.ReportNodeMetric(ctx, name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func newReservation(name, cpu string, owners ...schedulingv1alpha1.ReservationOwner) *schedulingv1alpha1.Reservation {
	return &schedulingv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingv1alpha1.ReservationSpec{
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}}}},
			Owners: owners,
		},
	}
}

func ownersByLabel(k, v string) schedulingv1alpha1.ReservationOwner {
	return schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}
}

// waitReservation waits until the reservation satisfies ok and returns it.
func waitReservation(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name string, what string, ok func(*schedulingv1alpha1.Reservation) bool) *schedulingv1alpha1.Reservation {
	t.Helper()
	var last *schedulingv1alpha1.Reservation
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = r
		return ok(r), nil
	})
	if err != nil {
		t.Fatalf("reservation %s never %s; last status %+v", name, what, last)
	}
	return last
}

func isPhase(p schedulingv1alpha1.ReservationPhase) func(*schedulingv1alpha1.Reservation) bool {
	return func(r *schedulingv1alpha1.Reservation) bool { return r.Status.Phase == p }
}

// A reservation on a half-full node: scheduled through the profile, it holds
// its CPUs against a non-owner, which stays pending, while its owner is
// placed into it and consumes it (allocateOnce).
func TestReservationHoldsForItsOwner(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	reservationNode(t, ctx, cp, "r-node", "4", "16Gi")
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, time.Hour)
	writes := watchBindingWrites(t, ctx, cp)
	filler, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "filler", SchedulerName: "koord-scheduler", CPU: "1", Memory: "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", filler.Name, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, newReservation("web-capacity", "2", ownersByLabel("app", "web")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := waitReservation(t, ctx, cp, "web-capacity", "Available", isPhase(schedulingv1alpha1.ReservationAvailable))
	if r.Status.NodeName != "r-node" || r.Status.Allocatable.Cpu().String() != "2" {
		t.Errorf("Available on %q with allocatable %v, want r-node and 2 CPUs", r.Status.NodeName, r.Status.Allocatable)
	}
	if len(r.Status.Conditions) == 0 || r.Status.Conditions[0].Type != schedulingv1alpha1.ReservationConditionScheduled || r.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions %+v, want Scheduled=True", r.Status.Conditions)
	}
	// The placeholder never reaches a node and goes away.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().Pods("koord-system").Get(ctx, reservationlifecycle.PlaceholderName("web-capacity"), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Error("the placeholder pod is still there")
	}

	// 4 CPUs − filler 1 − reserved 2 leaves 1: a 1.5-CPU stranger waits.
	// (A bigger one would be turned away first by LoadAwareScheduling, which
	// counts the reservation's estimated load too.)
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "stranger", SchedulerName: "koord-scheduler", CPU: "1500m", Memory: "1Gi", Labels: map[string]string{"app": "batch"}}); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "stranger", "reservations hold 2000m of the node's 3000m free CPU, the pod needs 1500m")

	// The owner gets the reserved CPUs.
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "web-1", SchedulerName: "koord-scheduler", CPU: "2", Memory: "1Gi", Labels: map[string]string{"app": "web"}}); err != nil {
		t.Fatal(err)
	}
	web, err := cp.WaitForPodBound(ctx, "default", "web-1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := extension.GetReservationAllocated(web.Annotations)
	if err != nil || alloc == nil || alloc.Name != "web-capacity" || alloc.UID != r.UID {
		t.Errorf("owner's %s = %+v (%v)", extension.AnnotationReservationAllocated, alloc, err)
	}
	// The claim rides on the Binding: created, then bound with it in one write.
	writes.check(t, "web-1", extension.AnnotationReservationAllocated, 0)
	done := waitReservation(t, ctx, cp, "web-capacity", "Succeeded", isPhase(schedulingv1alpha1.ReservationSucceeded))
	if len(done.Status.CurrentOwners) != 1 || done.Status.CurrentOwners[0].Name != "web-1" || done.Status.Allocated.Cpu().String() != "2" {
		t.Errorf("consumed reservation: owners %v allocated %v", done.Status.CurrentOwners, done.Status.Allocated)
	}
	// The node is now full by requests: the stranger still waits, for want of CPU.
	waitUnschedulable(t, ctx, cp, "stranger", "Insufficient cpu")
}

// A reservation nobody uses expires, and is garbage-collected after its gcAfter;
// one whose node goes fails.
func TestReservationExpiresAndNodeLoss(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	for _, n := range []string{"e-1", "e-2"} {
		reservationNode(t, ctx, cp, n, "4", "16Gi")
	}
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, 3*time.Second)

	short := newReservation("short-lived", "1", ownersByLabel("app", "nobody"))
	short.Spec.TTL = &metav1.Duration{Duration: 3 * time.Second}
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, short, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := waitReservation(t, ctx, cp, "short-lived", "Failed", isPhase(schedulingv1alpha1.ReservationFailed))
	if c := failed.Status.Conditions; len(c) == 0 || c[len(c)-1].Reason != schedulingv1alpha1.ReasonReservationExpired {
		t.Errorf("expired reservation's conditions %+v, want reason Expired", c)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, "short-lived", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Error("the expired reservation was not garbage-collected after 3s")
	}

	pinned := newReservation("pinned", "1", ownersByLabel("app", "web"))
	pinned.Spec.Template.Spec.NodeName = "e-2"
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := waitReservation(t, ctx, cp, "pinned", "Available", isPhase(schedulingv1alpha1.ReservationAvailable))
	if r.Status.NodeName != "e-2" {
		t.Errorf("template nodeName e-2, reservation placed on %s", r.Status.NodeName)
	}
	if err := cp.Client.CoreV1().Nodes().Delete(ctx, "e-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := waitReservation(t, ctx, cp, "pinned", "Failed", isPhase(schedulingv1alpha1.ReservationFailed))
	if c := gone.Status.Conditions; len(c) == 0 || c[len(c)-1].Reason != schedulingv1alpha1.ReasonReservationNodeDeleted {
		t.Errorf("conditions %+v, want reason NodeDeleted", c)
	}
}

// A reservation too big for any node stays Pending with the scheduler's reason.
func TestReservationUnschedulable(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	reservationNode(t, ctx, cp, "u-1", "2", "8Gi")
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, time.Hour)
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, newReservation("too-big", "8", ownersByLabel("app", "web")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := waitReservation(t, ctx, cp, "too-big", "reported unschedulable", func(r *schedulingv1alpha1.Reservation) bool {
		for _, c := range r.Status.Conditions {
			if c.Type == schedulingv1alpha1.ReservationConditionScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "Insufficient cpu") {
				return true
			}
		}
		return false
	})
	if r.Status.Phase != schedulingv1alpha1.ReservationPending {
		t.Errorf("phase %s, want Pending", r.Status.Phase)
	}
}

// Owners placed across a scheduler restart never over-use a reservation:
// the restarted scheduler rebuilds what is consumed from the pods.
func TestReservationSurvivesSchedulerRestart(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	reservationNode(t, ctx, cp, "s-1", "8", "32Gi")
	sched := startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, time.Hour)
	multi := newReservation("shared", "3", ownersByLabel("app", "web"))
	no := false
	multi.Spec.AllocateOnce = &no
	// Owners only within it, so that over-use would show.
	multi.Spec.AllocatePolicy = schedulingv1alpha1.ReservationAllocatePolicyRestricted
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, multi, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReservation(t, ctx, cp, "shared", "Available", isPhase(schedulingv1alpha1.ReservationAvailable))
	place := func(name string) *corev1.Pod {
		t.Helper()
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: name, SchedulerName: "koord-scheduler", CPU: "1", Memory: "256Mi", Labels: map[string]string{"app": "web"}}); err != nil {
			t.Fatal(err)
		}
		pod, err := cp.WaitForPodBound(ctx, "default", name, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	place("web-1")
	place("web-2")
	sched.Stop()
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	consumed := 0
	for _, name := range []string{"web-3", "web-4"} {
		if a, _ := extension.GetReservationAllocated(place(name).Annotations); a != nil {
			consumed++
		}
	}
	if consumed != 1 {
		t.Errorf("after the restart %d of 2 more owners consumed the 3-CPU reservation already holding 2; want exactly 1", consumed)
	}
	r := waitReservation(t, ctx, cp, "shared", "showing 3 owners", func(r *schedulingv1alpha1.Reservation) bool { return len(r.Status.CurrentOwners) == 3 })
	if r.Status.Allocated.Cpu().Cmp(*r.Status.Allocatable.Cpu()) > 0 {
		t.Errorf("allocated %v exceeds allocatable %v", r.Status.Allocated, r.Status.Allocatable)
	}
	// An owner leaves: its share returns. (No kubelet here to confirm a
	// graceful termination, so the pod is deleted at once.)
	if err := cp.Client.CoreV1().Pods("default").Delete(ctx, "web-1", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	waitReservation(t, ctx, cp, "shared", "showing 2 owners after one left", func(r *schedulingv1alpha1.Reservation) bool {
		return len(r.Status.CurrentOwners) == 2 && r.Status.Allocated.Cpu().String() == "2"
	})
}

// A reservation whose template binds CPUs (an LSR pod) holds the very CPUs
// NodeNUMAResource chose for it: pods that are not its owners fill the rest
// of the node and never get one of them; its owner receives exactly them.
func TestReservationPinsCPUsForItsOwner(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	topo := numaNode(t, ctx, cp, "pin-node", topologytest.Linux(1, 2, 4, 2, 16<<30), nil) // 16 CPUs
	reportedIdle(t, ctx, cp, "pin-node")
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, time.Hour)

	spec := lsrPod("template", "4", nil)
	template, err := controlplane.MakePod(spec)
	if err != nil {
		t.Fatal(err)
	}
	r := newReservation("db-cpus", "4", ownersByLabel("app", "db"))
	r.Spec.Template.ObjectMeta = metav1.ObjectMeta{Labels: template.Labels}
	r.Spec.Template.Spec = template.Spec
	r.Spec.Template.Spec.SchedulerName = ""
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = waitReservation(t, ctx, cp, "db-cpus", "Available", isPhase(schedulingv1alpha1.ReservationAvailable))
	st, err := extension.GetResourceStatus(r.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	pinned := st.CPUs()
	if pinned.Size() != 4 || !topo.CoresOf(pinned).Equals(pinned) {
		t.Fatalf("reservation pinned %q (annotation %q), want 4 CPUs of whole cores", pinned, r.Annotations[extension.AnnotationResourceStatus])
	}

	// Six 2-CPU LSR strangers take exactly the 12 CPUs the reservation does not hold.
	var names []string
	for i := 0; i < 6; i++ {
		s := lsrPod(fmt.Sprintf("other-%d", i), "2", nil)
		s.Labels["app"] = "other"
		if _, err := cp.CreatePod(ctx, s); err != nil {
			t.Fatal(err)
		}
		names = append(names, s.Name)
	}
	waitBound(t, ctx, cp, names...)
	held := checkCPUs(t, ctx, cp, map[string]*numaresource.Topology{"pin-node": topo}, true)["pin-node"]
	if !held.Intersection(pinned).IsEmpty() {
		t.Fatalf("strangers hold %s, of which %s the reservation pinned", held, held.Intersection(pinned))
	}

	owner := lsrPod("db-0", "4", nil)
	owner.Labels["app"] = "db"
	if _, err := cp.CreatePod(ctx, owner); err != nil {
		t.Fatal(err)
	}
	bound, err := cp.WaitForPodBound(ctx, "default", "db-0", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := extension.GetResourceStatus(bound.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if !got.CPUs().Equals(pinned) {
		t.Errorf("owner got CPUs %s, the reservation pinned %s", got.CPUs(), pinned)
	}
	if a, _ := extension.GetReservationAllocated(bound.Annotations); a == nil || a.Name != "db-cpus" {
		t.Errorf("owner's %s = %+v", extension.AnnotationReservationAllocated, a)
	}
	checkCPUs(t, ctx, cp, map[string]*numaresource.Topology{"pin-node": topo}, true)
	waitReservation(t, ctx, cp, "db-cpus", "Succeeded", isPhase(schedulingv1alpha1.ReservationSucceeded))
}

// denyBinding makes the API server refuse to bind pods whose name starts
// with prefix (a ValidatingAdmissionPolicy on pods/binding), and waits until
// the refusal is in force (probed with dry-run bindings).
func denyBinding(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, prefix string) {
	t.Helper()
	policy := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: deny-binding}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods/binding]}
  validations:
    - expression: "!object.metadata.name.startsWith('%s')"
      message: binding refused by the test
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: deny-binding}
spec:
  policyName: deny-binding
  validationActions: [Deny]
`, prefix)
	if err := cp.Apply(ctx, []byte(policy)); err != nil {
		t.Fatal(err)
	}
	probe, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: prefix + "probe", SchedulerName: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := cp.Client.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: probe.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "nowhere"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "binding refused by the test"), nil
	})
	if err != nil {
		t.Fatalf("binding policy not in force: %v", err)
	}
	if err := cp.Client.CoreV1().Pods("default").Delete(ctx, probe.Name, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
}

// An owner whose binding fails after Reserve gives its share back (the leak
// Koordinator users hit): another owner then consumes the reservation.
func TestReservationBindFailureReturnsShare(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	reservationNode(t, ctx, cp, "bf-node", "4", "16Gi")
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, time.Hour)
	denyBinding(t, ctx, cp, "doomed-")
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "filler", SchedulerName: "koord-scheduler", CPU: "1", Memory: "1Gi"}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, cp, "filler")
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, newReservation("web-capacity", "2", ownersByLabel("app", "web")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReservation(t, ctx, cp, "web-capacity", "Available", isPhase(schedulingv1alpha1.ReservationAvailable))

	// The doomed owner is placed into the reservation, then its binding is refused.
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "doomed-web", SchedulerName: "koord-scheduler", CPU: "2", Memory: "1Gi", Labels: map[string]string{"app": "web"}}); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "doomed-web", "binding refused by the test")

	// The failed attempt's annotation is gone with its share.
	doomed, err := cp.Client.CoreV1().Pods("default").Get(ctx, "doomed-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := doomed.Annotations[extension.AnnotationReservationAllocated]; ok {
		t.Errorf("unbound doomed-web still carries %s=%s", extension.AnnotationReservationAllocated, v)
	}
	// A second owner (higher priority, so it is tried before the doomed
	// one's retries) consumes the reservation. Had the failed binding kept
	// its share, the reservation would have nothing left for it, and it
	// would be placed beside it as a stranger.
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "web-2", SchedulerName: "koord-scheduler", CPU: "2", Memory: "1Gi",
		Labels: map[string]string{"app": "web"}, PriorityClassName: string(extension.PriorityProd)}); err != nil {
		t.Fatal(err)
	}
	web, err := cp.WaitForPodBound(ctx, "default", "web-2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := extension.GetReservationAllocated(web.Annotations); a == nil || a.Name != "web-capacity" {
		t.Errorf("web-2's %s = %+v, want web-capacity", extension.AnnotationReservationAllocated, a)
	}
	done := waitReservation(t, ctx, cp, "web-capacity", "Succeeded", isPhase(schedulingv1alpha1.ReservationSucceeded))
	if len(done.Status.CurrentOwners) != 1 || done.Status.CurrentOwners[0].Name != "web-2" {
		t.Errorf("owners %v, want web-2 alone", done.Status.CurrentOwners)
	}
}
