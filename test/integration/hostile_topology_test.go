package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
)

// A koordlet rewrites its node's numa-info every half second with 16,000
// CPUs whose every shared pool and kubelet pin names all of them (about
// 1 MB). bin/koord-scheduler parses only the latest version, outside its
// informer's handler, and refuses it in milliseconds: once the writes stop
// its CPU is flat and its memory back near where it was. Each such parse
// took 35 s before, every version was queued behind the last, and the
// scheduler stayed at 90 % of a core long after the writes stopped.
func TestHostileNUMAInfoLeavesSchedulerFlat(t *testing.T) {
	ctx := testContext(t)
	cp := startControlPlane(t, controlplane.Options{})
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "n1", CPU: "8", Memory: "16Gi"}); err != nil {
		t.Fatal(err)
	}
	if err := cp.ReportNodeMetric(ctx, "n1", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	config, err := cp.SchedulerConfigFile(manifests.SchedulerConfig, "", false)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, _ := runComponent(t, koordSchedulerBinary(t), "--config", config, fmt.Sprintf("--secure-port=%d", freePort(t)), "--bind-address=127.0.0.1")
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "web", SchedulerName: "koord-scheduler", CPU: "500m", Memory: "256Mi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "web", time.Minute); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	rssBefore := vmRSS(t, pid) / 1024

	writes := 0
	for start := time.Now(); time.Since(start) < 10*time.Second; writes++ {
		if err := cp.PublishNUMAInfo(ctx, "n1", topologytest.Hostile(16000, 2500, writes)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // the last version's parse
	cpu0 := cpuTicks(t, pid)
	time.Sleep(5 * time.Second)
	cpuAfter := float64(cpuTicks(t, pid)-cpu0) / 100
	rssAfter := vmRSS(t, pid) / 1024
	t.Logf("%d hostile versions written; afterwards %.2f CPU-seconds in 5 s, RSS %.0f MiB (before %.0f MiB)", writes, cpuAfter, rssAfter, rssBefore)
	if cpuAfter > 1 {
		t.Errorf("koord-scheduler used %.2f CPU-seconds in the 5 s after the writes stopped, want at most 1 (it is still parsing)", cpuAfter)
	}
	if rssAfter > rssBefore+50 {
		t.Errorf("koord-scheduler's RSS went from %.0f to %.0f MiB", rssBefore, rssAfter)
	}
	// It still schedules.
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "api", SchedulerName: "koord-scheduler", CPU: "500m", Memory: "256Mi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.WaitForPodBound(ctx, "default", "api", 10*time.Second); err != nil {
		t.Error(err)
	}
}
