package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
)

var _ = Describe("admission webhooks", Label("webhook"), func() {
	It("runs a Deployment written for stock Kubernetes, in a namespace a ClusterColocationProfile selects, as BE pods with their batch-cpu limit in the cgroup", func(ctx SpecContext) {
		needNode()
		waitBatchCapacity(ctx, 250)
		const ns = "koord-e2e-colocation"
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{"koordinator.sh/enable-colocation": "true"}}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		profile := &colocationv1alpha1.ClusterColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "koord-e2e-colocation"},
			Spec: colocationv1alpha1.ClusterColocationProfileSpec{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"koordinator.sh/enable-colocation": "true"}},
				QoSClass:          "BE", PriorityClassName: "koord-batch", SchedulerName: koordScheduler,
			}}
		_, err = koord.ConfigV1alpha1().ClusterColocationProfiles().Create(ctx, profile, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = koord.ConfigV1alpha1().ClusterColocationProfiles().Delete(ctx, profile.Name, metav1.DeleteOptions{})
		})

		// Nothing Koord-specific: cpu and memory, the default scheduler.
		labels := map[string]string{"app": "batch-job"}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch-job"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{corev1.LabelHostname: realNode},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "main", Image: imagePrefix + "sleeper:" + imageTag, ImagePullPolicy: corev1.PullIfNotPresent,
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					}}},
			}},
		}}
		// The profile may reach koord-manager's cache a moment after it is
		// created: a pod admitted before is replaced until one is mutated.
		var pod *corev1.Pod
		Eventually(func(g Gomega) {
			_, err := kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				g.Expect(err).NotTo(HaveOccurred())
			}
			var pods *corev1.PodList
			g.Eventually(func() int {
				pods, _ = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=batch-job"})
				return len(pods.Items)
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(1))
			pod = &pods.Items[0]
			if pod.Labels[extension.LabelPodQoS] != "BE" {
				_ = kube.AppsV1().Deployments(ns).Delete(ctx, dep.Name, metav1.DeleteOptions{})
				g.Eventually(func() int {
					pods, _ = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=batch-job"})
					return len(pods.Items)
				}).WithContext(ctx).WithTimeout(time.Minute).Should(BeZero())
			}
			g.Expect(pod.Labels).To(HaveKeyWithValue(extension.LabelPodQoS, "BE"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())

		Expect(pod.Spec.SchedulerName).To(Equal(koordScheduler))
		Expect(pod.Spec.Priority).To(HaveValue(BeEquivalentTo(5000)))
		res := pod.Spec.Containers[0].Resources
		Expect(res.Requests).NotTo(HaveKey(corev1.ResourceCPU))
		Expect(res.Requests[extension.BatchCPU]).To(Equal(resource.MustParse("250")))
		Expect(res.Limits[extension.BatchCPU]).To(Equal(resource.MustParse("500")))
		Expect(res.Limits[extension.BatchMemory]).To(Equal(resource.MustParse("64Mi")))

		Eventually(func() corev1.PodPhase {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return ""
			}
			pod = p
			return p.Status.Phase
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal(corev1.PodRunning))
		Expect(pod.Status.QOSClass).To(Equal(corev1.PodQOSBestEffort), "kubelet sees no cpu or memory: a BestEffort pod")
		// batch-cpu limit 500 is a 50 ms / 100 ms CFS quota, set by koordlet.
		eventuallyFile(ctx, cgroupFile("cpu", podCgroup(pod, true), "cpu.cfs_quota_us"), "50000")
		eventuallyFile(ctx, cgroupFile("memory", podCgroup(pod, true), "memory.limit_in_bytes"), "67108864")
	})
})
