package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

var _ = Describe("descheduler", Label("descheduler"), func() {
	It("moves a running pod of a Deployment with a PodMigrationJob in ReservationFirst mode: the job ends Succeeded, the replacement in the reservation on another node", func(ctx SpecContext) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		Expect(err).NotTo(HaveOccurred())
		if len(nodes.Items) < 2 {
			Skip("needs 2 or more kwok nodes (hack/cluster makes 3)")
		}
		// kwok nodes run no koordlet: the spec reports a light load for them,
		// as koordlet would, or LoadAwareScheduling turns them down (expired
		// NodeMetric) whatever ran before.
		stop := make(chan struct{})
		defer close(stop)
		for _, n := range nodes.Items {
			Expect(reportNodeMetric(ctx, n.Name, "200m")).To(Succeed())
		}
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Second):
					// The spec may be over: a failed report then does not matter.
					for _, n := range nodes.Items {
						_ = reportNodeMetric(ctx, n.Name, "200m")
					}
				}
			}
		}()
		labels := map[string]string{"app": "pmj-web"}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "pmj-web"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				SchedulerName:                 koordScheduler,
				NodeSelector:                  map[string]string{"type": "kwok"},
				Tolerations:                   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "main", Image: imagePrefix + "sleeper:" + imageTag, Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
			}},
		}}
		_, err = kube.AppsV1().Deployments(testNamespace).Create(ctx, dep, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = kube.AppsV1().Deployments(testNamespace).Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
		})
		var pod corev1.Pod
		Eventually(func(g Gomega) {
			pods, err := kube.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=pmj-web"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
			pod = pods.Items[0]
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		source := pod.Spec.NodeName

		job := &schedulingv1alpha1.PodMigrationJob{ObjectMeta: metav1.ObjectMeta{Name: "e2e-move-pmj-web"}, Spec: schedulingv1alpha1.PodMigrationJobSpec{
			Mode:   schedulingv1alpha1.PodMigrationJobModeReservationFirst,
			TTL:    &metav1.Duration{Duration: 3 * time.Minute},
			PodRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}}
		_, err = koord.SchedulingV1alpha1().PodMigrationJobs().Create(ctx, job, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = koord.SchedulingV1alpha1().PodMigrationJobs().Delete(ctx, job.Name, metav1.DeleteOptions{})
		})
		Eventually(func(g Gomega) {
			j, err := koord.SchedulingV1alpha1().PodMigrationJobs().Get(ctx, job.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(j.Status.Phase).NotTo(Equal(schedulingv1alpha1.PodMigrationJobFailed), "%s: %s", j.Status.Reason, j.Status.Message)
			g.Expect(j.Status.Phase).To(Equal(schedulingv1alpha1.PodMigrationJobSucceeded), "%s", j.Status.Message)
			job = j
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		Expect(job.Status.NodeName).NotTo(Equal(source), "the replacement's reservation must be off the source node")
		Expect(job.Status.PodRef).NotTo(BeNil())
		moved, err := kube.CoreV1().Pods(testNamespace).Get(ctx, job.Status.PodRef.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(moved.Spec.NodeName).To(Equal(job.Status.NodeName))
		_, err = kube.CoreV1().Pods(testNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		Expect(err).To(HaveOccurred(), "the moved pod %s is still there", pod.Name)
	})
})
