package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/pkg/koordlet/agent"
)

// koordlet on this very host, as root: real procfs, real cgroup v1
// hierarchies (under a test --cgroup-root) and the real eBPF probe. A pod
// whose container runs four CPU-bound loops on two CPUs shows up in
// NodeMetric with its CPU usage and its run-queue latency.
func TestKoordletOnThisHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for cgroups and eBPF (CI runs as root)")
	}
	for _, c := range []string{"cpuset", "cpu", "cpuacct", "memory"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs")); err != nil {
			t.Skipf("no cgroup v1 %s hierarchy on this host: %v", c, err)
		}
	}
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "host-1", CPU: "2", Memory: "8Gi"}); err != nil {
		t.Fatal(err)
	}
	// Report every second (a controller would set this spec).
	if _, err := cp.Koord.SloV1alpha1().NodeMetrics().Create(ctx, &slov1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: "host-1"},
		Spec: slov1alpha1.NodeMetricSpec{CollectPolicy: &slov1alpha1.NodeMetricCollectPolicy{ReportIntervalSeconds: ptr.To[int64](1), AggregateDurationSeconds: ptr.To[int64](5)}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := controlplane.MakePod(controlplane.PodSpec{Name: "burner", CPU: "1", Memory: "64Mi"})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeName = "host-1"
	if pod, err = cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: "containerd://burner-c"}}
	if _, err := cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The cgroups kubelet and containerd would make, in every hierarchy koordlet reads.
	parent := fmt.Sprintf("koord-host-test-%d", os.Getpid())
	rel := []string{parent, parent + "/kubepods", parent + "/kubepods/burstable",
		parent + "/kubepods/burstable/pod" + string(pod.UID), parent + "/kubepods/burstable/pod" + string(pod.UID) + "/burner-c"}
	mems, _ := os.ReadFile("/sys/fs/cgroup/cpuset/cpuset.mems")
	cpus, _ := os.ReadFile("/sys/fs/cgroup/cpuset/cpuset.cpus")
	var made []string
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range procs {
			_ = c.Process.Kill()
			_, _ = c.Process.Wait()
		}
		for i := len(made) - 1; i >= 0; i-- {
			if err := os.Remove(made[i]); err != nil {
				t.Errorf("removing %s: %v", made[i], err)
			}
		}
	})
	for _, c := range []string{"cpuset", "cpu", "cpuacct", "memory"} {
		for _, r := range rel {
			d := filepath.Join("/sys/fs/cgroup", c, r)
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			made = append(made, d)
			if c == "cpuset" {
				for f, v := range map[string][]byte{"cpuset.mems": mems, "cpuset.cpus": cpus} {
					if err := os.WriteFile(filepath.Join(d, f), []byte(strings.TrimSpace(string(v))), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	for i := 0; i < 4; i++ {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		for _, c := range []string{"cpuset", "cpu", "cpuacct", "memory"} {
			if err := os.WriteFile(filepath.Join("/sys/fs/cgroup", c, rel[len(rel)-1], "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	reg := prometheus.NewRegistry()
	a, err := agent.New(cp.Client, cp.Koord, agent.Options{NodeName: "host-1", SysfsRoot: "/sys", ProcfsRoot: "/proc",
		CgroupRoot: "/sys/fs/cgroup", KubeletCgroupRoot: parent, RunQueueLatency: true,
		CollectInterval: 200 * time.Millisecond, ReconcileInterval: 200 * time.Millisecond}, reg)
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	defer func() { cancel(); <-done }()

	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		nm, err := cp.Koord.SloV1alpha1().NodeMetrics().Get(ctx, "host-1", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		// This host has one NUMA node: its usage is the busy CPUs'.
		if nm.Status.NodeMetric == nil || len(nm.Status.NodeMetric.NUMAUsages) != 1 || nm.Status.NodeMetric.NUMAUsages[0].NodeUsage.Cpu().IsZero() {
			return false, nil
		}
		for _, pm := range nm.Status.PodsMetric {
			if pm.Name != "burner" || pm.Extensions == nil {
				continue
			}
			var ext struct {
				RunqueueLatency struct {
					P99Seconds float64 `json:"p99Seconds"`
					Waits      uint64  `json:"waits"`
				} `json:"runqueueLatency"`
			}
			if err := json.Unmarshal(pm.Extensions.Raw, &ext); err != nil {
				return false, err
			}
			cpu := pm.PodUsage.Cpu().AsApproximateFloat64()
			last = fmt.Sprintf("cpu %.2f, waits %d, p99 %gs", cpu, ext.RunqueueLatency.Waits, ext.RunqueueLatency.P99Seconds)
			// Four loops on two CPUs: well over half a core, even on a busy host.
			return cpu > 0.5 && ext.RunqueueLatency.Waits > 0 && ext.RunqueueLatency.P99Seconds > 0, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("burner in NodeMetric (last: %s): %v", last, err)
	}
	t.Logf("burner: %s", last)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
		if f.GetName() == "koordlet_ebpf_enabled" && f.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Error("koordlet_ebpf_enabled is not 1")
		}
	}
	if !found["koordlet_container_cpu_usage_cores"] || !found["koordlet_container_memory_working_set_bytes"] {
		t.Errorf("no per-container usage on /metrics (have %v)", found)
	}
	if !found["koordlet_pod_runqueue_latency_seconds"] {
		t.Errorf("no per-pod run-queue latency histogram on /metrics (have %v)", found)
	}
}
