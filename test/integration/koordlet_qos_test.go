package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/koordlettest"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/koordlet/agent"
	"github.com/koord-project/koord/pkg/slo/config"
)

// qosNode starts a control plane with one 8-CPU node and writes its fixture
// machine (1 NUMA node × 4 cores × 2 threads, 16 GiB, half used) and
// kubelet's QoS cgroups.
func qosNode(t *testing.T, ctx context.Context, node string) (*controlplane.ControlPlane, fixtureNode, string) {
	t.Helper()
	cp := startControlPlane(t, controlplane.Options{})
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: node, CPU: "8", Memory: "32Gi"}); err != nil {
		t.Fatal(err)
	}
	fixture, sysfs := koordlettest.NewNode(t, [4]int{1, 1, 4, 2}, 16<<30)
	for _, d := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		koordlettest.WriteCgroup(t, fixture.CgroupRoot, d)
	}
	return cp, fixture, sysfs
}

func cpusOf(s string) int {
	c, err := cpuset.Parse(s)
	if err != nil {
		return -1
	}
	return c.Size()
}

// koordlet on fixture trees against a real API server enforces its node's
// NodeSLO: batch resources in the BE pod's cgroups, the besteffort cgroup's
// CPUs shrinking with the node's load and growing back, the idle class,
// cfsQuota suppression; a restart converges to the same values; deleting
// the NodeSLO brings back the defaults.
func TestKoordletEnforcesNodeSLO(t *testing.T) {
	ctx := testContext(t)
	const node = "qos-node"
	cp, fixture, sysfs := qosNode(t, ctx, node)
	root := fixture.CgroupRoot
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	koordlettest.QoSPod(t, ctx, cp, fixture, node, "web", "LS", corev1.ResourceList{corev1.ResourceCPU: q("1")}, corev1.ResourceList{corev1.ResourceCPU: q("2")})
	batch := koordlettest.QoSPod(t, ctx, cp, fixture, node, "batch", "BE",
		corev1.ResourceList{extension.BatchCPU: q("1000"), extension.BatchMemory: q("1Gi")},
		corev1.ResourceList{extension.BatchCPU: q("2000"), extension.BatchMemory: q("2Gi")})
	batchDir := "kubepods/besteffort/pod" + string(batch.UID)
	file := func(f string) string { return filepath.Join(root, f) }
	stop := koordlettest.Run(t, ctx, cp, node, fixture, sysfs)
	defer func() { stop() }()

	t.Log("batch resources, with no NodeSLO at all (BatchResource is on by default)")
	koordlettest.WaitFile(t, ctx, file("cpu/"+batchDir+"/cpu.shares"), "1024")
	koordlettest.WaitFile(t, ctx, file("cpu/"+batchDir+"/cpu.cfs_quota_us"), "200000")
	koordlettest.WaitFile(t, ctx, file("cpu/"+batchDir+"/batch-c/cpu.cfs_quota_us"), "200000")
	koordlettest.WaitFile(t, ctx, file("memory/"+batchDir+"/memory.limit_in_bytes"), fmt.Sprint(2<<30))
	koordlettest.WaitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "0-7")

	t.Log("the NodeSLO turns suppression on: 8 × 50 % − 5 busy leaves BE its floor of one CPU")
	fixture.SimulateLoad(t, ctx, 5)
	koordlettest.SetNodeSLO(t, ctx, cp, node, `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":50},
		"resourceQOSStrategy":{"beClass":{"cpuQOS":{"enable":true}}}}`)
	one := koordlettest.WaitFileThat(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "one CPU", func(s string) bool { return cpusOf(s) == 1 })
	koordlettest.WaitFile(t, ctx, file("cpuset/"+batchDir+"/batch-c/cpuset.cpus"), one)
	koordlettest.WaitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.idle"), "1")
	koordlettest.WaitFile(t, ctx, file("cpuset/kubepods/burstable/pod"+string(mustPod(t, ctx, cp, "web").UID)+"/web-c/cpuset.cpus"), "0-7")

	t.Log("the load falls to half a CPU: 8 × 50 % − 0.5 = 3.5, 3 whole CPUs, within two samples")
	fixture.SimulateLoad(t, ctx, 0.5)
	three := koordlettest.WaitFileThat(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "three CPUs", func(s string) bool { return cpusOf(s) == 3 })

	t.Log("a restarted koordlet converges to the same values")
	stop()
	koordlettest.WriteFiles(t, root, map[string]string{"cpu/" + batchDir + "/cpu.shares": "2", "cpu/kubepods/besteffort/cpu.idle": "0"})
	stop = koordlettest.Run(t, ctx, cp, node, fixture, sysfs)
	koordlettest.WaitFile(t, ctx, file("cpu/"+batchDir+"/cpu.shares"), "1024")
	koordlettest.WaitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.idle"), "1")
	koordlettest.WaitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), three)

	t.Log("cfsQuota policy: the quota instead of the cpuset")
	koordlettest.SetNodeSLO(t, ctx, cp, node, `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":50,"cpuSuppressPolicy":"cfsQuota"},
		"resourceQOSStrategy":{"beClass":{"cpuQOS":{"enable":true}}}}`)
	koordlettest.WaitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "0-7")
	koordlettest.WaitFileThat(t, ctx, file("cpu/kubepods/besteffort/cpu.cfs_quota_us"), "about 3 CPUs of quota", func(s string) bool {
		var v int64
		_, err := fmt.Sscan(s, &v)
		return err == nil && v >= 250000 && v <= 350000
	})
	// The pod's own quota (2 CPUs) is within it.
	koordlettest.WaitFile(t, ctx, file("cpu/"+batchDir+"/cpu.cfs_quota_us"), "200000")

	t.Log("deleting the NodeSLO brings back the defaults")
	if err := cp.Koord.SloV1alpha1().NodeSLOs().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	koordlettest.WaitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.cfs_quota_us"), "-1")
	koordlettest.WaitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.idle"), "0")
	koordlettest.WaitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "0-7")
	koordlettest.WaitFile(t, ctx, file("cpu/"+batchDir+"/cpu.shares"), "1024")
}

func mustPod(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name string) *corev1.Pod {
	t.Helper()
	p, err := cp.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The node is at half its memory (the fixture's meminfo): past a 40 %
// threshold koordlet evicts the BE pod through the Eviction API with an
// Event, and leaves the LS pod alone.
func TestKoordletEvictsBEForMemory(t *testing.T) {
	ctx := testContext(t)
	const node = "mem-node"
	cp, fixture, sysfs := qosNode(t, ctx, node)
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	web := koordlettest.QoSPod(t, ctx, cp, fixture, node, "web", "LS", corev1.ResourceList{corev1.ResourceCPU: q("1")}, nil)
	batch := koordlettest.QoSPod(t, ctx, cp, fixture, node, "batch", "BE", corev1.ResourceList{extension.BatchMemory: q("1Gi")}, nil)
	gates := features.New()
	if err := gates.Set("BEMemoryEvict=true"); err != nil {
		t.Fatal(err)
	}
	stop := koordlettest.Run(t, ctx, cp, node, fixture, sysfs, func(o *agent.Options) { o.Gates = gates })
	defer stop()
	fixture.SimulateLoad(t, ctx, 1)
	koordlettest.SetNodeSLO(t, ctx, cp, node, `{"resourceUsedThresholdWithBE":{"enable":true,"memoryEvictThresholdPercent":40,"memoryEvictLowerPercent":30}}`)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods("default").Get(ctx, "batch", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil && p.UID == batch.UID), nil
	})
	if err != nil {
		t.Fatal("the BE pod was not evicted")
	}
	// Events are sent after the eviction, in the background.
	var msgs []string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cp.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=batch"})
		if err != nil {
			return false, nil
		}
		msgs = msgs[:0]
		for _, e := range evs.Items {
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
		return strings.Contains(strings.Join(msgs, "\n"), "BEMemoryEvict"), nil
	})
	if err != nil {
		t.Errorf("events of the evicted pod %q, want one naming BEMemoryEvict", msgs)
	}
	if p := mustPod(t, ctx, cp, "web"); p.DeletionTimestamp != nil || p.UID != web.UID {
		t.Error("the LS pod was touched")
	}
}

// koord-manager's nodeStrategies: two nodes with different labels get
// different NodeSLOs, and relabelling a node moves it to the other strategy.
func TestManagerNodeStrategies(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	for name, pool := range map[string]string{"ns-a": "online", "ns-b": "batch"} {
		n, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: name, CPU: "8", Memory: "32Gi"})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels["pool"] = pool
		if _, err := cp.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startManager(t, ctx, cp, time.Hour)
	setSLOConfig(t, ctx, cp, map[string]string{
		config.ResourceThresholdKey: `{"clusterStrategy":{"enable":true,"cpuSuppressThresholdPercent":65},
			"nodeStrategies":[{"name":"batch-pool","nodeSelector":{"matchLabels":{"pool":"batch"}},"cpuSuppressThresholdPercent":85}]}`,
		config.InterferenceGuardKey: `{"clusterStrategy":{"enable":true},"nodeStrategies":[{"nodeSelector":{"matchLabels":{"pool":"batch"}},"enable":false}]}`,
	})
	waitThreshold := func(node string, want int64, guard bool) {
		t.Helper()
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			slo, err := cp.Koord.SloV1alpha1().NodeSLOs().Get(ctx, node, metav1.GetOptions{})
			if err != nil || slo.Spec.ResourceUsedThresholdWithBE == nil || slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent == nil {
				return false, nil
			}
			g, err := slo.Spec.GetInterferenceGuard()
			if err != nil || g == nil {
				return false, err
			}
			got := *slo.Spec.ResourceUsedThresholdWithBE.CPUSuppressThresholdPercent
			last = fmt.Sprintf("threshold %d, guard %v", got, *g.Enable)
			return got == want && *g.Enable == guard, nil
		})
		if err != nil {
			t.Fatalf("NodeSLO %s: %s, want threshold %d, guard %v", node, last, want, guard)
		}
	}
	waitThreshold("ns-a", 65, true)
	waitThreshold("ns-b", 85, false)
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, "ns-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["pool"] = "batch"
	if _, err := cp.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitThreshold("ns-a", 85, false)
}

func jsonInto(doc string, into any) error { return json.Unmarshal([]byte(doc), into) }

// CPUs an Available reservation on the node pins leave the shared pool, as a
// bound pod's do: LS and BE pods are kept off them before any owner runs.
func TestKoordletFencesReservedCPUs(t *testing.T) {
	ctx := testContext(t)
	const node = "fence-node"
	cp, fixture, sysfs := qosNode(t, ctx, node)
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	web := koordlettest.QoSPod(t, ctx, cp, fixture, node, "web", "LS", corev1.ResourceList{corev1.ResourceCPU: q("1")}, nil)
	stop := koordlettest.Run(t, ctx, cp, node, fixture, sysfs)
	defer stop()
	webCPUs := filepath.Join(fixture.CgroupRoot, "cpuset/kubepods/burstable/pod"+string(web.UID)+"/web-c/cpuset.cpus")
	koordlettest.WaitFile(t, ctx, webCPUs, "0-7")
	r := newReservation("db-failover", "2", ownersByLabel("app", "db"))
	r.Annotations = map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"2-3"}`}
	r, err := cp.Koord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Status.Phase, r.Status.NodeName = "Available", node
	if r, err = cp.Koord.SchedulingV1alpha1().Reservations().UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	koordlettest.WaitFile(t, ctx, webCPUs, "0-1,4-7")
	koordlettest.WaitFile(t, ctx, filepath.Join(fixture.CgroupRoot, "cpuset/kubepods/besteffort/cpuset.cpus"), "0-1,4-7")
	r.Status.Phase = "Succeeded"
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	koordlettest.WaitFile(t, ctx, webCPUs, "0-7")
}
