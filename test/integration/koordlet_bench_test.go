package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
)

// BenchmarkKoordletSteadyState runs bin/koordlet (default intervals: reconcile
// 1 s, sample 5 s, report 60 s) for a node with 100 running pods on fixture
// trees for 60 s, and reports its resident memory and CPU use. One
// iteration takes over a minute: run it with -benchtime 1x.
func BenchmarkKoordletSteadyState(b *testing.B) {
	for b.Loop() {
		rss, cpu := koordletSteadyState(b)
		b.ReportMetric(rss, "RSS-MiB")
		b.ReportMetric(cpu, "%CPU")
	}
}

func koordletSteadyState(b *testing.B) (rssMiB, cpuPercent float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(b, controlplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Stop()
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "steady", CPU: "128", Memory: "256Gi"}); err != nil {
		b.Fatal(err)
	}
	sysfs, fixture := fixtureFor(b)
	for i := 0; i < 100; i++ {
		pod, err := controlplane.MakePod(controlplane.PodSpec{Name: fmt.Sprintf("p%03d", i), CPU: "100m", Memory: "128Mi"})
		if err != nil {
			b.Fatal(err)
		}
		pod.Spec.NodeName = "steady"
		if pod, err = cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: fmt.Sprintf("containerd://c%03d", i)}}
		if _, err := cp.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		podDir := filepath.Join("kubepods/burstable", "pod"+string(pod.UID))
		for file, content := range map[string]string{
			"cpuset/" + podDir + "/cpuset.cpus": "0-127\n", "cpuset/" + podDir + fmt.Sprintf("/c%03d/cpuset.cpus", i): "0-127\n",
			"cpuacct/" + podDir + "/cpuacct.usage": "1000\n", "memory/" + podDir + "/memory.usage_in_bytes": "1048576\n",
			"memory/" + podDir + "/memory.stat": "total_inactive_file 0\n",
		} {
			path := filepath.Join(fixture.cgroupRoot, file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cp.Config, kubeconfig); err != nil {
		b.Fatal(err)
	}
	bin := commandBinaryB(b)
	cmd := exec.Command(bin, "--node-name=steady", "--kubeconfig="+kubeconfig, "--sysfs-root="+sysfs, "--procfs-root="+fixture.procfs,
		"--cgroup-root="+fixture.cgroupRoot, "--kubelet-root-dir="+b.TempDir(), "--metrics-addr=127.0.0.1:0", "--runqueue-latency=false")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	time.Sleep(10 * time.Second) // start-up: caches, first publish
	cpu0 := cpuTicks(b, cmd.Process.Pid)
	start := time.Now()
	time.Sleep(60 * time.Second)
	cpu1 := cpuTicks(b, cmd.Process.Pid)
	return vmRSS(b, cmd.Process.Pid) / 1024, float64(cpu1-cpu0) / 100 / time.Since(start).Seconds() * 100
}

func fixtureFor(b *testing.B) (string, fixtureNode) {
	dir := b.TempDir()
	sysfs, procfs, err := topologytest.WriteSysfs(dir, 2, 2, 16, 2, 64<<30)
	if err != nil {
		b.Fatal(err)
	}
	cgroupRoot := filepath.Join(dir, "cgroup")
	if err := os.MkdirAll(filepath.Join(cgroupRoot, "cpuset/kubepods/burstable"), 0o755); err != nil {
		b.Fatal(err)
	}
	return sysfs, fixtureNode{procfs: procfs, cgroupRoot: cgroupRoot, cpus: 128, load: new(atomic.Uint64), started: new(sync.Once)}
}

// cpuTicks is utime+stime of a process, in 1/100 s.
func cpuTicks(b *testing.B, pid int) uint64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(raw)[strings.LastIndex(string(raw), ")")+2:])
	utime, _ := strconv.ParseUint(fields[11], 10, 64)
	stime, _ := strconv.ParseUint(fields[12], 10, 64)
	return utime + stime
}

// vmRSS is the process's resident set in KiB.
func vmRSS(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return kb
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

func commandBinaryB(b *testing.B) string {
	if p := os.Getenv("KOORDLET_BIN"); p != "" {
		return p
	}
	b.Skip("set KOORDLET_BIN to the koordlet binary (make build puts it in bin/)")
	return ""
}
