package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

var _ = Describe("gang scheduling", Label("gang"), func() {
	It("runs a gang Job of two BE pods on batch resources, and koord-manager reports its PodGroup Running", func(ctx SpecContext) {
		needNode()
		waitBatchCapacity(ctx, 200)
		pg := &schedulingsigsv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "gang-job"},
			Spec: schedulingsigsv1alpha1.PodGroupSpec{MinMember: 2, ScheduleTimeoutSeconds: ptr.To[int32](60)}}
		_, err := koord.SchedulingSigsV1alpha1().PodGroups(testNamespace).Create(ctx, pg, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = koord.SchedulingSigsV1alpha1().PodGroups(testNamespace).Delete(ctx, pg.Name, metav1.DeleteOptions{})
		})
		tmpl := batchPod("gang-job", "sleeper", nil,
			map[string]string{extension.BatchCPU: "100", extension.BatchMemory: "32Mi"},
			map[string]string{extension.BatchCPU: "100", extension.BatchMemory: "64Mi"})
		tmpl.Labels[extension.LabelPodGroup] = pg.Name
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "gang-job"}, Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec},
		}}
		_, err = kube.BatchV1().Jobs(testNamespace).Create(ctx, job, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = kube.BatchV1().Jobs(testNamespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
			Eventually(func() int {
				pods, _ := kube.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: extension.LabelPodGroup + "=gang-job"})
				return len(pods.Items)
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(BeZero())
		})
		Eventually(func(g Gomega) {
			pods, err := kube.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: extension.LabelPodGroup + "=gang-job"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s: %s", p.Name, describePod(&p))
				g.Expect(p.Spec.Containers[0].Resources.Requests).To(HaveKey(corev1.ResourceName(extension.BatchCPU)))
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			got, err := koord.SchedulingSigsV1alpha1().PodGroups(testNamespace).Get(ctx, pg.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Phase).To(Equal(schedulingsigsv1alpha1.PodGroupRunning), "%+v", got.Status)
			g.Expect(got.Status.Running).To(BeEquivalentTo(2))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})
