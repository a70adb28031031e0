// Package e2e is Koord's end-to-end suite. It runs against any cluster
// ($KUBECONFIG) with Koord installed by its Helm chart and at least one real
// node running koordlet; `make e2e` builds such a cluster on this machine
// (hack/cluster), installs the chart and runs it. Specs that read the node's
// own files (/sys, cgroups) run only when the suite runs on that node.
//
// Environment:
//
//	KUBECONFIG           the cluster (required; without it the suite is skipped)
//	E2E_NAMESPACE        where Koord is installed (default koord-system)
//	E2E_IMAGE_PREFIX     prefix of the test workload images (default docker.io/koord/)
//	E2E_IMAGE_TAG        their tag (default dev)
//	E2E_PHASE            "uninstall" after `helm uninstall`: only the specs labelled
//	                     uninstall run, and check that nothing of Koord is left
package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/koord-project/koord/apis/extension"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	"github.com/koord-project/koord/pkg/client/koordclient"
)

// testNamespace holds every workload the suite creates; deleted at the end.
const testNamespace = "koord-e2e"

var (
	cfg         *rest.Config
	kube        kubernetes.Interface
	koord       koordclientset.Interface
	koordNS     = envOr("E2E_NAMESPACE", "koord-system")
	imagePrefix = envOr("E2E_IMAGE_PREFIX", "docker.io/koord/")
	imageTag    = envOr("E2E_IMAGE_TAG", "dev")
	// realNode is a node koordlet runs on (found in BeforeSuite).
	realNode  string
	uninstall = os.Getenv("E2E_PHASE") == "uninstall"
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestE2E(t *testing.T) {
	if os.Getenv("KUBECONFIG") == "" {
		t.Skip("KUBECONFIG is not set: the e2e suite needs a cluster with Koord installed (make e2e)")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Koord e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	cfg, err = clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	cfg.QPS, cfg.Burst = 50, 100
	kube, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	koord, err = koordclient.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	if uninstall {
		return // the release is gone; the uninstall specs need no workload namespace
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	_, err = kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	// The default ServiceAccount is created asynchronously by kube-controller-manager.
	Eventually(func() error {
		_, err := kube.CoreV1().ServiceAccounts(testNamespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	Eventually(func() string {
		pods, err := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=koordlet"})
		if err != nil || len(pods.Items) == 0 {
			return ""
		}
		return pods.Items[0].Spec.NodeName
	}).WithContext(ctx).WithTimeout(2*time.Minute).ShouldNot(BeEmpty(), "no koordlet pod has been placed on a node")
	pods, _ := kube.CoreV1().Pods(koordNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=koordlet"})
	realNode = pods.Items[0].Spec.NodeName
	GinkgoWriter.Printf("real node: %s\n", realNode)
	// The real node's usage is the whole machine's, the control plane and
	// the suite itself included, so LoadAwareScheduling's thresholds would
	// make its specs pass or fail with the machine's load, and a spec's
	// burner would keep the next spec's pods off it. Its thresholds are off
	// (0: not checked) while the suite runs; LoadAwareScheduling is checked
	// on kwok nodes whose NodeMetrics the suite writes.
	setNodeAnnotation(ctx, realNode, extension.AnnotationCustomUsageThresholds, `{"usageThresholds":{"cpu":0,"memory":0}}`)
}, NodeTimeout(3*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if kube == nil || uninstall {
		return
	}
	if realNode != "" {
		setNodeAnnotation(ctx, realNode, extension.AnnotationCustomUsageThresholds, "")
	}
	_ = kube.CoreV1().Namespaces().Delete(ctx, testNamespace, metav1.DeleteOptions{})
	Eventually(func() bool {
		_, err := kube.CoreV1().Namespaces().Get(ctx, testNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(BeTrue())
}, NodeTimeout(3*time.Minute))

// ctxTimeout is a short-lived context for one API call in a poll.
func ctxTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 10*time.Second)
}
