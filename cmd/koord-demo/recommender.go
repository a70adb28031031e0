package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
)

// recommenderScene: a Deployment asks for 2 cores and 1Gi per pod and uses
// 0.4–0.6 cores and 300Mi. koord-manager's recommender reads twenty
// one-minute NodeMetric reports of its containers (written here as koordlet
// writes them, with their timestamps a minute apart) and recommends.
func recommenderScene(ctx context.Context, cp *controlplane.ControlPlane) error {
	fmt.Println("\nRecommendations: Deployment shop/web asks cpu 2, memory 1Gi per pod; its containers use 0.4-0.6 cores and 300Mi")
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "node-r", CPU: "8", Memory: "32Gi"}); err != nil {
		return err
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	labels := map[string]string{"app": "web"}
	dep, err := cp.Client.AppsV1().Deployments("shop").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// The demo runs no kube-controller-manager: the ReplicaSet and its pods
	// are made here, owned as it would own them.
	rs, err := cp.Client.AppsV1().ReplicaSets("shop").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-5c7b",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	var podNames []string
	for i := 1; i <= 2; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-5c7b-%d", i), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: "node-r", Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
		if _, err := cp.Client.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		podNames = append(podNames, pod.Name)
	}
	rec := &analysisv1alpha1.Recommendation{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: analysisv1alpha1.RecommendationSpec{Target: analysisv1alpha1.RecommendationTarget{Type: analysisv1alpha1.RecommendationTargetWorkload,
			Workload: &analysisv1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}}
	if _, err := cp.Koord.AnalysisV1alpha1().Recommendations("shop").Create(ctx, rec, metav1.CreateOptions{}); err != nil {
		return err
	}
	// Samples count once the Recommendation is tracked: it says NoSamples then.
	if _, err := waitReady(ctx, cp, func(c *metav1.Condition) bool { return c.Reason == "NoSamples" }); err != nil {
		return err
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	for i := 0; i < 20; i++ {
		cpu := []string{"400m", "600m"}[i%2]
		var pods []*slov1alpha1.PodMetricInfo
		for _, name := range podNames {
			pods = append(pods, &slov1alpha1.PodMetricInfo{Namespace: "shop", Name: name, ContainersMetric: []slov1alpha1.ContainerMetricInfo{{Name: "app",
				ContainerUsage: slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("300Mi")}}}}})
		}
		before := acceptedSamples()
		if err := cp.ReportNodeMetric(ctx, "node-r", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			t0.Add(time.Duration(i)*time.Minute), pods...); err != nil {
			return err
		}
		// One report at a time, as koordlet writes them: the recommender
		// reads the latest.
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return acceptedSamples() >= before+float64(len(podNames)), nil
		}); err != nil {
			return fmt.Errorf("report %d was not sampled", i)
		}
		if i == 3 {
			c, err := waitReady(ctx, cp, func(c *metav1.Condition) bool {
				return c.Reason == "NotEnoughData" && strings.Contains(c.Message, fmt.Sprintf("has %d samples", 4*len(podNames)))
			})
			if err != nil {
				return err
			}
			fmt.Printf("  after 4 reports:  Ready %s, %s: %s\n", c.Status, c.Reason, c.Message)
		}
	}
	if _, err := waitReady(ctx, cp, func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue }); err != nil {
		return err
	}
	got, err := cp.Koord.AnalysisV1alpha1().Recommendations("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Println("  after 20 reports: kubectl get recommendation -n shop -o wide")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  NAME\tKIND\tNAME\tREADY\tCONTAINER\tCPU\tMEMORY\tCPU-REQUESTED%\tMEMORY-REQUESTED%")
	cs := got.Status.PodStatus.ContainerStatuses[0]
	fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", got.Name, got.Spec.Target.Workload.Kind, got.Spec.Target.Workload.Name, "True", cs.ContainerName,
		cs.Resources.Cpu(), cs.Resources.Memory(), cs.RequestsPercentOfTarget[corev1.ResourceCPU], cs.RequestsPercentOfTarget[corev1.ResourceMemory])
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Printf("  cpu target = p95 of the samples + 15 %%; the requests are %d%% of it: over-provisioned\n", cs.RequestsPercentOfTarget[corev1.ResourceCPU])
	fmt.Printf("  cpu upper bound %s while the history is 19 minutes: twice the p95 after a day, +14 %% after a week\n", cs.UpperBound.Cpu())
	return nil
}

func waitReady(ctx context.Context, cp *controlplane.ControlPlane, ok func(*metav1.Condition) bool) (*metav1.Condition, error) {
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cp.Koord.AnalysisV1alpha1().Recommendations("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cond = meta.FindStatusCondition(r.Status.Conditions, analysisv1alpha1.RecommendationConditionReady)
		return cond != nil && ok(cond), nil
	})
	if err != nil {
		return nil, fmt.Errorf("recommendation shop/web: last Ready condition %+v", cond)
	}
	return cond, nil
}

// acceptedSamples reads the in-process koord-manager's sample counter.
func acceptedSamples() float64 {
	families, _ := ctrlmetrics.Registry.Gather()
	for _, f := range families {
		if f.GetName() != "koord_manager_recommendation_samples_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "accepted" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
