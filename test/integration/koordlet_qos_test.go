package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/koordlet/agent"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
	"github.com/koord-project/koord/pkg/slo/config"
)

// qosPod creates a running pod on node with one container "main" of the
// given requests and limits, and its v1 cgroupfs cgroups in the fixture tree
// with kubelet's values for them.
func qosPod(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, fixture fixtureNode, node, name, qos string, req, lim corev1.ResourceList) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{extension.LabelPodQoS: qos}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
	}
	pod, err := cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: "containerd://" + name + "-c", Ready: true}}
	if pod, err = cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	qosDir := "kubepods/burstable"
	if _, ok := req[corev1.ResourceCPU]; !ok {
		qosDir = "kubepods/besteffort"
	}
	podDir := filepath.Join(qosDir, "pod"+string(pod.UID))
	for _, d := range []string{podDir, filepath.Join(podDir, name+"-c")} {
		writeCgroup(t, fixture.cgroupRoot, d)
	}
	writeFiles(t, fixture.cgroupRoot, map[string]string{
		"memory/" + podDir + "/memory.usage_in_bytes": "1073741824", "memory/" + podDir + "/memory.stat": "total_inactive_file 0",
		"cpuacct/" + podDir + "/cpuacct.usage": "1000",
	})
	return pod
}

// qosNode starts a control plane with one 8-CPU node and writes its fixture
// machine (1 NUMA node × 4 cores × 2 threads, 16 GiB, half used) and
// kubelet's QoS cgroups.
func qosNode(t *testing.T, ctx context.Context, node string) (*controlplane.ControlPlane, fixtureNode, string) {
	t.Helper()
	cp := startControlPlane(t, controlplane.Options{})
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: node, CPU: "8", Memory: "32Gi"}); err != nil {
		t.Fatal(err)
	}
	fixture, sysfs := newFixtureNode(t, [4]int{1, 1, 4, 2}, 16<<30)
	for _, d := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		writeCgroup(t, fixture.cgroupRoot, d)
	}
	return cp, fixture, sysfs
}

// writeCgroup makes a fixture v1 cgroup of an 8-CPU node with the files
// the strategies touch, at the kernel's defaults.
func writeCgroup(t *testing.T, root, dir string) {
	t.Helper()
	cgrouptest.WriteCgroup(t, root, false, dir, "0-7")
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for f, content := range files {
		path := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func setNodeSLO(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, node, specJSON string) {
	t.Helper()
	slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := jsonInto(specJSON, &slo.Spec); err != nil {
		t.Fatal(err)
	}
	cur, err := cp.Koord.SloV1alpha1().NodeSLOs().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := cp.Koord.SloV1alpha1().NodeSLOs().Create(ctx, slo, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec = slo.Spec
	if _, err := cp.Koord.SloV1alpha1().NodeSLOs().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFileThat polls a fixture file until ok accepts its content.
func waitFileThat(t *testing.T, ctx context.Context, path, what string, ok func(string) bool) string {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(path)
		got = strings.TrimSpace(string(b))
		return err == nil && ok(got), nil
	})
	if err != nil {
		t.Fatalf("%s holds %q, want %s", path, got, what)
	}
	return got
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
	root := fixture.cgroupRoot
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	qosPod(t, ctx, cp, fixture, node, "web", "LS", corev1.ResourceList{corev1.ResourceCPU: q("1")}, corev1.ResourceList{corev1.ResourceCPU: q("2")})
	batch := qosPod(t, ctx, cp, fixture, node, "batch", "BE",
		corev1.ResourceList{extension.BatchCPU: q("1000"), extension.BatchMemory: q("1Gi")},
		corev1.ResourceList{extension.BatchCPU: q("2000"), extension.BatchMemory: q("2Gi")})
	batchDir := "kubepods/besteffort/pod" + string(batch.UID)
	file := func(f string) string { return filepath.Join(root, f) }
	stop := runKoordlet(t, ctx, cp, node, fixture, sysfs)
	defer func() { stop() }()

	t.Log("batch resources, with no NodeSLO at all (BatchResource is on by default)")
	waitFile(t, ctx, file("cpu/"+batchDir+"/cpu.shares"), "1024")
	waitFile(t, ctx, file("cpu/"+batchDir+"/cpu.cfs_quota_us"), "200000")
	waitFile(t, ctx, file("cpu/"+batchDir+"/batch-c/cpu.cfs_quota_us"), "200000")
	waitFile(t, ctx, file("memory/"+batchDir+"/memory.limit_in_bytes"), fmt.Sprint(2<<30))
	waitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "0-7")

	t.Log("the NodeSLO turns suppression on: 8 × 50 % − 5 busy leaves BE its floor of one CPU")
	fixture.simulateLoad(t, ctx, 5)
	setNodeSLO(t, ctx, cp, node, `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":50},
		"resourceQOSStrategy":{"beClass":{"cpuQOS":{"enable":true}}}}`)
	one := waitFileThat(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "one CPU", func(s string) bool { return cpusOf(s) == 1 })
	waitFile(t, ctx, file("cpuset/"+batchDir+"/batch-c/cpuset.cpus"), one)
	waitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.idle"), "1")
	waitFile(t, ctx, file("cpuset/kubepods/burstable/pod"+string(mustPod(t, ctx, cp, "web").UID)+"/web-c/cpuset.cpus"), "0-7")

	t.Log("the load falls to half a CPU: 8 × 50 % − 0.5 = 3.5, 3 whole CPUs, within two samples")
	fixture.simulateLoad(t, ctx, 0.5)
	three := waitFileThat(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "three CPUs", func(s string) bool { return cpusOf(s) == 3 })

	t.Log("a restarted koordlet converges to the same values")
	stop()
	writeFiles(t, root, map[string]string{"cpu/" + batchDir + "/cpu.shares": "2", "cpu/kubepods/besteffort/cpu.idle": "0"})
	stop = runKoordlet(t, ctx, cp, node, fixture, sysfs)
	waitFile(t, ctx, file("cpu/"+batchDir+"/cpu.shares"), "1024")
	waitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.idle"), "1")
	waitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), three)

	t.Log("cfsQuota policy: the quota instead of the cpuset")
	setNodeSLO(t, ctx, cp, node, `{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":50,"cpuSuppressPolicy":"cfsQuota"},
		"resourceQOSStrategy":{"beClass":{"cpuQOS":{"enable":true}}}}`)
	waitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "0-7")
	waitFileThat(t, ctx, file("cpu/kubepods/besteffort/cpu.cfs_quota_us"), "about 3 CPUs of quota", func(s string) bool {
		var v int64
		_, err := fmt.Sscan(s, &v)
		return err == nil && v >= 250000 && v <= 350000
	})
	// The pod's own quota (2 CPUs) is within it.
	waitFile(t, ctx, file("cpu/"+batchDir+"/cpu.cfs_quota_us"), "200000")

	t.Log("deleting the NodeSLO brings back the defaults")
	if err := cp.Koord.SloV1alpha1().NodeSLOs().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.cfs_quota_us"), "-1")
	waitFile(t, ctx, file("cpu/kubepods/besteffort/cpu.idle"), "0")
	waitFile(t, ctx, file("cpuset/kubepods/besteffort/cpuset.cpus"), "0-7")
	waitFile(t, ctx, file("cpu/"+batchDir+"/cpu.shares"), "1024")
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
	web := qosPod(t, ctx, cp, fixture, node, "web", "LS", corev1.ResourceList{corev1.ResourceCPU: q("1")}, nil)
	batch := qosPod(t, ctx, cp, fixture, node, "batch", "BE", corev1.ResourceList{extension.BatchMemory: q("1Gi")}, nil)
	gates := features.New()
	if err := gates.Set("BEMemoryEvict=true"); err != nil {
		t.Fatal(err)
	}
	stop := runKoordlet(t, ctx, cp, node, fixture, sysfs, func(o *agent.Options) { o.Gates = gates })
	defer stop()
	fixture.simulateLoad(t, ctx, 1)
	setNodeSLO(t, ctx, cp, node, `{"resourceUsedThresholdWithBE":{"enable":true,"memoryEvictThresholdPercent":40,"memoryEvictLowerPercent":30}}`)
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
	web := qosPod(t, ctx, cp, fixture, node, "web", "LS", corev1.ResourceList{corev1.ResourceCPU: q("1")}, nil)
	stop := runKoordlet(t, ctx, cp, node, fixture, sysfs)
	defer stop()
	webCPUs := filepath.Join(fixture.cgroupRoot, "cpuset/kubepods/burstable/pod"+string(web.UID)+"/web-c/cpuset.cpus")
	waitFile(t, ctx, webCPUs, "0-7")
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
	waitFile(t, ctx, webCPUs, "0-1,4-7")
	waitFile(t, ctx, filepath.Join(fixture.cgroupRoot, "cpuset/kubepods/besteffort/cpuset.cpus"), "0-1,4-7")
	r.Status.Phase = "Succeeded"
	if _, err := cp.Koord.SchedulingV1alpha1().Reservations().UpdateStatus(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFile(t, ctx, webCPUs, "0-7")
}
