package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/koordlettest"
	"github.com/koord-project/koord/pkg/koordlet/agent"
)

// koordlet on this very host, as root: real procfs, real cgroup v1
// hierarchies (under a test --cgroup-root) and the real eBPF probe. A pod
// whose container runs four CPU-bound loops on two CPUs shows up in
// NodeMetric with its CPU usage and its run-queue latency.
func TestKoordletOnThisHost(t *testing.T) {
	needHostCgroups(t)
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
	podDir := "kubepods/burstable/pod" + string(pod.UID)
	hostCgroups(t, parent, "kubepods", "kubepods/burstable", podDir, podDir+"/burner-c")
	for i := 0; i < 4; i++ {
		runIn(t, parent+"/"+podDir+"/burner-c", "sh", "-c", "while :; do :; done")
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
			// The container is reported on its own too, for the recommender.
			containerCPU := -1.0
			if len(pm.ContainersMetric) == 1 && pm.ContainersMetric[0].Name == "main" && !pm.ContainersMetric[0].ContainerUsage.Memory().IsZero() {
				containerCPU = pm.ContainersMetric[0].ContainerUsage.Cpu().AsApproximateFloat64()
			}
			last = fmt.Sprintf("cpu %.2f, container cpu %.2f, waits %d, p99 %gs", cpu, containerCPU, ext.RunqueueLatency.Waits, ext.RunqueueLatency.P99Seconds)
			// Four loops on two CPUs: well over half a core, even on a busy host.
			return cpu > 0.5 && containerCPU > 0.5 && ext.RunqueueLatency.Waits > 0 && ext.RunqueueLatency.P99Seconds > 0, nil
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

// hostCgroups makes, as kubelet would, the given cgroups under parent (made
// first) in this host's cpuset, cpu, cpuacct and memory v1 hierarchies,
// removed children first when the test ends, after the processes runIn put
// in them (cleanups run last-in first-out).
func hostCgroups(t *testing.T, parent string, dirs ...string) {
	t.Helper()
	mems, _ := os.ReadFile("/sys/fs/cgroup/cpuset/cpuset.mems")
	cpus, _ := os.ReadFile("/sys/fs/cgroup/cpuset/cpuset.cpus")
	var made []string
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			// A killed process group's last task may take a moment to leave.
			var err error
			for try := 0; try < 50; try++ {
				if err = os.Remove(made[i]); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("removing %s: %v", made[i], err)
			}
		}
	})
	for _, c := range []string{"cpuset", "cpu", "cpuacct", "memory"} {
		for _, r := range append([]string{""}, dirs...) {
			d := filepath.Join("/sys/fs/cgroup", c, parent, r)
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
}

// runIn starts a command in a cgroup (relative to each v1 hierarchy's root)
// and kills it when the test ends, before its cgroups are removed.
func runIn(t *testing.T, cgroup string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	// Its own process group, so that its children (a shell's sleeps) go too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _, _ = cmd.Process.Wait() })
	for _, c := range []string{"cpuset", "cpu", "cpuacct", "memory"} {
		if err := os.WriteFile(filepath.Join("/sys/fs/cgroup", c, cgroup, "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The interference guard closes BE suppression's loop on what the eBPF probe
// measures on this host: while an LS pod's p99 run-queue latency is over the
// target (1 µs: any wait), BE's CFS quota comes down step by step; with a
// target it meets, the steps are given back.
func TestInterferenceGuardOnThisHost(t *testing.T) {
	needHostCgroups(t)
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	const node = "guard-1"
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: node, CPU: "2", Memory: "8Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := cp.CreateNodeMetric(ctx, node); err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for name, qos := range map[string]string{"ticker": "LS", "batch": "BE"} {
		spec := controlplane.PodSpec{Name: name, Labels: map[string]string{"koordinator.sh/qosClass": qos}}
		if qos == "LS" {
			spec.CPU = "100m"
		}
		pod, err := controlplane.MakePod(spec)
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.NodeName = node
		if pod, err = cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: "containerd://" + name + "-c"}}
		if pods[name], err = cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	parent := fmt.Sprintf("koord-guard-test-%d", os.Getpid())
	ls := "kubepods/burstable/pod" + string(pods["ticker"].UID)
	be := "kubepods/besteffort/pod" + string(pods["batch"].UID)
	hostCgroups(t, parent, "kubepods", "kubepods/burstable", "kubepods/besteffort", ls, ls+"/ticker-c", be, be+"/batch-c")
	// The LS pod wakes up all the time; the BE pod keeps a CPU busy.
	runIn(t, parent+"/"+ls+"/ticker-c", "sh", "-c", "while :; do sleep 0.001; done")
	runIn(t, parent+"/"+be+"/batch-c", "sh", "-c", "while :; do :; done")

	guard := func(target int) string {
		return fmt.Sprintf(`{"resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":100,"cpuSuppressPolicy":"cfsQuota"},
			"extensions":{"koord.sh/interferenceGuard":{"enable":true,"lsRunQueueLatencyP99Microseconds":%d,"stepPercent":10,"minWaits":10}}}`, target)
	}
	koordlettest.SetNodeSLO(t, ctx, cp, node, guard(1))
	reg := prometheus.NewRegistry()
	a, err := agent.New(cp.Client, cp.Koord, agent.Options{NodeName: node, SysfsRoot: "/sys", ProcfsRoot: "/proc",
		CgroupRoot: "/sys/fs/cgroup", KubeletCgroupRoot: parent, RunQueueLatency: true,
		CollectInterval: 300 * time.Millisecond, ReconcileInterval: 300 * time.Millisecond}, reg)
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	defer func() { cancel(); <-done }()

	steps := func() float64 {
		families, _ := reg.Gather()
		for _, f := range families {
			if f.GetName() == "koordlet_interference_guard_steps" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	quota := filepath.Join("/sys/fs/cgroup/cpu", parent, "kubepods/besteffort/cpu.cfs_quota_us")
	readQuota := func() int64 {
		b, _ := os.ReadFile(quota)
		var v int64
		_, _ = fmt.Sscan(string(b), &v)
		return v
	}
	var last string
	waitFor := func(what string, ok func(float64, int64) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			s, q := steps(), readQuota()
			last = fmt.Sprintf("%v steps, besteffort quota %d", s, q)
			return ok(s, q), nil
		})
		if err != nil {
			t.Fatalf("%s: %s", what, last)
		}
		t.Logf("%s: %s", what, last)
	}
	// 100 % of 2 CPUs less the LS pod and the system: about 2 CPUs of quota
	// at first; each step takes 0.2 CPU, down to the floor of 0.1 CPU.
	waitFor("tightened", func(s float64, q int64) bool { return s >= 3 && q > 0 && q <= 150000 })
	koordlettest.SetNodeSLO(t, ctx, cp, node, guard(1000000))
	waitFor("relaxed", func(s float64, q int64) bool { return s == 0 && q > 150000 })
}

// needHostCgroups skips a test that needs root and this host's cgroup v1
// hierarchies (eBPF too).
func needHostCgroups(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for cgroups and eBPF (CI runs as root)")
	}
	for _, c := range []string{"cpuset", "cpu", "cpuacct", "memory"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "cgroup.procs")); err != nil {
			t.Skipf("no cgroup v1 %s hierarchy on this host: %v", c, err)
		}
	}
}
