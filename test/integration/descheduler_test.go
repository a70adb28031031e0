package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/descheduler"
)

const deschedulerTestConfig = `
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 1s
profiles:
- name: koord-descheduler
  plugins:
    balance:
      enabled:
        - name: LowNodeLoad
  pluginConfig:
  - name: MigrationController
    args:
      apiVersion: descheduler/v1alpha2
      kind: MigrationControllerArgs
      defaultJobTTL: 25s
      evictQPS: "100"
      defaultDeleteOptions: {gracePeriodSeconds: 0}
      namespaces: {exclude: [kube-system, koord-system]}
  - name: LowNodeLoad
    args:
      apiVersion: descheduler/v1alpha2
      kind: LowNodeLoadArgs
      lowThresholds: {cpu: 30, memory: 90}
      highThresholds: {cpu: 70, memory: 95}
      anomalyCondition: {consecutiveAbnormalities: 3}
`

// koord-descheduler with koord-scheduler and koord-manager on the
// in-process control plane: five nodes of 8 CPUs, one of them, d1, at 81 %
// (two workloads on it). With no node under the low mark nothing moves;
// once there are, a PodDisruptionBudget that allows no disruption keeps its
// pod where it is (the job fails at its TTL, its reservation goes, nothing
// is evicted); without it, just one pod, the lowest band's, is moved, its
// replacement's Reservation Available on another node before the eviction,
// and the replacement lands in it. A node hot for one round is left alone.
//
// The in-process control plane runs no controller-manager: the test plays
// the ReplicaSet controller (it creates the replacement pod) and a koordlet
// (it reports the NodeMetrics).
func TestDeschedulerLowNodeLoad(t *testing.T) {
	ctx := testContext(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cp := startControlPlane(t, controlplane.Options{})
	if err := cp.Apply(ctx, manifests.PriorityClasses); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: fmt.Sprintf("d%d", i), CPU: "8", Memory: "32Gi"}); err != nil {
			t.Fatal(err)
		}
	}
	// Two workloads on d1: batch (BE, koord-batch) and web (LS, koord-prod).
	rs := map[string]*appsv1.ReplicaSet{}
	for _, name := range []string{"batch", "web"} {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}}}
		created, err := cp.Client.AppsV1().ReplicaSets("apps").Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs[name] = created
	}
	workloadPod := func(app, name, node string) *corev1.Pod {
		qos, class := "LS", "koord-prod"
		if app == "batch" {
			qos, class = "BE", "koord-batch"
		}
		p, _ := controlplane.MakePod(controlplane.PodSpec{Namespace: "apps", Name: name, CPU: "1", Memory: "1Gi", SchedulerName: "koord-scheduler",
			Labels: map[string]string{"app": app, extension.LabelPodQoS: qos}, PriorityClassName: class})
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs[app], appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
		p.Spec.NodeName = node
		created, err := cp.Client.CoreV1().Pods("apps").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node == "" {
			return created
		}
		// Running and Ready, as kubelet would report it: the Eviction API
		// holds only such pods to their PodDisruptionBudget.
		created.Status.Phase = corev1.PodRunning
		created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if created, err = cp.Client.CoreV1().Pods("apps").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return created
	}
	var onD1 []*corev1.Pod
	for i := range 3 {
		onD1 = append(onD1, workloadPod("batch", fmt.Sprintf("batch-%d", i), "d1"))
	}
	for i := range 2 {
		onD1 = append(onD1, workloadPod("web", fmt.Sprintf("web-%d", i), "d1"))
	}
	// d1: 0.5 core of system, 1 core per batch pod, 1.5 per web pod: 6.5 of 8 = 81 %.
	podUsage := func(pods []*corev1.Pod) []*slov1alpha1.PodMetricInfo {
		var out []*slov1alpha1.PodMetricInfo
		for _, p := range pods {
			cpu := "1"
			if strings.HasPrefix(p.Name, "web") {
				cpu = "1500m"
			}
			out = append(out, &slov1alpha1.PodMetricInfo{Namespace: p.Namespace, Name: p.Name,
				PodUsage: slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}})
		}
		return out
	}
	report := func(node, cpu string, pods []*corev1.Pod) {
		t.Helper()
		if err := cp.ReportNodeMetric(ctx, node, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")}, time.Now(), podUsage(pods)...); err != nil {
			t.Fatal(err)
		}
	}
	report("d1", "6500m", onD1)
	for i := 2; i <= 5; i++ {
		report(fmt.Sprintf("d%d", i), "4", nil) // 50 %: between the marks
	}
	// Keep the reports fresh (nodeMetricExpirationSeconds) as koordlet would.
	usage := map[string]string{"d1": "6500m", "d2": "4", "d3": "4", "d4": "4", "d5": "4"}
	refresh := func() {
		for n, cpu := range usage {
			var pods []*corev1.Pod
			if n == "d1" {
				pods = onD1
			}
			report(n, cpu, pods)
		}
	}

	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	startManager(t, ctx, cp, 0)
	cfg, err := v1alpha2.Load([]byte(deschedulerTestConfig))
	if err != nil {
		t.Fatal(err)
	}
	dctx, stopDesched := context.WithCancel(ctx)
	mgr, err := descheduler.New(dctx, cp.Config, descheduler.Options{Config: cfg, Namespace: "koord-system", MetricsAddr: "0", HealthAddr: "0", InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(dctx) }()
	t.Cleanup(func() { stopDesched(); <-done })

	jobs := func() []schedulingv1alpha1.PodMigrationJob {
		l, err := cp.Koord.SchedulingV1alpha1().PodMigrationJobs().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}

	// 1. No node under the low mark: d1 stays hot, nothing moves.
	time.Sleep(5 * time.Second)
	if j := jobs(); len(j) != 0 {
		t.Fatalf("with no node under the low mark, %d PodMigrationJobs were created", len(j))
	}

	// 2. d2-d5 cool down; a PDB allowing no disruption covers batch.
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "batch"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}}}}
	if _, err := cp.Client.PolicyV1().PodDisruptionBudgets("apps").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 5; i++ {
		usage[fmt.Sprintf("d%d", i)] = "1" // 12.5 %
	}
	refresh()
	var first schedulingv1alpha1.PodMigrationJob
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, false, func(context.Context) (bool, error) {
		refresh()
		for _, j := range jobs() {
			if j.Status.Phase == schedulingv1alpha1.PodMigrationJobFailed {
				first = j
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the job blocked by the PodDisruptionBudget never ended: %+v", jobs())
	}
	if !strings.HasPrefix(first.Spec.PodRef.Name, "batch-") || first.Status.Reason != schedulingv1alpha1.PodMigrationJobReasonTimeout ||
		!strings.Contains(first.Status.Message, "disruption budget") {
		t.Errorf("first job: pod %s, %s: %s", first.Spec.PodRef.Name, first.Status.Reason, first.Status.Message)
	}
	if p, err := cp.Client.CoreV1().Pods("apps").Get(ctx, first.Spec.PodRef.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod the PDB protects was evicted: %v", err)
	}
	if ref := first.Spec.ReservationOptions.ReservationRef; ref != nil {
		if r, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
			t.Errorf("the failed job's reservation %s is still there: owners %v phase %s current owners %v", ref.Name, r.OwnerReferences, r.Status.Phase, r.Status.CurrentOwners)
		}
	}

	// 3. Without the PDB: one batch pod moves, through a Reservation.
	if err := cp.Client.PolicyV1().PodDisruptionBudgets("apps").Delete(ctx, "batch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var moving schedulingv1alpha1.PodMigrationJob
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, false, func(context.Context) (bool, error) {
		refresh()
		for _, j := range jobs() {
			for _, c := range j.Status.Conditions {
				if c.Type == schedulingv1alpha1.PodMigrationJobConditionEviction && c.Status == schedulingv1alpha1.PodMigrationJobConditionStatusTrue {
					moving = j
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no pod was evicted: %+v", jobs())
	}
	evicted := moving.Spec.PodRef.Name
	if !strings.HasPrefix(evicted, "batch-") {
		t.Errorf("moved %s, want a batch pod (the lowest band)", evicted)
	}
	var scheduledAt, evictedAt time.Time
	for _, c := range moving.Status.Conditions {
		switch c.Type {
		case schedulingv1alpha1.PodMigrationJobConditionReservationScheduled:
			scheduledAt = c.LastTransitionTime.Time
		case schedulingv1alpha1.PodMigrationJobConditionEviction:
			evictedAt = c.LastTransitionTime.Time
		}
	}
	if scheduledAt.IsZero() || evictedAt.Before(scheduledAt) {
		t.Errorf("evicted at %v, reservation scheduled at %v: the reservation must be Available first", evictedAt, scheduledAt)
	}
	resName := moving.Spec.ReservationOptions.ReservationRef.Name
	res, err := cp.Koord.SchedulingV1alpha1().Reservations().Get(ctx, resName, metav1.GetOptions{})
	if err != nil || res.Status.NodeName == "" || res.Status.NodeName == "d1" {
		t.Fatalf("reservation %s: %v node %q", resName, err, res.Status.NodeName)
	}
	// d1 as koordlet now reports it: one batch pod fewer (5.5 of 8 = 69 %).
	var left []*corev1.Pod
	for _, p := range onD1 {
		if p.Name != evicted {
			left = append(left, p)
		}
	}
	onD1, usage["d1"] = left, "5500m"
	refresh()
	// The ReplicaSet's replacement lands in the reservation.
	repl := workloadPod("batch", "batch-new", "")
	bound, err := cp.WaitForPodBound(ctx, "apps", repl.Name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if bound.Spec.NodeName != res.Status.NodeName {
		t.Errorf("replacement on %s, reservation on %s", bound.Spec.NodeName, res.Status.NodeName)
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := cp.Koord.SchedulingV1alpha1().PodMigrationJobs().Get(ctx, moving.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // a failed read must not lose the job's name
		}
		moving = *j
		return j.Status.Phase == schedulingv1alpha1.PodMigrationJobSucceeded, nil
	})
	if err != nil {
		t.Fatalf("job %s: %s %s %s", moving.Name, moving.Status.Phase, moving.Status.Reason, moving.Status.Message)
	}
	if moving.Status.PodRef == nil || moving.Status.PodRef.Name != "batch-new" {
		t.Errorf("job's new pod %v, want batch-new", moving.Status.PodRef)
	}
	// Just enough: no second pod leaves d1, which is under the high mark now.
	time.Sleep(5 * time.Second)
	refresh()
	evictions := 0
	for _, j := range jobs() {
		if j.Status.Phase != schedulingv1alpha1.PodMigrationJobFailed {
			evictions++
		}
	}
	if evictions != 1 {
		t.Errorf("%d moves, want exactly one: %+v", evictions, jobs())
	}

	// 4. A node hot for one round only is left alone: d3, with two batch
	// pods, over the mark for about one round, then back under it.
	onD3 := []*corev1.Pod{workloadPod("batch", "d3-0", "d3"), workloadPod("batch", "d3-1", "d3")}
	report("d3", "7", onD3)
	time.Sleep(1500 * time.Millisecond)
	usage["d3"] = "1"
	refresh()
	time.Sleep(4 * time.Second)
	for _, j := range jobs() {
		if j.Spec.PodRef != nil && strings.HasPrefix(j.Spec.PodRef.Name, "d3-") {
			t.Errorf("job %s moved %s off d3, which was hot for one round only", j.Name, j.Spec.PodRef.Name)
		}
	}
}

// bin/koord-descheduler with the shipped RBAC under Node,RBAC authorization:
// it takes its lease, runs its rounds (LowNodeLoad on, informers for every
// kind its filters read), carries out a PodMigrationJob through the
// Eviction API, and exits cleanly on SIGTERM; a malformed configuration
// stops it at start naming the field.
func TestDeschedulerBinaryWithShippedRBAC(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{RBAC: true})
	kubeconfig := serviceAccountKubeconfig(t, ctx, cp, "koord-descheduler")
	bin := commandBinary(t, "koord-descheduler", "KOORD_DESCHEDULER_BIN")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(deschedulerTestConfig, "highThresholds:", "highThreshold:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "--config="+bad, "--kubeconfig="+kubeconfig).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown field \"highThreshold\"`) {
		t.Errorf("a malformed configuration: %v\n%s", err, out)
	}

	good := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(good, []byte(deschedulerTestConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "db-1", CPU: "8", Memory: "32Gi"}); err != nil {
		t.Fatal(err)
	}
	// A ReplicaSet's pod on db-1: a pod the descheduler's evictor would
	// move (a bare pod, or one on no node, it would not: its job fails).
	pod, err := controlplane.MakePod(controlplane.PodSpec{Name: "moved", CPU: "100m", Memory: "64Mi"})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeName = "db-1"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "moved", UID: "rs-moved", Controller: ptr.To(true)}}
	if pod, err = cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	cmd := exec.Command(bin, "--config="+good, "--kubeconfig="+kubeconfig, "--namespace=koord-system", "--metrics-addr=0",
		fmt.Sprintf("--health-addr=127.0.0.1:%d", freePort(t)), "-v=2")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("koord-descheduler output:\n%s", log.String())
		}
	})
	job := &schedulingv1alpha1.PodMigrationJob{ObjectMeta: metav1.ObjectMeta{Name: "direct"}, Spec: schedulingv1alpha1.PodMigrationJobSpec{
		Mode: schedulingv1alpha1.PodMigrationJobModeEvictionDirectly, PodRef: &corev1.ObjectReference{Namespace: "default", Name: "moved", UID: pod.UID}}}
	if _, err := cp.Koord.SchedulingV1alpha1().PodMigrationJobs().Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last schedulingv1alpha1.PodMigrationJobStatus
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		j, err := cp.Koord.SchedulingV1alpha1().PodMigrationJobs().Get(ctx, "direct", metav1.GetOptions{})
		if err == nil {
			last = j.Status
		}
		return err == nil && j.Status.Phase == schedulingv1alpha1.PodMigrationJobSucceeded && strings.Contains(log.String(), "Descheduling"), nil
	})
	if err != nil {
		t.Fatalf("the EvictDirectly job did not succeed (%s %s: %s), or no round ran", last.Phase, last.Reason, last.Message)
	}
	if _, err := cp.Client.CoreV1().Pods("default").Get(ctx, "moved", metav1.GetOptions{}); err == nil {
		t.Error("the job succeeded but its pod is still there")
	}
	if _, err := cp.Client.CoordinationV1().Leases("koord-system").Get(ctx, "koord-descheduler", metav1.GetOptions{}); err != nil {
		t.Errorf("no koord-descheduler lease: %v", err)
	}
	if strings.Contains(log.String(), "forbidden") {
		t.Errorf("the shipped RBAC is missing a permission:\n%s", grepLines(log.String(), "forbidden"))
	}
	exitsOnSIGTERM(t, "koord-descheduler", cmd, exited)
}
