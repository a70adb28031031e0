package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/slo/manager"
	"github.com/koord-project/koord/pkg/slo/recommender"
)

// recommenderSamples is koord_manager_recommendation_samples_total by result,
// from the in-process manager's registry.
func recommenderSamples(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "koord_manager_recommendation_samples_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

func getRecommendation(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns, name string) *analysisv1alpha1.Recommendation {
	t.Helper()
	rec, err := cp.Koord.AnalysisV1alpha1().Recommendations(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func waitRecommendation(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, ns, name, what string, ok func(*analysisv1alpha1.Recommendation) bool) *analysisv1alpha1.Recommendation {
	t.Helper()
	var last *analysisv1alpha1.Recommendation
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		rec, err := cp.Koord.AnalysisV1alpha1().Recommendations(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = rec
		return ok(rec), nil
	})
	if err != nil {
		t.Fatalf("recommendation %s/%s never %s; last status: %+v", ns, name, what, last.Status)
	}
	return last
}

// A Deployment's two pods use 0.4 and 0.6 cores and 300 MiB, as koordlet
// reports them in NodeMetric once a minute. The Recommendation converges to
// p95 plus the margin, survives a koord-manager restart through its
// checkpoint, resizes the pods in place when asked (never an LSR pod), and
// bumps memory after an OOM kill. Figures a node cannot have written
// truthfully are refused.
func TestRecommender(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	restart := startManagerWith(t, ctx, cp, func(o *manager.Options) {
		gates := features.New()
		if err := gates.Set("ResourceRecommender=true"); err != nil {
			t.Fatal(err)
		}
		o.Gates = gates
		o.Recommender = recommender.Options{Config: recommender.Defaults(), Interval: 200 * time.Millisecond, CheckpointInterval: time.Second}
		o.Recommender.Config.MinSamples, o.Recommender.Config.WarmUp = 10, 5*time.Minute
	})
	for _, n := range []string{"rec-1", "rec-2"} {
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: n, CPU: "8", Memory: "32Gi"}); err != nil {
			t.Fatal(err)
		}
	}
	// No controller-manager runs here: the Deployment's ReplicaSet and pods
	// are made by hand, owned as kube-controller-manager would own them.
	dep, err := cp.Client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cp.Client.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: dep.UID, Controller: ptr.To(true)}}},
		Spec:       appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mkPod := func(name, node string, labels map[string]string, guaranteed bool) *corev1.Pod {
		res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("2Gi")}}
		if guaranteed {
			res.Limits = res.Requests.DeepCopy()
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: res}}}}
		pod, err := cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + name, Ready: true}}
		if pod, err = cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	web1 := mkPod("web-1", "rec-1", map[string]string{"app": "web"}, false)
	mkPod("web-2", "rec-1", map[string]string{"app": "web"}, false)
	lsr := mkPod("web-lsr", "rec-1", map[string]string{"app": "web", extension.LabelPodQoS: "LSR"}, true)
	mkPod("web-elsewhere", "rec-2", map[string]string{"app": "web"}, false)
	if _, err := cp.Koord.AnalysisV1alpha1().Recommendations("default").Create(ctx, &analysisv1alpha1.Recommendation{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: analysisv1alpha1.RecommendationSpec{Target: analysisv1alpha1.RecommendationTarget{Type: analysisv1alpha1.RecommendationTargetWorkload,
			Workload: &analysisv1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRecommendation(t, ctx, cp, "default", "web", "said it has no samples", func(r *analysisv1alpha1.Recommendation) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, analysisv1alpha1.RecommendationConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "NoSamples"
	})

	container := func(cpu, mem string) []slov1alpha1.ContainerMetricInfo {
		return []slov1alpha1.ContainerMetricInfo{{Name: "app", ContainerUsage: slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	report := func(i int) {
		t.Helper()
		before := recommenderSamples(t)["accepted"]
		cpu := "400m"
		if i%2 == 1 {
			cpu = "600m"
		}
		// The LSR pod is profiled too (it is the Deployment's); only
		// resizing leaves it alone.
		pods := []*slov1alpha1.PodMetricInfo{
			{Namespace: "default", Name: "web-1", ContainersMetric: container(cpu, "300Mi")},
			{Namespace: "default", Name: "web-2", ContainersMetric: container(cpu, "300Mi")},
			{Namespace: "default", Name: "web-lsr", ContainersMetric: container(cpu, "300Mi")},
		}
		if i == 0 {
			// What a lying node might write: another node's pod, a
			// container the pod does not have, more CPU than the node has.
			pods = append(pods,
				&slov1alpha1.PodMetricInfo{Namespace: "default", Name: "web-elsewhere", ContainersMetric: container("7", "30Gi")},
				&slov1alpha1.PodMetricInfo{Namespace: "default", Name: "web-2", ContainersMetric: []slov1alpha1.ContainerMetricInfo{{Name: "ghost", ContainerUsage: container("7", "1Gi")[0].ContainerUsage}}},
				&slov1alpha1.PodMetricInfo{Namespace: "default", Name: "web-1", ContainersMetric: container("1000", "1Gi")})
		}
		if err := cp.ReportNodeMetric(ctx, "rec-1", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
			t0.Add(time.Duration(i)*time.Minute), pods...); err != nil {
			t.Fatal(err)
		}
		// One report at a time: the recommender reads the latest only.
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return recommenderSamples(t)["accepted"] >= before+3, nil
		}); err != nil {
			t.Fatalf("report %d: the recommender took no samples (%v)", i, recommenderSamples(t))
		}
	}
	for i := 0; i < 4; i++ {
		report(i)
	}
	got := recommenderSamples(t)
	for _, reason := range []string{"pod-not-on-node", "unknown-container", "beyond-node-capacity"} {
		if got[reason] != 1 {
			t.Errorf("samples refused as %s: %v, want 1 (all: %v)", reason, got[reason], got)
		}
	}
	rec := waitRecommendation(t, ctx, cp, "default", "web", "said how much data it lacks", func(r *analysisv1alpha1.Recommendation) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, analysisv1alpha1.RecommendationConditionReady)
		return c != nil && c.Reason == "NotEnoughData" && strings.Contains(c.Message, `"app" has 12 samples over 3m0s`)
	})
	if rec.Status.PodStatus != nil {
		t.Errorf("a recommendation before enough data: %+v", rec.Status.PodStatus)
	}
	for i := 4; i < 20; i++ {
		report(i)
	}
	// p95 of 0.4/0.6 is 0.6 cores: the target is the upper bound of its
	// histogram bucket plus 15 %; memory is at least VPA's pod minimum.
	rec = waitRecommendation(t, ctx, cp, "default", "web", "became Ready", func(r *analysisv1alpha1.Recommendation) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, analysisv1alpha1.RecommendationConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && r.Status.PodStatus != nil
	})
	cs := rec.Status.PodStatus.ContainerStatuses
	if len(cs) != 1 || cs[0].ContainerName != "app" {
		t.Fatalf("container statuses %+v, want one for app", cs)
	}
	if cpu := cs[0].Resources.Cpu().AsApproximateFloat64(); cpu < 0.69 || cpu > 0.73 {
		t.Errorf("cpu target %v, want 0.69–0.73 (p95 0.6 × 1.15, within a bucket)", cpu)
	}
	if mem := cs[0].Resources.Memory().Value(); mem < 345<<20 || mem > 364<<20 {
		t.Errorf("memory target %s, want 300Mi × 1.15 within a bucket", cs[0].Resources.Memory())
	}
	if p := cs[0].RequestsPercentOfTarget[corev1.ResourceCPU]; p < 270 || p > 295 {
		t.Errorf("requests at %d%% of the cpu target, want about 285 (2 cores against 0.7)", p)
	}

	// The checkpoint holds every sample; a restarted manager resumes from
	// it: its next checkpoint counts on from 60, not from 0.
	waitRecommendation(t, ctx, cp, "default", "web", "checkpointed 60 samples", func(r *analysisv1alpha1.Recommendation) bool {
		return len(r.Status.Checkpoints) == 1 && r.Status.Checkpoints[0].TotalSamplesCount == 60
	})
	restart()
	waitRecommendation(t, ctx, cp, "default", "web", "was tracked again after the restart", func(r *analysisv1alpha1.Recommendation) bool {
		return r.Status.PodStatus != nil
	})
	// The restarted recommender tracks the Recommendation before it takes
	// samples for it; give it a moment to load the checkpoint.
	time.Sleep(time.Second)
	report(20)
	rec = waitRecommendation(t, ctx, cp, "default", "web", "checkpointed 63 samples", func(r *analysisv1alpha1.Recommendation) bool {
		return len(r.Status.Checkpoints) == 1 && r.Status.Checkpoints[0].TotalSamplesCount == 63
	})
	if c := meta.FindStatusCondition(rec.Status.Conditions, analysisv1alpha1.RecommendationConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("not Ready after the restart: %+v", rec.Status.Conditions)
	}

	// In place: the LS pods' requests move to the target (never below the
	// 0.6-core peak), their limits keep their ratio; the LSR pod keeps its
	// exclusive CPUs' worth.
	rec = getRecommendation(t, ctx, cp, "default", "web")
	rec.Spec.UpdatePolicy = &analysisv1alpha1.RecommendationUpdatePolicy{UpdateMode: analysisv1alpha1.UpdateModeInPlace,
		MinAllowed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}
	if _, err := cp.Koord.AnalysisV1alpha1().Recommendations("default").Update(ctx, rec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var resized *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resized, err = cp.Client.CoreV1().Pods("default").Get(ctx, web1.Name, metav1.GetOptions{})
		return err == nil && resized.Spec.Containers[0].Resources.Requests.Cpu().Cmp(resource.MustParse("2")) != 0, nil
	}); err != nil {
		t.Fatalf("web-1 was not resized: %+v", resized.Spec.Containers[0].Resources)
	}
	r := resized.Spec.Containers[0].Resources
	if cpu := r.Requests.Cpu().AsApproximateFloat64(); cpu < 0.69 || cpu > 0.73 {
		t.Errorf("resized cpu request %v, want the target", cpu)
	}
	if lim, req := r.Limits.Cpu().AsApproximateFloat64(), r.Requests.Cpu().AsApproximateFloat64(); lim < 2*req-0.002 || lim > 2*req+0.002 {
		t.Errorf("resized cpu limit %v, want twice the request %v as before", lim, req)
	}
	if mem := r.Requests.Memory(); mem.Cmp(resource.MustParse("512Mi")) != 0 {
		t.Errorf("resized memory request %s, want minAllowed 512Mi (the target is below it)", mem)
	}
	waitEventIn(t, ctx, cp, "default", "Resized", "resized in place to recommendation web")
	if got, _ := cp.Client.CoreV1().Pods("default").Get(ctx, lsr.Name, metav1.GetOptions{}); got.Spec.Containers[0].Resources.Requests.Cpu().Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("the LSR pod was resized: %+v", got.Spec.Containers[0].Resources)
	}
	rec = getRecommendation(t, ctx, cp, "default", "web")
	rec.Spec.UpdatePolicy = nil
	if _, err := cp.Koord.AnalysisV1alpha1().Recommendations("default").Update(ctx, rec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// An OOM kill at web-2's limit (1Gi since the resize): memory goes to
	// 1.2 times that plus the margin.
	pod, err := cp.Client.CoreV1().Pods("default").Get(ctx, "web-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	limit := pod.Spec.Containers[0].Resources.Limits.Memory().AsApproximateFloat64()
	if limit != 1<<30 {
		t.Errorf("web-2's memory limit %v after the resize, want 1Gi (512Mi × 2)", limit)
	}
	pod.Status.ContainerStatuses[0].RestartCount = 1
	pod.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.Now()}}
	if _, err := cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRecommendation(t, ctx, cp, "default", "web", "raised memory after the OOM kill", func(r *analysisv1alpha1.Recommendation) bool {
		if r.Status.PodStatus == nil || len(r.Status.PodStatus.ContainerStatuses) != 1 {
			return false
		}
		mem := r.Status.PodStatus.ContainerStatuses[0].Resources.Memory().AsApproximateFloat64()
		return mem >= 1.2*limit*1.15 && mem <= 1.2*limit*1.15*1.06
	})
}

// A RecommendationProfile makes a Recommendation for each Deployment of
// the namespaces it selects, and deletes it with its Deployment.
func TestRecommendationProfile(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	startManagerWith(t, ctx, cp, func(o *manager.Options) {
		gates := features.New()
		if err := gates.Set("ResourceRecommender=true"); err != nil {
			t.Fatal(err)
		}
		o.Gates = gates
		o.Recommender = recommender.Options{Config: recommender.Defaults()}
	})
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkDeployment := func(ns, name string) {
		t.Helper()
		sel := map[string]string{"app": name}
		if _, err := cp.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkDeployment("team-a", "api")
	mkDeployment("team-b", "api")
	profile, err := cp.Koord.AnalysisV1alpha1().RecommendationProfiles().Create(ctx, &analysisv1alpha1.RecommendationProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec:       analysisv1alpha1.RecommendationProfileSpec{ControllerKinds: []string{"Deployment", "StatefulSet"}, EnabledNamespaces: []string{"team-a"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := waitRecommendation(t, ctx, cp, "team-a", "deployment-api", "was created", func(*analysisv1alpha1.Recommendation) bool { return true })
	if w := rec.Spec.Target.Workload; w == nil || w.Kind != "Deployment" || w.Name != "api" || w.APIVersion != "apps/v1" || !metav1.IsControlledBy(rec, profile) || rec.Labels[recommender.LabelProfile] != "team-a" {
		t.Errorf("profile's recommendation %+v, want Deployment api, owned by the profile", rec)
	}
	// A Deployment created later is profiled too; team-b is not.
	mkDeployment("team-a", "worker")
	waitRecommendation(t, ctx, cp, "team-a", "deployment-worker", "was created", func(*analysisv1alpha1.Recommendation) bool { return true })
	if _, err := cp.Koord.AnalysisV1alpha1().Recommendations("team-b").Get(ctx, "deployment-api", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a namespace the profile does not enable was profiled: %v", err)
	}
	if err := cp.Client.AppsV1().Deployments("team-a").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Koord.AnalysisV1alpha1().Recommendations("team-a").Get(ctx, "deployment-api", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatal("the recommendation of a deleted Deployment was kept")
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Koord.AnalysisV1alpha1().RecommendationProfiles().Get(ctx, "team-a", metav1.GetOptions{})
		return err == nil && p.Status.Recommendations == 1, nil
	}); err != nil {
		t.Error("the profile's status does not count its one recommendation")
	}
	// A kind a profile cannot select is refused by the CRD, naming it.
	_, err = cp.Koord.AnalysisV1alpha1().RecommendationProfiles().Create(ctx, &analysisv1alpha1.RecommendationProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: analysisv1alpha1.RecommendationProfileSpec{ControllerKinds: []string{"Pod"}}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.controllerKinds[0]") {
		t.Errorf("a profile of Pods: %v, want refused naming spec.controllerKinds[0]", err)
	}
}
