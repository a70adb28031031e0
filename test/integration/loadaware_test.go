package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// loadAwareOnlyConfig scores with LoadAwareScheduling alone, so that what a
// test sees comes from measured load and not from kube-scheduler's
// request-based scoring.
func loadAwareOnlyConfig(args string) []byte {
	return []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: koord-scheduler
    plugins:
      multiPoint:
        enabled: [{name: LoadAwareScheduling}]
      score:
        disabled: [{name: "*"}]
        enabled: [{name: LoadAwareScheduling, weight: 1}]
    pluginConfig:
      - name: LoadAwareScheduling
        args: ` + args + "\n")
}

func usage(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func createNodes(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: n, CPU: "32", Memory: "128Gi", Pods: "200"}); err != nil {
			t.Fatal(err)
		}
	}
}

// loadedNodes creates the nodes, each with a fresh NodeMetric at the given
// CPU usage and 16Gi of memory.
func loadedNodes(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, cpuByNode map[string]string) {
	t.Helper()
	now := time.Now()
	for node, cpu := range cpuByNode {
		createNodes(t, ctx, cp, node)
		if err := cp.ReportNodeMetric(ctx, node, usage(cpu, "16Gi"), now); err != nil {
			t.Fatal(err)
		}
	}
}

func createPods(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, prefix string, n int, cpu string) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: fmt.Sprintf("%s-%d", prefix, i), SchedulerName: "koord-scheduler", CPU: cpu, Memory: "256Mi"}); err != nil {
			t.Fatal(err)
		}
	}
}

// (a) A node reported at 90% CPU gets none of 30 pods; with the shipped config.
func TestLoadAwareAvoidsHotNode(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	loadedNodes(t, ctx, cp, map[string]string{"hot": "28800m", "cool-1": "3", "cool-2": "3"})
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	createPods(t, ctx, cp, "web", 30, "100m")
	if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
		t.Fatal(err)
	}
	counts, err := cp.PodsByNode(ctx, "koord-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if counts["hot"] != 0 || counts["cool-1"]+counts["cool-2"] != 30 {
		t.Errorf("placement %v: want all 30 pods on the cool nodes", counts)
	}
}

// Nodes turned away for their load are counted under one reason per
// resource in the pod's Unschedulable condition (and the FailedScheduling
// event), however much each is over: the reason carries no figures.
func TestLoadAwareRejectionsCountedTogether(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	loadedNodes(t, ctx, cp, map[string]string{"hot-1": "22", "hot-2": "25", "hot-3": "29"})
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	createPods(t, ctx, cp, "web", 1, "1")
	if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
		t.Fatal(err)
	}
	pod, err := cp.Client.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msg := controlplane.PodUnschedulableMessage(pod)
	if pod.Spec.NodeName != "" || !strings.Contains(msg, "0/3 nodes are available: 3 node(s) cpu usage over the load threshold.") {
		t.Fatalf("three nodes at 69, 78 and 91 percent: bound to %q, reason %q", pod.Spec.NodeName, msg)
	}
}

// (b) A burst onto two nodes, one slightly busier, within one report
// interval: without counting the pods just placed, all would pile onto the
// cooler node; with the estimate they split about evenly.
func TestLoadAwareBurstSplits(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	loadedNodes(t, ctx, cp, map[string]string{"a": "3", "b": "4"})
	startScheduler(t, ctx, cp, loadAwareOnlyConfig("{}"))
	createPods(t, ctx, cp, "burst", 20, "1")
	if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
		t.Fatal(err)
	}
	counts, err := cp.PodsByNode(ctx, "koord-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if counts["a"]+counts["b"] != 20 || counts["a"] < 8 || counts["b"] < 8 {
		t.Errorf("placement %v: want the 20 pods split about evenly", counts)
	}
}

// (c) A stale metric blocks its node; a fresh one makes it usable again.
func TestLoadAwareStaleThenFresh(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	createNodes(t, ctx, cp, "only")
	if err := cp.ReportNodeMetric(ctx, "only", usage("1", "1Gi"), time.Now().Add(-10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	createPods(t, ctx, cp, "p", 1, "100m")
	if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
		t.Fatal(err)
	}
	pod, err := cp.Client.CoreV1().Pods("default").Get(ctx, "p-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "" || !strings.Contains(controlplane.PodUnschedulableMessage(pod), "1 node(s) with an expired node metric") {
		t.Fatalf("stale node: bound to %q, reason %q", pod.Spec.NodeName, controlplane.PodUnschedulableMessage(pod))
	}
	if err := cp.ReportNodeMetric(ctx, "only", usage("1", "1Gi"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "p-0", time.Minute); err != nil {
		t.Fatalf("node still blocked after a fresh metric: %v", err)
	}
}

// (d) MostUsed packs onto the busier node.
func TestLoadAwareMostUsedPacks(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	createNodes(t, ctx, cp, "busy", "idle")
	now := time.Now()
	if err := cp.ReportNodeMetric(ctx, "busy", usage("12", "40Gi"), now); err != nil {
		t.Fatal(err)
	}
	if err := cp.ReportNodeMetric(ctx, "idle", usage("2", "8Gi"), now); err != nil {
		t.Fatal(err)
	}
	startScheduler(t, ctx, cp, loadAwareOnlyConfig("{scoringStrategy: MostUsed}"))
	createPods(t, ctx, cp, "pack", 10, "500m")
	if err := cp.WaitForDecisions(ctx, "koord-scheduler", time.Minute); err != nil {
		t.Fatal(err)
	}
	counts, err := cp.PodsByNode(ctx, "koord-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if counts["busy"] != 10 {
		t.Errorf("placement %v: MostUsed should pack all 10 onto the busy node", counts)
	}
}

// Preemption where the load is: a node whose measured usage keeps a prod
// pod out (87% of its CPU, threshold 65%) has a priority-0 pod using 3 of
// its 4 cores. The prod pod fits by requests, so only the load stops it;
// preemption must see that without that pod the node is at 34%, preempt
// it, and the prod pod binds once koordlet reports the node cool.
func TestLoadAwarePreemptsWhereTheLoadIs(t *testing.T) {
	ctx := testContext(t)
	cp := startQuotaControlPlane(t, ctx) // PriorityClasses, and deletions finished
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "hot", CPU: "4", Memory: "16Gi"}); err != nil {
		t.Fatal(err)
	}
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "hog", SchedulerName: "koord-scheduler", CPU: "1", Memory: "256Mi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "hog", time.Minute); err != nil {
		t.Fatal(err)
	}
	hogUsage := &slov1alpha1.PodMetricInfo{Namespace: "default", Name: "hog", PodUsage: slov1alpha1.ResourceMap{ResourceList: usage("3", "1Gi")}}
	if err := cp.ReportNodeMetric(ctx, "hot", usage("3500m", "2Gi"), time.Now(), hogUsage); err != nil {
		t.Fatal(err)
	}
	// The prod pod is turned away by load, not by requests (2 of 4 cores).
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "web", SchedulerName: "koord-scheduler", CPU: "1", Memory: "256Mi",
		PriorityClassName: string(extension.PriorityProd)}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().Pods("default").Get(ctx, "hog", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the hog was not preempted; web: %s", pendingMessages(ctx, cp, "default"))
	}
	// koordlet's next report: the hog's load is gone.
	if err := cp.ReportNodeMetric(ctx, "hot", usage("500m", "1Gi"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "web", time.Minute); err != nil {
		t.Fatalf("web: %v; %s", err, pendingMessages(ctx, cp, "default"))
	}
}
