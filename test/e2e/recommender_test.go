package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
)

var _ = Describe("resource recommendations", Label("recommender"), func() {
	It("recommends, for a Deployment whose container burns 0.3 of a core (held by its CFS limit), a CPU target whose p95 is within 20 % of it", func(ctx SpecContext) {
		needNode()
		labels := map[string]string{"app": "burn-300m"}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "burn-300m"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{corev1.LabelHostname: realNode},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "main", Image: imagePrefix + "burner:" + imageTag, ImagePullPolicy: corev1.PullIfNotPresent,
					Args: []string{"--cores=1"},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					}}},
			}},
		}}
		_, err := kube.AppsV1().Deployments(testNamespace).Create(ctx, dep, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = kube.AppsV1().Deployments(testNamespace).Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			Eventually(func() int {
				pods, _ := kube.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=burn-300m"})
				return len(pods.Items)
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(BeZero())
		})
		rec := &analysisv1alpha1.Recommendation{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "burn-300m"},
			Spec: analysisv1alpha1.RecommendationSpec{Target: analysisv1alpha1.RecommendationTarget{Type: analysisv1alpha1.RecommendationTargetWorkload,
				Workload: &analysisv1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name}}}}
		_, err = koord.AnalysisV1alpha1().Recommendations(testNamespace).Create(ctx, rec, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = koord.AnalysisV1alpha1().Recommendations(testNamespace).Delete(ctx, rec.Name, metav1.DeleteOptions{})
		})

		// The warm-up test/e2e/values.yaml sets: 6 samples over 30 s, one
		// per 5 s NodeMetric report.
		Eventually(func(g Gomega) {
			got, err := koord.AnalysisV1alpha1().Recommendations(testNamespace).Get(ctx, rec.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := meta.FindStatusCondition(got.Status.Conditions, analysisv1alpha1.RecommendationConditionReady)
			g.Expect(c).NotTo(BeNil(), "no Ready condition yet")
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
			g.Expect(got.Status.PodStatus.ContainerStatuses).To(HaveLen(1))
			cs := got.Status.PodStatus.ContainerStatuses[0]
			g.Expect(cs.ContainerName).To(Equal("main"))
			// The target is the usage's p95 plus the 15 % safety margin: the
			// p95 it rests on is within 20 % of the 0.3 cores burnt, and the
			// target is never below them.
			cpu := cs.Resources.Cpu().AsApproximateFloat64()
			g.Expect(cpu/1.15).To(BeNumerically("~", 0.3, 0.06), "cpu target %s (bounds %v–%v)", cs.Resources.Cpu(), cs.LowerBound.Cpu(), cs.UpperBound.Cpu())
			g.Expect(cpu).To(BeNumerically(">=", 0.29), "cpu target %s below what the container burns", cs.Resources.Cpu())
			// 100m requested against a target over 0.24: under-provisioned.
			g.Expect(cs.RequestsPercentOfTarget).To(HaveKeyWithValue(corev1.ResourceCPU, BeNumerically("<", 50)))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})
