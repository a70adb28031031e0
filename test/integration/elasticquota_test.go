package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// quotaConfig is a koord-scheduler profile with ElasticQuota in
// DefaultPreemption's place, as the shipped profile has it.
const quotaConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    plugins:
      multiPoint:
        enabled: [{name: ElasticQuota}]
        disabled: [{name: DefaultPreemption}]
`

// startQuotaControlPlane is a control plane with Koord's PriorityClasses,
// the given namespaces, and a stand-in for kubelet that finishes deleting
// the pods preemption deletes (nothing runs them here).
func startQuotaControlPlane(t *testing.T, ctx context.Context, namespaces ...string) *controlplane.ControlPlane {
	t.Helper()
	cp := startControlPlane(t, controlplane.Options{})
	if err := cp.Apply(ctx, manifests.PriorityClasses); err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Its own context, ended before the control plane stops (cleanups run
	// last first): an open watch holds the API server's shutdown.
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w, err := cp.Client.CoreV1().Pods("").Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Modified && pod.DeletionTimestamp != nil {
				_ = cp.Client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		}
	}()
	return cp
}

func createQuota(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns, name, min, max string, labels, annotations map[string]string) {
	t.Helper()
	cpu := func(v string) corev1.ResourceList {
		if v == "" {
			return nil
		}
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	if _, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas(ns).Create(ctx, &schedulingsigsv1alpha1.ElasticQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec:       schedulingsigsv1alpha1.ElasticQuotaSpec{Min: cpu(min), Max: cpu(max)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func quotaPod(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns, name, class string, labels map[string]string) {
	t.Helper()
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Namespace: ns, Name: name, SchedulerName: "koord-scheduler", CPU: "1", Memory: "64Mi",
		PriorityClassName: class, Labels: labels}); err != nil {
		t.Fatal(err)
	}
}

// boundIn are the names of a namespace's bound pods, sorted.
func boundIn(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns string) []string {
	t.Helper()
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil // a poll's deadline: its caller says what it waited for
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

func waitBoundIn(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns string, want int) []string {
	t.Helper()
	var got []string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got = boundIn(t, ctx, cp, ns)
		return len(got) == want, nil
	}); err != nil {
		got = boundIn(t, context.WithoutCancel(ctx), cp, ns)
		t.Fatalf("%s: %d pods bound (%v), want %d; pending: %s", ns, len(got), got, want, pendingMessages(ctx, cp, ns))
	}
	return got
}

// pendingMessages are the namespace's unbound pods with why.
func pendingMessages(ctx context.Context, cp *controlplane.ControlPlane, ns string) string {
	pods, err := cp.Client.CoreV1().Pods(ns).List(context.WithoutCancel(ctx), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			out = append(out, fmt.Sprintf("%s (%q)", p.Name, controlplane.PodUnschedulableMessage(&p)))
		}
	}
	return strings.Join(out, ", ")
}

// waitPendingWith waits until a pod is unschedulable with a message
// containing want, failing if it binds.
func waitPendingWith(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns, name, want string) {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s/%s was bound to %s", ns, name, p.Spec.NodeName)
		}
		msg = controlplane.PodUnschedulableMessage(p)
		return strings.Contains(msg, want), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: want pending with %q, last message %q: %v", ns, name, want, msg, err)
	}
}

// Two quotas with a min of 4 CPUs each on 8 CPUs. team-a borrows all of
// team-b's idle min; a ninth pod is refused, naming the quota and the
// figures. When team-b's pods come, within its min, team-a's borrowed pods
// are preempted, lowest priority first, though team-b's pods have the
// lower priority (0), and only as many as team-b needs: team-a keeps its min,
// and a fifth team-b pod, beyond team-b's runtime, waits instead of taking
// it.
func TestElasticQuotaBorrowAndGiveBack(t *testing.T) {
	ctx := testContext(t)
	cp := startQuotaControlPlane(t, ctx, "team-a", "team-b")
	gangNodes(t, ctx, cp, "q", 4) // 4 × 2 CPUs
	createQuota(t, ctx, cp, "team-a", "team-a", "4", "8", nil, nil)
	createQuota(t, ctx, cp, "team-b", "team-b", "4", "8", nil, nil)
	startScheduler(t, ctx, cp, []byte(quotaConfig))
	startManager(t, ctx, cp, time.Hour) // writes the quotas' figures

	for i := 0; i < 5; i++ {
		quotaPod(t, ctx, cp, "team-a", fmt.Sprintf("a-prod-%d", i), string(extension.PriorityProd), nil)
	}
	for i := 0; i < 3; i++ {
		quotaPod(t, ctx, cp, "team-a", fmt.Sprintf("a-mid-%d", i), string(extension.PriorityMid), nil)
	}
	waitBoundIn(t, ctx, cp, "team-a", 8)
	t.Log("team-a borrowed team-b's min")
	quotaPod(t, ctx, cp, "team-a", "a-extra", string(extension.PriorityProd), nil)
	waitPendingWith(t, ctx, cp, "team-a", "a-extra", "quota team-a is full: cpu: used 8 + 1 asked > runtime 8 (min 4, max 8)")

	t.Log("team-a's ninth pod was refused")
	for i := 0; i < 4; i++ {
		quotaPod(t, ctx, cp, "team-b", fmt.Sprintf("b-%d", i), "", nil) // priority 0
	}
	waitBoundIn(t, ctx, cp, "team-b", 4)
	left := waitBoundIn(t, ctx, cp, "team-a", 4)
	// The three mid-priority pods went first, then one prod pod: four
	// prod pods are left.
	for _, name := range left {
		if !strings.HasPrefix(name, "a-prod-") {
			t.Errorf("team-a kept %v: a lower-priority pod outlived a prod pod", left)
		}
	}
	quotaPod(t, ctx, cp, "team-b", "b-4", string(extension.PriorityProd), nil)
	waitPendingWith(t, ctx, cp, "team-b", "b-4", "quota team-b is full")
	// Nothing more is taken from team-a: it is at its min.
	time.Sleep(2 * time.Second)
	if got := boundIn(t, ctx, cp, "team-a"); len(got) != 4 {
		t.Fatalf("team-a went below its min: %v", got)
	}
	waitPendingWith(t, ctx, cp, "team-a", "a-extra", "quota team-a is full")

	// koord-manager wrote what Koordinator's users read: each team uses 4
	// CPUs and may use 4 now, and its pods ask 5 (one pending each).
	for _, ns := range []string{"team-a", "team-b"} {
		want := [3]string{"4", `"cpu":"4"`, `"cpu":"5"`}
		var last string
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			eq, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas(ns).Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			runtime, request := eq.Annotations[extension.AnnotationRuntime], eq.Annotations[extension.AnnotationRequest]
			last = fmt.Sprintf("used %s, runtime %s, request %s", eq.Status.Used.Cpu(), runtime, request)
			return eq.Status.Used.Cpu().String() == want[0] && strings.Contains(runtime, want[1]) && strings.Contains(request, want[2]), nil
		}); err != nil {
			t.Errorf("quota %s: %s; want used %s, runtime with %s, request with %s", ns, last, want[0], want[1], want[2])
		}
	}
}

// A three-level tree: org (max 4) > dept (max 3) > team (max 10). team
// cannot pass dept's max however idle the cluster; a pod that names the
// parent, a quota of another namespace, or a quota whose annotation does
// not parse stays pending with a message naming the key; a
// non-preemptible pod beyond its quota's min waits, naming the min.
func TestElasticQuotaTree(t *testing.T) {
	ctx := testContext(t)
	cp := startQuotaControlPlane(t, ctx, "org", "other")
	gangNodes(t, ctx, cp, "t", 4) // 8 CPUs
	parent := map[string]string{extension.LabelQuotaIsParent: "true"}
	createQuota(t, ctx, cp, "org", "org", "2", "4", parent, nil)
	createQuota(t, ctx, cp, "org", "dept", "2", "3", map[string]string{extension.LabelQuotaParent: "org", extension.LabelQuotaIsParent: "true"}, nil)
	createQuota(t, ctx, cp, "org", "team", "1", "10", map[string]string{extension.LabelQuotaParent: "dept"}, nil)
	createQuota(t, ctx, cp, "org", "broken", "1", "10", nil, map[string]string{extension.AnnotationSharedWeight: "four"})
	startScheduler(t, ctx, cp, []byte(quotaConfig))

	team := map[string]string{extension.LabelQuotaName: "team"}
	for i := 0; i < 4; i++ {
		quotaPod(t, ctx, cp, "org", fmt.Sprintf("team-%d", i), "", team)
	}
	waitBoundIn(t, ctx, cp, "org", 3)
	var pending string
	for i := 0; i < 4; i++ {
		if p, err := cp.Client.CoreV1().Pods("org").Get(ctx, fmt.Sprintf("team-%d", i), metav1.GetOptions{}); err == nil && p.Spec.NodeName == "" {
			pending = p.Name
		}
	}
	waitPendingWith(t, ctx, cp, "org", pending, "quota team is full: cpu: used 3 + 1 asked > runtime 3")

	quotaPod(t, ctx, cp, "org", "to-parent", "", map[string]string{extension.LabelQuotaName: "dept"})
	waitPendingWith(t, ctx, cp, "org", "to-parent", "label "+extension.LabelQuotaName+"=dept: the quota is a parent")
	quotaPod(t, ctx, cp, "other", "stranger", "", team)
	waitPendingWith(t, ctx, cp, "other", "stranger", "does not list other")
	quotaPod(t, ctx, cp, "org", "to-broken", "", map[string]string{extension.LabelQuotaName: "broken"})
	waitPendingWith(t, ctx, cp, "org", "to-broken", "annotation "+extension.AnnotationSharedWeight)

	// A tenant's preemptible=false label is honoured within the quota's
	// min only: beyond it the pod would hold borrowed capacity no
	// preemption could give back. A preemptible pod still borrows.
	createQuota(t, ctx, cp, "other", "other", "1", "4", nil, nil)
	pinned := map[string]string{extension.LabelPreemptible: "false"}
	quotaPod(t, ctx, cp, "other", "pinned-0", "", pinned)
	if _, err := cp.WaitForPodBound(ctx, "other", "pinned-0", time.Minute); err != nil {
		t.Fatalf("a non-preemptible pod within its quota's min: %v", err)
	}
	quotaPod(t, ctx, cp, "other", "pinned-1", "", pinned)
	waitPendingWith(t, ctx, cp, "other", "pinned-1", "quota other: a pod labelled "+extension.LabelPreemptible+"=false must fit in the quota's min: cpu: non-preemptible pods hold 1 + 1 asked > min 1")
	quotaPod(t, ctx, cp, "other", "borrower", "", nil)
	if _, err := cp.WaitForPodBound(ctx, "other", "borrower", time.Minute); err != nil {
		t.Fatalf("a preemptible pod beyond its quota's min: %v", err)
	}

	// Raising dept's max lets the pending team pod in.
	dept, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas("org").Get(ctx, "dept", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dept.Spec.Max = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	if _, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas("org").Update(ctx, dept, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "org", pending, time.Minute); err != nil {
		t.Fatalf("after dept's max went to 4: %v", err)
	}
}

// A Reservation whose template names a quota holds what its owners have
// not taken against that quota: a stranger of the quota that would pass
// the quota's max with it waits, naming the figures; the owner, placed
// into the reservation, is not charged twice and binds.
func TestElasticQuotaChargesReservations(t *testing.T) {
	ctx := testContext(t)
	cp := startQuotaControlPlane(t, ctx, "team-r")
	reservationNode(t, ctx, cp, "r-node", "8", "32Gi")
	createQuota(t, ctx, cp, "team-r", "team-r", "2", "4", nil, nil)
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, time.Hour)

	r := newReservation("team-r-capacity", "3", ownersByLabel("app", "web"))
	r.Spec.Template.Namespace = "team-r" // its owners' (owners by label are held to it)
	r.Spec.Template.Labels = map[string]string{extension.LabelQuotaName: "team-r"}
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReservation(t, ctx, cp, "team-r-capacity", "Available", isPhase(schedulingv1alpha1.ReservationAvailable))
	// koord-manager charges it too: once it says so, the scheduler's
	// informers have had the time to see it.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		eq, err := cp.Koord.SchedulingSigsV1alpha1().ElasticQuotas("team-r").Get(ctx, "team-r", metav1.GetOptions{})
		return err == nil && eq.Status.Used.Cpu().String() == "3", nil
	}); err != nil {
		t.Fatal("koord-manager never counted the reservation's 3 CPUs as team-r's used")
	}

	quotaPod(t, ctx, cp, "team-r", "stranger", "", map[string]string{"app": "batch"})
	quotaPod(t, ctx, cp, "team-r", "stranger-2", "", map[string]string{"app": "batch"})
	// One fits beside the reservation's 3 CPUs within max 4; the other
	// would pass it.
	waitBoundIn(t, ctx, cp, "team-r", 1)
	pending := "stranger-2"
	if p, err := cp.Client.CoreV1().Pods("team-r").Get(ctx, "stranger", metav1.GetOptions{}); err == nil && p.Spec.NodeName == "" {
		pending = "stranger"
	}
	waitPendingWith(t, ctx, cp, "team-r", pending, "quota team-r is full: cpu: used 4 + 1 asked > runtime 4 (min 2, max 4)")

	// The owner asks 3 CPUs the reservation holds for it: it binds.
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Namespace: "team-r", Name: "web-1", SchedulerName: "koord-scheduler", CPU: "3", Memory: "64Mi",
		Labels: map[string]string{"app": "web"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "team-r", "web-1", time.Minute); err != nil {
		t.Fatalf("the reservation's owner: %v; pending: %s", err, pendingMessages(ctx, cp, "team-r"))
	}
}
