package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	nrtclientset "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/koordlettest"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/client/koordclient"
	"github.com/koord-project/koord/pkg/koordlet/agent"
	"github.com/koord-project/koord/pkg/plugins/numaresource"
)

// fixtureNode is where a koordlet under test reads its node from.
type fixtureNode = koordlettest.Node

// startKoordlet runs a koordlet for node in this process, reading a fixture
// machine of the given shape, until the test ends. Pod cgroups are to be
// made under the fixture cgroup root (v1, cgroupfs driver).
func startKoordlet(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, node string, shape [4]int, memPerNUMA int64, mutate ...func(*agent.Options)) fixtureNode {
	t.Helper()
	fixture, sysfs := koordlettest.NewNode(t, shape, memPerNUMA)
	stop := koordlettest.Run(t, ctx, cp, node, fixture, sysfs, mutate...)
	t.Cleanup(stop)
	// A machine's /proc/stat moves: idle until the test says otherwise, so
	// that koordlet reports its NodeMetric (one never reported keeps the
	// node out of LoadAwareScheduling, as in Koordinator).
	fixture.SimulateLoad(t, ctx, 0)
	return fixture
}

// runContainer gives a bound pod a running container, as kubelet and the
// runtime would: the pod's status, and its pod and container cgroups (v1,
// cgroupfs) with every CPU. It returns the container's cpuset.cpus file.
func runContainer(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, cgroupRoot, name string, guaranteed bool) string {
	t.Helper()
	pod, err := cp.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: "containerd://" + name + "-c", Ready: true}}
	if _, err := cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(cgroupRoot, "cpuset/kubepods/burstable", "pod"+string(pod.UID))
	if guaranteed {
		podDir = filepath.Join(cgroupRoot, "cpuset/kubepods", "pod"+string(pod.UID))
	}
	for _, d := range []string{podDir, filepath.Join(podDir, name+"-c")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cpuset.cpus"), []byte("0-31\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(podDir, name+"-c", "cpuset.cpus")
}

func getNUMAInfo(ctx context.Context, cp *controlplane.ControlPlane, node string) (*corev1.ConfigMap, error) {
	return cp.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, extension.NUMAInfoConfigMapName(node), metav1.GetOptions{})
}

func waitNUMAInfo(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, node string, ok func(*extension.NUMAInfo) bool) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if cm, err = getNUMAInfo(ctx, cp, node); err != nil {
			return false, nil
		}
		info, err := extension.ParseNUMAInfo(cm)
		if err != nil {
			return false, err
		}
		return ok == nil || ok(info), nil
	})
	if err != nil {
		t.Fatalf("numa-info of %s: %v", node, err)
	}
	return cm
}

// koordlet reads a (fixture) 2 NUMA × 8 cores × 2 threads machine and
// publishes kube-system/<node>-numa-info as DESIGN.md says; koord-scheduler
// binds LSR pods from it; koordlet then shows their CPUs out of the shared
// pools, writes nothing while nothing changes, and re-creates the ConfigMap
// when it is deleted.
func TestKoordletPublishesTopologyTheSchedulerUses(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	node, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "kl-1", CPU: "32", Memory: "64Gi"})
	if err != nil {
		t.Fatal(err)
	}
	fixture := startKoordlet(t, ctx, cp, "kl-1", [4]int{1, 2, 8, 2}, 32<<30)
	cgroupRoot := fixture.CgroupRoot

	cm := waitNUMAInfo(t, ctx, cp, "kl-1", nil)
	if cm.Labels[extension.LabelManagedBy] != "koordlet" || cm.Labels[extension.LabelTopologyNode] != "kl-1" {
		t.Errorf("labels %v", cm.Labels)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "Node" || cm.OwnerReferences[0].UID != node.UID {
		t.Errorf("owner references %v, want the Node %s", cm.OwnerReferences, node.UID)
	}
	info, _ := extension.ParseNUMAInfo(cm)
	want := topologytest.Linux(1, 2, 8, 2, 32<<30)
	if len(info.CPUTopology.Detail) != 32 || len(info.NUMANodes) != 2 || info.NUMANodes[1].CPUs != want.NUMANodes[1].CPUs || info.NUMANodes[1].MemoryBytes != 32<<30 {
		t.Errorf("published %d CPUs, NUMA nodes %+v", len(info.CPUTopology.Detail), info.NUMANodes)
	}

	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	var names []string
	for i := 0; i < 4; i++ {
		names = append(names, fmt.Sprintf("lsr-%d", i))
		if _, err := cp.CreatePod(ctx, lsrPod(names[i], "2", nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitBound(t, ctx, cp, names...)
	topo, err := numaresource.NewTopology(want.CPUTopology)
	if err != nil {
		t.Fatal(err)
	}
	bound := checkCPUs(t, ctx, cp, map[string]*numaresource.Topology{"kl-1": topo}, true)["kl-1"]

	// The shared pools no longer offer the bound CPUs.
	cm = waitNUMAInfo(t, ctx, cp, "kl-1", func(info *extension.NUMAInfo) bool {
		shared := cpuset.New()
		for _, p := range info.CPUSharedPools {
			s, _ := cpuset.Parse(p.CPUSet)
			shared = shared.Union(s)
		}
		return shared.Size() == 32-bound.Size() && shared.Intersection(bound).IsEmpty()
	})

	// koordlet pins the LSR pod's container to its CPUs and a shared pod's
	// to every CPU no pod holds.
	lsr0, err := cp.Client.CoreV1().Pods("default").Get(ctx, "lsr-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := extension.GetResourceStatus(lsr0.Annotations)
	koordlettest.WaitFile(t, ctx, runContainer(t, ctx, cp, cgroupRoot, "lsr-0", true), st.CPUSet)
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "ls", SchedulerName: "koord-scheduler", CPU: "500m", Memory: "1Gi",
		Labels: map[string]string{extension.LabelPodQoS: "LS"}}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, cp, "ls")
	koordlettest.WaitFile(t, ctx, runContainer(t, ctx, cp, cgroupRoot, "ls", false), cpuset.New(func() []int {
		var ids []int
		for i := 0; i < 32; i++ {
			ids = append(ids, i)
		}
		return ids
	}()...).Difference(bound).String())

	// Nothing changes: nothing is written (koordlet syncs every 200ms here).
	rv := cm.ResourceVersion
	time.Sleep(time.Second)
	if cm, err = getNUMAInfo(ctx, cp, "kl-1"); err != nil || cm.ResourceVersion != rv {
		t.Errorf("ConfigMap rewritten without a change: resourceVersion %s → %s (%v)", rv, cm.ResourceVersion, err)
	}

	// Deleted by hand: back within a sync.
	if err := cp.Client.CoreV1().ConfigMaps("kube-system").Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cm2, err := getNUMAInfo(ctx, cp, "kl-1")
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && cm2.UID != cm.UID, err
	})
	if err != nil {
		t.Fatalf("numa-info not re-created: %v", err)
	}
}

// Two koordlets on fixture machines, one of them busy (its /proc/stat says
// 14 of 16 CPUs work): each writes its NodeMetric, and LoadAwareScheduling
// keeps new pods off the busy node.
func TestKoordletReportsLoadTheSchedulerAvoids(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	nodes := map[string]float64{"kl-hot": 14, "kl-cool": 1}
	uids := map[string]string{}
	for name, busy := range nodes {
		n, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: name, CPU: "16", Memory: "32Gi"})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = string(n.UID)
		startKoordlet(t, ctx, cp, name, [4]int{1, 1, 8, 2}, 32<<30).SimulateLoad(t, ctx, busy)
	}
	for name, busy := range nodes {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			nm, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, name, metav1.GetOptions{})
			if err != nil || nm.Status.NodeMetric == nil {
				return false, nil
			}
			cpu := nm.Status.NodeMetric.NodeUsage.Cpu().AsApproximateFloat64()
			last = fmt.Sprintf("cpu %.2f, %d windows", cpu, len(nm.Status.NodeMetric.AggregatedNodeUsages))
			if len(nm.OwnerReferences) != 1 || string(nm.OwnerReferences[0].UID) != uids[name] {
				return false, fmt.Errorf("nodemetric %s owners %v", name, nm.OwnerReferences)
			}
			if nm.Status.UpdateTime == nil || len(nm.Status.NodeMetric.AggregatedNodeUsages) != 3 {
				return false, nil
			}
			p99 := nm.Status.NodeMetric.AggregatedNodeUsages[0].Usage["p99"]
			// Memory is MemTotal − MemAvailable of the fixture: half.
			// The fixture's /proc/stat moves in steps, so a single sample is
			// only near the simulated load.
			return cpu > busy-3 && cpu < busy+3 && p99.Memory().Value() == 16<<30, nil
		})
		if err != nil {
			t.Fatalf("nodemetric %s (last: %s): %v", name, last, err)
		}
	}

	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	var names []string
	for i := 0; i < 6; i++ {
		names = append(names, fmt.Sprintf("web-%d", i))
		if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: names[i], SchedulerName: "koord-scheduler", CPU: "500m", Memory: "512Mi",
			Labels: map[string]string{extension.LabelPodQoS: "LS"}}); err != nil {
			t.Fatal(err)
		}
	}
	waitBound(t, ctx, cp, names...)
	counts, err := cp.PodsByNode(ctx, "koord-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if counts["kl-hot"] != 0 || counts["kl-cool"] != 6 {
		t.Errorf("pods per node %v, want all 6 on kl-cool", counts)
	}
}

// With --publish-node-resource-topology koordlet also writes a
// NodeResourceTopology, which a scheduler with topologySource:
// NodeResourceTopology binds from.
func TestKoordletPublishesNodeResourceTopology(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	if err := cp.InstallCRDs(ctx, manifests.ThirdPartyCRDs); err != nil {
		t.Fatal(err)
	}
	nrtClient, err := nrtclientset.NewForConfig(koordclient.JSON(cp.Config))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "nrt-1", CPU: "32", Memory: "64Gi"}); err != nil {
		t.Fatal(err)
	}
	startKoordlet(t, ctx, cp, "nrt-1", [4]int{1, 2, 8, 2}, 32<<30, func(o *agent.Options) { o.NRT = nrtClient })
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		nrt, err := nrtClient.TopologyV1alpha2().NodeResourceTopologies().Get(ctx, "nrt-1", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		info, err := numaresource.ParseNodeResourceTopology(nrt)
		return err == nil && len(info.NUMANodes) == 2 && info.NUMANodes[0].MemoryBytes == 32<<30, err
	})
	if err != nil {
		t.Fatalf("NodeResourceTopology nrt-1: %v", err)
	}
	startScheduler(t, ctx, cp, nrtConfig)
	if _, err := cp.CreatePod(ctx, lsrPod("lsr-nrt", "4", nil)); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, cp, "lsr-nrt")
	topo, err := numaresource.NewTopology(topologytest.Linux(1, 2, 8, 2, 0).CPUTopology)
	if err != nil {
		t.Fatal(err)
	}
	checkCPUs(t, ctx, cp, map[string]*numaresource.Topology{"nrt-1": topo}, true)
}
