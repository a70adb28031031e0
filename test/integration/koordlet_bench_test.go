package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/koordlettest"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
)

// BenchmarkKoordletSteadyState runs bin/koordlet (default intervals: reconcile
// 1 s, sample 5 s, report 60 s) for a node with 100 running pods on fixture
// trees for 60 s, and reports its resident memory and CPU use: with no QoS
// strategy, and with every one on (all gates, a NodeSLO enabling every
// strategy, 60 LS pods with a CPU limit and 30 BE pods on batch resources, a
// v2 tree so that memory QoS has its files). One iteration takes over a
// minute: run it with -benchtime 1x.
func BenchmarkKoordletSteadyState(b *testing.B) {
	for _, all := range []bool{false, true} {
		b.Run(map[bool]string{false: "Strategies=none", true: "Strategies=all"}[all], func(b *testing.B) {
			for b.Loop() {
				rss, cpu, perCycle := koordletSteadyState(b, all)
				b.ReportMetric(rss, "RSS-MiB")
				b.ReportMetric(cpu, "%CPU")
				b.ReportMetric(perCycle, "CPU-ms/reconcile")
			}
		})
	}
}

func koordletSteadyState(b *testing.B, allStrategies bool) (rssMiB, cpuPercent, cpuMsPerReconcile float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Stop()
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "steady", CPU: "128", Memory: "256Gi"}); err != nil {
		b.Fatal(err)
	}
	if err := cp.CreateNodeMetric(ctx, "steady"); err != nil {
		b.Fatal(err)
	}
	sysfs, fixture := fixtureFor(b)
	for _, d := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		cgrouptest.WriteCgroup(b, fixture.CgroupRoot, allStrategies, d, "0-127")
	}
	for i := 0; i < 100; i++ {
		spec := controlplane.PodSpec{Name: fmt.Sprintf("p%03d", i), CPU: "100m", Memory: "128Mi"}
		pod, err := controlplane.MakePod(spec)
		if err != nil {
			b.Fatal(err)
		}
		qosDir := "kubepods/burstable"
		switch {
		case allStrategies && i >= 40:
			pod.Labels = map[string]string{extension.LabelPodQoS: "BE"}
			pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{extension.BatchCPU: resource.MustParse("500"), extension.BatchMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{extension.BatchCPU: resource.MustParse("1000"), extension.BatchMemory: resource.MustParse("2Gi")}}
			qosDir = "kubepods/besteffort"
		case allStrategies && i >= 10:
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
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
		podDir := filepath.Join(qosDir, "pod"+string(pod.UID))
		cgrouptest.WriteCgroup(b, fixture.CgroupRoot, allStrategies, podDir, "0-127")
		cgrouptest.WriteCgroup(b, fixture.CgroupRoot, allStrategies, filepath.Join(podDir, fmt.Sprintf("c%03d", i)), "0-127")
	}
	args := []string{"--runqueue-latency=false"}
	if allStrategies {
		args = []string{"--runqueue-latency=false", "--feature-gates=BECPUSuppress=true,BECPUEvict=true,BEMemoryEvict=true,CPUBurst=true,CgroupReconcile=true,GroupIdentity=true,BatchResource=true"}
		slo := &slov1alpha1.NodeSLO{ObjectMeta: metav1.ObjectMeta{Name: "steady"}}
		if err := json.Unmarshal([]byte(cgrouptest.EveryStrategy), &slo.Spec); err != nil {
			b.Fatal(err)
		}
		if _, err := cp.Koord.SloV1alpha1().NodeSLOs().Create(ctx, slo, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cp.Config, kubeconfig); err != nil {
		b.Fatal(err)
	}
	bin := commandBinaryB(b)
	cmd := exec.Command(bin, append([]string{"--node-name=steady", "--kubeconfig=" + kubeconfig, "--sysfs-root=" + sysfs, "--procfs-root=" + fixture.Procfs,
		"--cgroup-root=" + fixture.CgroupRoot, "--kubelet-root-dir=" + b.TempDir(), "--metrics-addr=127.0.0.1:0"}, args...)...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	time.Sleep(10 * time.Second) // start-up: caches, first publish
	cpu0 := cpuTicks(b, cmd.Process.Pid)
	start := time.Now()
	time.Sleep(60 * time.Second)
	cpu1 := cpuTicks(b, cmd.Process.Pid)
	secs := time.Since(start).Seconds()
	// One reconcile a second, the default --reconcile-interval.
	return vmRSS(b, cmd.Process.Pid) / 1024, float64(cpu1-cpu0) / 100 / secs * 100, float64(cpu1-cpu0) * 10 / secs
}

func fixtureFor(b *testing.B) (string, fixtureNode) {
	dir := b.TempDir()
	sysfs, procfs, err := topologytest.WriteSysfs(dir, 2, 2, 16, 2, 64<<30)
	if err != nil {
		b.Fatal(err)
	}
	cgroupRoot := filepath.Join(dir, "cgroup")
	return sysfs, koordlettest.NodeAt(procfs, cgroupRoot, 128)
}

// cpuTicks is utime+stime of a process, in 1/100 s.
func cpuTicks(b testing.TB, pid int) uint64 {
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
func vmRSS(b testing.TB, pid int) float64 {
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
