package usage

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
)

func TestSeriesIsBounded(t *testing.T) {
	s := NewSeries(3)
	t0 := time.Unix(1000, 0)
	for i := 0; i < 10; i++ {
		s.Add(t0.Add(time.Duration(i)*time.Second), float64(i))
	}
	if got := s.Since(time.Time{}, nil); len(got) != 3 || got[0] != 7 || got[2] != 9 {
		t.Errorf("kept %v, want the last three", got)
	}
	if got := s.Since(t0.Add(8*time.Second), nil); len(got) != 2 {
		t.Errorf("since 8s: %v", got)
	}
	st, ok := Summarise([]float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10})
	if !ok || st.Avg != 5.5 || st.P50 != 5 || st.P90 != 9 || st.P99 != 10 {
		t.Errorf("stats %+v", st)
	}
	if _, ok := Summarise(nil); ok {
		t.Error("no samples, no stats")
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// 14 of 16 CPUs busy for a second, a pod using 1.5 cores: the collector
// reports exactly that, and memory as MemTotal − MemAvailable.
func TestCollector(t *testing.T) {
	_, procfs, err := topologytest.WriteSysfs(t.TempDir(), 1, 1, 8, 2, 32<<30)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	l := cgroup.Layout{Root: root, Version: cgroup.V1, Driver: cgroup.Cgroupfs}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u1"}}
	podDir := l.PodDir(corev1.PodQOSBestEffort, "u1")
	writeFile(t, filepath.Join(root, "cpuacct", podDir, "cpuacct.usage"), "0\n")
	writeFile(t, filepath.Join(root, "memory", podDir, "memory.usage_in_bytes"), "3000\n")
	writeFile(t, filepath.Join(root, "memory", podDir, "memory.stat"), "total_inactive_file 1000\n")
	writeFile(t, filepath.Join(root, "cpuacct", podDir, "c1", "cpuacct.usage"), "0\n")
	writeFile(t, filepath.Join(root, "memory", podDir, "c1", "memory.usage_in_bytes"), "2500\n")
	writeFile(t, filepath.Join(root, "memory", podDir, "c1", "memory.stat"), "total_inactive_file 500\n")
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://c1"}}

	c := NewCollector(procfs, time.Second, time.Minute, time.Minute)
	t0 := time.Unix(1000, 0)
	if err := c.Collect(t0, &l, []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(procfs, "stat"), topologytest.ProcStat(1400, 200))
	writeFile(t, filepath.Join(root, "cpuacct", podDir, "cpuacct.usage"), "1500000000\n")
	writeFile(t, filepath.Join(root, "cpuacct", podDir, "c1", "cpuacct.usage"), "1000000000\n")
	if err := c.Collect(t0.Add(time.Second), &l, []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	cpu, mem, ok := c.NodeUsage(t0)
	if !ok || math.Abs(cpu.Avg-14) > 1e-9 || mem.Avg != 16<<30 {
		t.Errorf("node cpu %+v, memory %+v (%v); want 14 cores, 16Gi", cpu, mem, ok)
	}
	pc, pm, ok := c.PodUsage("u1", t0)
	if !ok || math.Abs(pc-1.5) > 1e-9 || pm != 2000 {
		t.Errorf("pod cpu %v, memory %v (%v); want 1.5 cores, 2000 bytes", pc, pm, ok)
	}
	var containers []string
	c.Containers(func(uid types.UID, name string, u ContainerUsage) {
		containers = append(containers, fmt.Sprintf("%s/%s cpu %.1f memory %.0f", uid, name, u.CPU, u.Memory))
	})
	if len(containers) != 1 || containers[0] != "u1/app cpu 1.0 memory 2000" {
		t.Errorf("containers %v, want u1/app at 1 core, 2000 bytes", containers)
	}
	// Over a window, a container's CPU is averaged and its memory is the
	// peak: 1 then 3 cores average 2; 2000 then 1200 bytes peak at 2000.
	writeFile(t, filepath.Join(root, "cpuacct", podDir, "c1", "cpuacct.usage"), "4000000000\n")
	writeFile(t, filepath.Join(root, "memory", podDir, "c1", "memory.usage_in_bytes"), "1700\n")
	if err := c.Collect(t0.Add(2*time.Second), &l, []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	if got := c.PodContainers("u1", t0); len(got) != 1 || got[0] != (ContainerWindow{Name: "app", CPU: 2, Memory: 2000}) {
		t.Errorf("container window %+v, want app at 2 cores average, 2000 bytes peak", got)
	}
	if got := c.PodContainers("u1", t0.Add(2*time.Second)); len(got) != 1 || got[0] != (ContainerWindow{Name: "app", CPU: 3, Memory: 1200}) {
		t.Errorf("container window of the last sample %+v, want app at 3 cores, 1200 bytes", got)
	}
	// A pod that left is forgotten: memory does not grow with churn.
	if err := c.Collect(t0.Add(3*time.Second), &l, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.PodUsage("u1", t0); ok || len(c.pods) != 0 {
		t.Error("a deleted pod's history is kept")
	}
}

// Per NUMA node: the CPU of its CPUs' /proc/stat lines and the memory its
// sysfs meminfo says is used.
func TestCollectorNUMA(t *testing.T) {
	sysfs, procfs, err := topologytest.WriteSysfs(t.TempDir(), 1, 2, 2, 1, 4<<30) // NUMA 0: CPUs 0-1, NUMA 1: CPUs 2-3
	if err != nil {
		t.Fatal(err)
	}
	// stat is /proc/stat after `seconds` of uptime, CPU i busy busy[i] jiffies.
	stat := func(seconds uint64, busy ...uint64) string {
		var sum uint64
		lines := ""
		for i, b := range busy {
			sum += b
			lines += fmt.Sprintf("cpu%d %d 0 0 %d 0 0 0 0 0 0\n", i, b, 100*seconds-b)
		}
		return fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 0 0 0\n", sum, 400*seconds-sum) + lines
	}
	writeFile(t, filepath.Join(procfs, "stat"), stat(10, 0, 0, 0, 0))
	c := NewCollector(procfs, time.Second, time.Minute, time.Minute)
	c.SetNUMA(sysfs, map[int]int{0: 0, 1: 0, 2: 1, 3: 1})
	t0 := time.Unix(1000, 0)
	if err := c.Collect(t0, nil, nil); err != nil {
		t.Fatal(err)
	}
	// A second later: CPUs 0 and 1 were busy all along, CPU 2 half the time.
	writeFile(t, filepath.Join(procfs, "stat"), stat(11, 100, 100, 50, 0))
	if err := c.Collect(t0.Add(time.Second), nil, nil); err != nil {
		t.Fatal(err)
	}
	got := c.NUMAUsage(t0)
	if len(got) != 2 || math.Abs(got[0][0].Avg-2) > 1e-9 || math.Abs(got[1][0].Avg-0.5) > 1e-9 {
		t.Errorf("NUMA CPU usage %+v, want node 0: 2 cores, node 1: 0.5", got)
	}
	if got[1][1].Avg != float64(4<<30-1024*1024) {
		t.Errorf("NUMA 1 memory %v, want MemTotal − MemFree", got[1][1].Avg)
	}
}
