package security

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/koordlettest"
	"github.com/koord-project/koord/pkg/slo/config"
)

// A koordlet reports its running pod at -9e15 cores, and a pod that does
// not exist: koord-manager used to sell that as batch-cpu
// 9000000000000004200. Now a figure the node cannot have is no
// measurement: the pod counts at its request, and the offer is the honest
// one.
func TestImpossibleUsageIsNotSold(t *testing.T) {
	ctx := testContext(t)
	c := start(t, ctx)
	if _, err := c.Client.CoreV1().ConfigMaps("koord-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: config.ConfigMapName},
		Data: map[string]string{config.ColocationKey: `{"enable": true}`}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web, err := controlplane.MakePod(controlplane.PodSpec{Name: "web", CPU: "1", Memory: "1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	web.Spec.NodeName = "n1"
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, koord := koordletOn(t, ctx, c, "n1")
	nm, err := koord.SloV1alpha1().NodeMetrics().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	usage := func(cpu, mem string) slov1alpha1.ResourceMap {
		return slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
	}
	nm.Status = slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: time.Now()},
		NodeMetric: &slov1alpha1.NodeMetricInfo{NodeUsage: usage("1", "2Gi"), SystemUsage: usage("500m", "1Gi")},
		PodsMetric: []*slov1alpha1.PodMetricInfo{
			{Namespace: "default", Name: "web", PodUsage: usage("-9000000000000000", "1Gi")},
			{Namespace: "default", Name: "ghost", PodUsage: usage("100m", "-1Ei")},
		}}
	if _, err := koord.SloV1alpha1().NodeMetrics().UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("koordlet of n1 reporting: %v", err)
	}
	startManager(t, ctx, c.ControlPlane)
	// 8 cores × 60 % − system 0.5 − web at its 1-core request = 3.3 cores.
	// The ghost does not count: a pod the metric names but the API server
	// does not may be one just deleted, and counts at its usage as in
	// Koordinator, but not with figures (-1Ei of memory) no pod can have.
	var got string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		q, ok := n.Status.Allocatable[extension.BatchCPU]
		got = q.String()
		return ok, nil
	})
	if err != nil || got != "3300" {
		t.Errorf("n1 offers batch-cpu %q, want the honest 3300 (8 cores × 60 %% − 0.5 − 1)", got)
	}
}

// koordletNode is a koordlet on a fixture of an 8-CPU node and kubelet's
// cgroups, against a control plane without admission policies (as a
// cluster with them off, or older than 1.30): what koordlet does is
// koordlet's own defence.
func koordletNode(t *testing.T, ctx context.Context) (*controlplane.ControlPlane, koordlettest.Node, string) {
	t.Helper()
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "q1", CPU: "8", Memory: "16Gi"}); err != nil {
		t.Fatal(err)
	}
	fixture, sysfs := koordlettest.NewNode(t, [4]int{1, 1, 4, 2}, 16<<30)
	for _, d := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		koordlettest.WriteCgroup(t, fixture.CgroupRoot, d)
	}
	return cp, fixture, sysfs
}

func quantities(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// A pod labelled LS but on batch capacity (admitted while the rules were
// off) used to run with no batch limits: koordlet set them only for BE
// pods. It holds any pod that asks for batch resources to them. And a BE
// pod that asks for 1m of native CPU runs in kubelet's burstable cgroup,
// outside the besteffort quota of cfsQuota suppression: its own pod cgroup
// is held to its share now.
func TestKoordletHoldsBatchPodsWhereverTheyRun(t *testing.T) {
	ctx := testContext(t)
	cp, fixture, sysfs := koordletNode(t, ctx)
	root := fixture.CgroupRoot
	sneaky := koordlettest.QoSPod(t, ctx, cp, fixture, "q1", "sneaky", "LS",
		quantities("cpu", "100m", extension.BatchCPU, "2000"), quantities(extension.BatchCPU, "2000", extension.BatchMemory, "2Gi"))
	escaper := koordlettest.QoSPod(t, ctx, cp, fixture, "q1", "escaper", "BE", quantities("cpu", "1m", extension.BatchCPU, "1000"), nil)
	koordlettest.QoSPod(t, ctx, cp, fixture, "q1", "spark", "BE", quantities(extension.BatchCPU, "3000"), nil)
	stop := koordlettest.Run(t, ctx, cp, "q1", fixture, sysfs)
	t.Cleanup(stop)
	fixture.SimulateLoad(t, ctx, 0.5)
	file := func(dir, f string) string { return filepath.Join(root, dir, f) }
	sneakyDir := "kubepods/burstable/pod" + string(sneaky.UID)
	koordlettest.WaitFile(t, ctx, file("memory/"+sneakyDir, "memory.limit_in_bytes"), fmt.Sprint(2<<30))
	koordlettest.WaitFile(t, ctx, file("cpu/"+sneakyDir, "cpu.cfs_quota_us"), "200000")

	koordlettest.SetNodeSLO(t, ctx, cp, "q1", `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":50,"cpuSuppressPolicy":"cfsQuota"}}`)
	quota := func(dir string) int64 {
		v, _ := strconv.ParseInt(koordlettest.WaitFileThat(t, ctx, file("cpu/"+dir, "cpu.cfs_quota_us"), "a quota", func(s string) bool {
			v, err := strconv.ParseInt(s, 10, 64)
			return err == nil && v > 0
		}), 10, 64)
		return v
	}
	escaperDir := "kubepods/burstable/pod" + string(escaper.UID)
	// 8 × 50 % − 0.5 busy: about 3.5 cores for BE together, wherever they run.
	var sum int64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		sum = quota("kubepods/besteffort") + quota(escaperDir) + quota(sneakyDir)
		return sum <= 400000, nil
	})
	if err != nil {
		t.Errorf("BE quotas add up to %d µs a period (besteffort %d, escaper %d, sneaky %d), want within about 3.5 cores",
			sum, quota("kubepods/besteffort"), quota(escaperDir), quota(sneakyDir))
	}
}
