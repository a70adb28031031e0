// Package koordlettest runs a real koordlet in a test process against a real
// API server, on a fixture of its machine (sysfs, procfs) and of kubelet's
// cgroups (v1, cgroupfs driver), and reads back what it wrote. The
// integration and security suites share it.
package koordlettest

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/koordlet/agent"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
)

// Node is where a koordlet under test reads its node from.
type Node struct {
	Procfs, CgroupRoot string
	CPUs               int
	// The simulated load (cores, as float64 bits) and its writer.
	load    *atomic.Uint64
	started *sync.Once
}

// SimulateLoad makes the fixture /proc/stat say cores CPUs are busy, until
// the test ends or the next SimulateLoad.
func (n Node) SimulateLoad(t *testing.T, ctx context.Context, cores float64) {
	n.load.Store(math.Float64bits(cores))
	n.started.Do(func() {
		ctx, cancel := context.WithCancel(ctx)
		done := topologytest.SimulateLoad(ctx, n.Procfs, n.CPUs, func() float64 { return math.Float64frombits(n.load.Load()) })
		t.Cleanup(func() { cancel(); <-done })
	})
}

// NewNode writes a fixture machine of the given shape (sockets, NUMA nodes
// per socket, cores per NUMA node, threads per core) and an empty v1
// cgroupfs-driver cgroup tree; it returns the node and its sysfs root.
func NewNode(t *testing.T, shape [4]int, memPerNUMA int64) (Node, string) {
	t.Helper()
	sysfs, procfs, err := topologytest.WriteSysfs(t.TempDir(), shape[0], shape[1], shape[2], shape[3], memPerNUMA)
	if err != nil {
		t.Fatal(err)
	}
	cgroupRoot := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cgroupRoot, "cpuset/kubepods/burstable"), 0o755); err != nil {
		t.Fatal(err)
	}
	return NodeAt(procfs, cgroupRoot, shape[0]*shape[1]*shape[2]*shape[3]), sysfs
}

// NodeAt is a fixture machine already written: its procfs, its cgroup root
// and its number of CPUs.
func NodeAt(procfs, cgroupRoot string, cpus int) Node {
	return Node{Procfs: procfs, CgroupRoot: cgroupRoot, CPUs: cpus, load: new(atomic.Uint64), started: new(sync.Once)}
}

// Run runs a koordlet for node on an existing fixture until stop is called
// (as a restart does, the next one starts from nothing in memory).
func Run(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, node string, fixture Node, sysfs string, mutate ...func(*agent.Options)) (stop func()) {
	t.Helper()
	opts := agent.Options{NodeName: node, SysfsRoot: sysfs, ProcfsRoot: fixture.Procfs, CgroupRoot: fixture.CgroupRoot,
		SyncInterval: 200 * time.Millisecond, ReconcileInterval: 100 * time.Millisecond, CollectInterval: 100 * time.Millisecond}
	for _, m := range mutate {
		m(&opts)
	}
	// koord-manager's part: koordlet only writes the NodeMetric's status.
	if err := cp.CreateNodeMetric(ctx, node); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cp.Client, cp.Koord, opts, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("koordlet: %v", err)
			}
		})
	}
}

// QoSPod creates a running pod on node with one container "main" of the
// given requests and limits (QoS label qos unless empty), and its v1
// cgroupfs cgroups in the fixture tree with kubelet's values for them.
func QoSPod(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, fixture Node, node, name, qos string, req, lim corev1.ResourceList) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
	}
	if qos != "" {
		pod.Labels[extension.LabelPodQoS] = qos
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
		WriteCgroup(t, fixture.CgroupRoot, d)
	}
	WriteFiles(t, fixture.CgroupRoot, map[string]string{
		"memory/" + podDir + "/memory.usage_in_bytes": "1073741824", "memory/" + podDir + "/memory.stat": "total_inactive_file 0",
		"cpuacct/" + podDir + "/cpuacct.usage": "1000",
	})
	return pod
}

// WriteCgroup makes a fixture v1 cgroup of an 8-CPU node with the files
// the strategies touch, at the kernel's defaults.
func WriteCgroup(t *testing.T, root, dir string) {
	t.Helper()
	cgrouptest.WriteCgroup(t, root, false, dir, "0-7")
}

// WriteFiles writes fixture files under root (each path relative to it).
func WriteFiles(t *testing.T, root string, files map[string]string) {
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

// SetNodeSLO creates or replaces node's NodeSLO spec, given in JSON.
func SetNodeSLO(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, node, specJSON string) {
	t.Helper()
	slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := json.Unmarshal([]byte(specJSON), &slo.Spec); err != nil {
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

// WaitFile polls a fixture file until it holds want.
func WaitFile(t *testing.T, ctx context.Context, path, want string) {
	t.Helper()
	WaitFileThat(t, ctx, path, want, func(s string) bool { return s == want })
}

// WaitFileThat polls a fixture file until ok accepts its content.
func WaitFileThat(t *testing.T, ctx context.Context, path, what string, ok func(string) bool) string {
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
