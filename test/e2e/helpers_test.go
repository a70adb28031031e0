package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// podOpts shapes a test pod.
type podOpts struct {
	name      string
	scheduler string // "" for the default scheduler
	image     string // "sleeper" or "burner"
	args      []string
	cpu       string // request (and limit when guaranteed)
	memory    string
	// guaranteed sets limits = requests (Kubernetes QoS Guaranteed).
	guaranteed  bool
	labels      map[string]string
	annotations map[string]string
	nodeName    string // nodeSelector on kubernetes.io/hostname
	priority    string // PriorityClass name, e.g. koord-prod
	kwok        bool   // tolerate and select the simulated nodes
}

func newPod(o podOpts) *corev1.Pod {
	if o.image == "" {
		o.image = "sleeper"
	}
	req := corev1.ResourceList{}
	if o.cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(o.cpu)
	}
	if o.memory != "" {
		req[corev1.ResourceMemory] = resource.MustParse(o.memory)
	}
	c := corev1.Container{
		Name:            "main",
		Image:           imagePrefix + o.image + ":" + imageTag,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            o.args,
		Resources:       corev1.ResourceRequirements{Requests: req},
	}
	if o.guaranteed {
		c.Resources.Limits = req.DeepCopy()
	}
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: o.name, Labels: o.labels, Annotations: o.annotations},
		Spec: corev1.PodSpec{
			SchedulerName:                 o.scheduler,
			Containers:                    []corev1.Container{c},
			TerminationGracePeriodSeconds: &zero,
			PriorityClassName:             o.priority,
		},
	}
	switch {
	case o.kwok:
		pod.Spec.NodeSelector = map[string]string{"type": "kwok"}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	case o.nodeName != "":
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: o.nodeName}
	}
	return pod
}

func createPod(ctx context.Context, o podOpts) *corev1.Pod {
	pod, err := kube.CoreV1().Pods(testNamespace).Create(ctx, newPod(o), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "creating pod %s", o.name)
	// Deleted however the spec ends: a pod a failed spec left burning CPU
	// would fail the specs after it too.
	DeferCleanup(func(ctx SpecContext) { deletePod(ctx, o.name) })
	return pod
}

func getPod(ctx context.Context, name string) *corev1.Pod {
	pod, err := kube.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return pod
}

// waitRunning waits until the pod's containers run and returns it.
func waitRunning(ctx context.Context, name string) *corev1.Pod {
	var pod *corev1.Pod
	Eventually(func(g Gomega) {
		c, cancel := ctxTimeout(ctx)
		defer cancel()
		p, err := kube.CoreV1().Pods(testNamespace).Get(c, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s: %s", name, describePod(p))
		pod = p
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return pod
}

func deletePod(ctx context.Context, name string) {
	zero := int64(0)
	_ = kube.CoreV1().Pods(testNamespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	Eventually(func() bool {
		_, err := kube.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
		return err != nil
	}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "pod %s not deleted", name)
}

func describePod(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s node %q", p.Status.Phase, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(&b, "; %s: %s", c.Type, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			fmt.Fprintf(&b, "; %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
	}
	return b.String()
}

// execIn runs a command in the pod's container and returns its stdout.
func execIn(ctx context.Context, pod string, cmd ...string) (string, error) {
	req := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(testNamespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("exec %v in %s: %w (stderr %q)", cmd, pod, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// allowedCPUs is the cpuset the kernel enforces on a process in the pod.
func allowedCPUs(ctx context.Context, pod string) (string, error) {
	return execIn(ctx, pod, "/usr/local/bin/sleeper", "cpus")
}

// koordletMetrics is the /metrics text of the koordlet on node, through the API server's pod proxy.
func koordletMetrics(ctx context.Context, node string) (string, error) {
	pods, err := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=koordlet", FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return "", err
	}
	if len(pods.Items) == 0 {
		return "", fmt.Errorf("no koordlet on %s", node)
	}
	b, err := kube.CoreV1().Pods(koordNS).ProxyGet("http", pods.Items[0].Name, "9316", "/metrics", nil).DoRaw(ctx)
	return string(b), err
}
