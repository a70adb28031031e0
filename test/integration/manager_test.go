package integration

import (
	"context"
	"fmt"
	"os/exec"
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
	"k8s.io/client-go/util/retry"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/slo/config"
)

func setSLOConfig(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, data map[string]string) {
	t.Helper()
	cms := cp.Client.CoreV1().ConfigMaps("koord-system")
	cm, err := cms.Get(ctx, config.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: config.ConfigMapName}, Data: data}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	cm.Data = data
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitBatch waits until the node advertises cpu milli-cores of batch-cpu and,
// when mem >= 0, mem bytes of batch-memory; cpu < 0 waits for their removal.
func waitBatch(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, node string, cpu, mem int64) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c, okC := n.Status.Allocatable[extension.BatchCPU]
		m, okM := n.Status.Allocatable[extension.BatchMemory]
		last = fmt.Sprintf("batch-cpu %v (%v) batch-memory %v (%v)", c.String(), okC, m.String(), okM)
		if cpu < 0 {
			return !okC && !okM, nil
		}
		cap := n.Status.Capacity[extension.BatchCPU]
		return okC && c.Value() == cpu && cap.Value() == cpu && (mem < 0 || m.Value() == mem), nil
	})
	if err != nil {
		t.Fatalf("node %s: want batch-cpu %d batch-memory %d, last seen %s", node, cpu, mem, last)
	}
}

// koord-manager against a real API server: batch resources from measured
// slack, following the ConfigMap, keeping the last good configuration when an
// operator writes a bad one, degrading on a stale NodeMetric; a NodeSLO and a
// NodeMetric spec per node.
func TestManagerBatchResources(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "koord-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setSLOConfig(t, ctx, cp, map[string]string{config.ColocationKey: `{"enable": true}`})
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "m1", CPU: "10", Memory: "100Gi"}); err != nil {
		t.Fatal(err)
	}
	pod, err := controlplane.MakePod(controlplane.PodSpec{Name: "web", CPU: "4", Memory: "20Gi"})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeName = "m1"
	if _, err := cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := &slov1alpha1.PodMetricInfo{Namespace: "default", Name: "web", PodUsage: slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("10Gi")}}}
	nodeUsage := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("20Gi")}
	if err := cp.ReportNodeMetric(ctx, "m1", nodeUsage, time.Now(), web); err != nil {
		t.Fatal(err)
	}

	restart := startManager(t, ctx, cp, 0)

	// cpu: 10 cores × 60 % − system (3 − 1 = 2 cores) − web's usage 1 core = 3 cores;
	// memory: 100Gi × 65 % − system 10Gi − web 10Gi = 45Gi. web is measured, so its
	// 4-core request does not count.
	waitBatch(t, ctx, cp, "m1", 3000, 45<<30)

	// A Koordinator koordlet's report carries fields Koord does not act on
	// (prodPeakMetric): reported once, as an Event on the NodeMetric.
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "m2", CPU: "4", Memory: "8Gi"}); err != nil {
		t.Fatal(err)
	}
	err = retry.OnError(retry.DefaultRetry, func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }, func() error {
		nms := cp.Koord.SloV1alpha1().NodeMetrics()
		nm, err := nms.Get(ctx, "m2", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			nm, err = nms.Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "m2"}}, metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		nm.Status = slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: time.Now()},
			NodeMetric:     &slov1alpha1.NodeMetricInfo{NodeUsage: slov1alpha1.ResourceMap{ResourceList: nodeUsage}},
			ProdPeakMetric: &slov1alpha1.PeakMetric{Resource: slov1alpha1.ResourceMap{ResourceList: nodeUsage}}}
		_, err = nms.UpdateStatus(ctx, nm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitEventIn(t, ctx, cp, "default", "UnsupportedField", "NodeMetric sets status.prodPeakMetric")

	nm, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "m1", metav1.GetOptions{})
	if err != nil || nm.Spec.CollectPolicy == nil || *nm.Spec.CollectPolicy.ReportIntervalSeconds != 60 {
		t.Errorf("NodeMetric spec not set from the colocation config: %+v, %v", nm, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		slo, err := cp.Koord.SloV1alpha1().NodeSLOs().Get(ctx, "m1", metav1.GetOptions{})
		return err == nil && slo.Spec.ResourceUsedThresholdWithBE != nil && *slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent == 65, nil
	})
	if err != nil {
		t.Errorf("no NodeSLO with the default strategy for m1: %v", err)
	}

	// The operator raises the reclaim threshold: 10 × 80 % − 2 − 1 = 5 cores.
	setSLOConfig(t, ctx, cp, map[string]string{config.ColocationKey: `{"enable": true, "cpuReclaimThresholdPercent": 80}`})
	waitBatch(t, ctx, cp, "m1", 5000, -1)

	// An invalid value: reported on the ConfigMap, and the node keeps what it had.
	setSLOConfig(t, ctx, cp, map[string]string{config.ColocationKey: `{"enable": true, "cpuReclaimThresholdPercent": -5}`})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cp.Client.CoreV1().Events("koord-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == "InvalidConfig" && strings.Contains(e.Message, "key colocation-config") && strings.Contains(e.Message, "cpuReclaimThresholdPercent must not be negative") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no InvalidConfig event naming the key: %v", err)
	}
	waitBatch(t, ctx, cp, "m1", 5000, -1)

	// koord-manager restarts with the typo still there: it acts on the last
	// configuration it accepted (kept in slo-controller-config-last-good),
	// not on the defaults, which turn co-location off and would strip the
	// node's batch resources.
	restart()
	if _, err := cp.Client.CoreV1().ConfigMaps("koord-system").Get(ctx, config.LastGoodName(config.ConfigMapName), metav1.GetOptions{}); err != nil {
		t.Fatalf("the last good configuration was not kept: %v", err)
	}
	for range 30 { // 3 s of reconciles after the restart
		waitBatch(t, ctx, cp, "m1", 5000, -1)
		time.Sleep(100 * time.Millisecond)
	}

	// koordlet stops reporting: after degradeTimeMinutes the node offers nothing.
	if err := cp.ReportNodeMetric(ctx, "m1", nodeUsage, time.Now().Add(-20*time.Minute), web); err != nil {
		t.Fatal(err)
	}
	waitBatch(t, ctx, cp, "m1", 0, 0)
	if err := cp.ReportNodeMetric(ctx, "m1", nodeUsage, time.Now(), web); err != nil {
		t.Fatal(err)
	}
	// Reporting again restores it, under the last good configuration (80 %).
	waitBatch(t, ctx, cp, "m1", 5000, 45<<30)

	// Koordinator's nodeConfigs pick m1 by its labels (95 %: 10 × 95 % −
	// 2 − 1 = 6.5 cores, a move above resourceDiffThreshold); a misspelt field is reported as unknown, and the
	// rest of the ConfigMap still takes effect; Koordinator's own fields
	// Koord keeps without acting on them are reported as such.
	setSLOConfig(t, ctx, cp, map[string]string{config.ColocationKey: `{"enable": true, "cpuReclaimThresholdPercent": 80, "enabeld": true,
		"nodeConfigs": [{"name": "m1", "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": "m1"}}, "cpuReclaimThresholdPercent": 95}]}`,
		"host-application-config": `{"applications": []}`})
	waitBatch(t, ctx, cp, "m1", 6500, 45<<30)
	waitEvent(t, ctx, cp, "UnknownField", `colocation-config: unknown field "enabeld"`)
	waitEvent(t, ctx, cp, "UnsupportedField", "host-application-config")
	if n, err := cp.Client.CoreV1().Nodes().Get(ctx, "m1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if _, ok := n.Status.Allocatable[extension.MidCPU]; !ok {
		t.Errorf("no %s on the node: %v", extension.MidCPU, n.Status.Allocatable)
	}

	// Colocation off: the batch resources are removed, not left stale.
	setSLOConfig(t, ctx, cp, map[string]string{config.ColocationKey: `{"enable": false}`})
	waitBatch(t, ctx, cp, "m1", -1, -1)
}

// bin/koord-manager with the shipped RBAC under Node,RBAC authorization: it
// takes the lease, publishes batch resources, exits cleanly on SIGTERM; and
// its uninstall mode deletes exactly the numa-info ConfigMaps koordlet owns.
func TestManagerBinaryWithShippedRBAC(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{RBAC: true})
	kubeconfig := serviceAccountKubeconfig(t, ctx, cp, "koord-manager")
	setSLOConfig(t, ctx, cp, map[string]string{config.ColocationKey: `{"enable": true}`})
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "mb-1", CPU: "8", Memory: "32Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := cp.ReportNodeMetric(ctx, "mb-1", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	port, health := freePort(t), freePort(t)
	cmd := exec.Command(commandBinary(t, "koord-manager", "KOORD_MANAGER_BIN"), "--kubeconfig="+kubeconfig, "--namespace=koord-system",
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", port), fmt.Sprintf("--health-addr=127.0.0.1:%d", health), fmt.Sprintf("--webhook-port=%d", freePort(t)),
		"--feature-gates=ResourceRecommender=true", "-v=2")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("koord-manager output:\n%s", out.String())
		}
	})
	// 8 × 60 % − 1 core of system = 3.8 cores.
	waitBatch(t, ctx, cp, "mb-1", 3800, -1)
	// The recommender, with the shipped RBAC: a profile makes a
	// Recommendation for a Deployment, whose status the recommender writes.
	if _, err := cp.Client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Koord.AnalysisV1alpha1().RecommendationProfiles().Create(ctx, &analysisv1alpha1.RecommendationProfile{ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Spec: analysisv1alpha1.RecommendationProfileSpec{ControllerKinds: []string{"Deployment"}, EnabledNamespaces: []string{"default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRecommendation(t, ctx, cp, "default", "deployment-api", "got a status from the binary", func(r *analysisv1alpha1.Recommendation) bool {
		c := meta.FindStatusCondition(r.Status.Conditions, analysisv1alpha1.RecommendationConditionReady)
		return c != nil && c.Reason == "NoSamples"
	})
	if _, err := cp.Client.CoordinationV1().Leases("koord-system").Get(ctx, "koord-manager", metav1.GetOptions{}); err != nil {
		t.Errorf("no koord-manager lease: %v", err)
	}
	if strings.Contains(out.String(), "forbidden") {
		t.Errorf("the shipped RBAC is missing a permission:\n%s", grepLines(out.String(), "forbidden"))
	}
	exitsOnSIGTERM(t, "koord-manager", cmd, exited)

	// Uninstall: koordlet's ConfigMap goes, a look-alike someone else wrote stays.
	if err := cp.PublishNUMAInfo(ctx, "mb-1", topologytest.Linux(1, 1, 2, 2, 4<<30)); err != nil {
		t.Fatal(err)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "other-numa-info"}}
	if _, err := cp.Client.CoreV1().ConfigMaps("kube-system").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: "koordlet"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "koordlet"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "koordlet"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "koordlet", Image: "koord/koordlet:dev"}}},
			},
		},
	}
	if _, err := cp.Client.AppsV1().DaemonSets("koord-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cleanupKubeconfig := serviceAccountKubeconfig(t, ctx, cp, "koord-cleanup")
	outb, err := exec.CommandContext(ctx, commandBinary(t, "koord-manager", "KOORD_MANAGER_BIN"), "--kubeconfig="+cleanupKubeconfig,
		"--cleanup-numa-info", "--koordlet-daemonset=koord-system/koordlet").CombinedOutput()
	if err != nil {
		t.Fatalf("--cleanup-numa-info: %v\n%s", err, outb)
	}
	if _, err := cp.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "mb-1-numa-info", metav1.GetOptions{}); err == nil {
		t.Error("koordlet's numa-info ConfigMap survived the cleanup")
	}
	if _, err := cp.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "other-numa-info", metav1.GetOptions{}); err != nil {
		t.Errorf("a ConfigMap koordlet does not manage was deleted: %v", err)
	}
	got, err := cp.Client.AppsV1().DaemonSets("koord-system").Get(ctx, "koordlet", metav1.GetOptions{})
	if err == nil && got.DeletionTimestamp == nil {
		t.Error("the koordlet DaemonSet was not deleted before its ConfigMaps")
	}
}

// waitEvent waits for an Event in koord-system with the reason and a message containing text.
func waitEvent(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, reason, text string) {
	t.Helper()
	waitEventIn(t, ctx, cp, "koord-system", reason, text)
}

// waitEventIn waits for an Event in namespace with the reason and a message containing text.
func waitEventIn(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, namespace, reason, text string) {
	t.Helper()
	var last []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cp.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		last = last[:0]
		for _, e := range evs.Items {
			last = append(last, e.Reason+": "+e.Message)
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no %s event containing %q; events: %v", reason, text, last)
	}
}
