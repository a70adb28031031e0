package runqlat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	var h Hist
	h[3] = 90 // 8-16 µs
	h[10] = 9 // 1-2 ms
	h[20] = 1 // ~1 s
	if got := h.Quantile(0.5); got != UpperBound(3) {
		t.Errorf("p50 %v, want %v", got, UpperBound(3))
	}
	if got := h.Quantile(0.99); got != UpperBound(10) {
		t.Errorf("p99 %v, want %v", got, UpperBound(10))
	}
	if got := h.Quantile(1); got != UpperBound(20) {
		t.Errorf("max %v, want %v", got, UpperBound(20))
	}
	if (Hist{}).Quantile(0.99) != 0 || h.Add(h).Count() != 200 {
		t.Error("empty quantile or Add")
	}
}

// On this machine, as root: the program loads and attaches; CPU-bound
// processes contending in one cgroup fill its histogram, while a sleeping
// process's cgroup stays empty.
func TestRunQueueLatencyOnThisHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading eBPF needs root (CI runs as root)")
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skipf("the kernel has no BTF: %v", err)
	}
	cpuRoot := "/sys/fs/cgroup/cpu"
	if _, err := os.Stat(filepath.Join(cpuRoot, "cgroup.procs")); err != nil {
		cpuRoot = "/sys/fs/cgroup" // cgroup v2 only
	}
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	base := filepath.Join(cpuRoot, fmt.Sprintf("koord-runqlat-%d", os.Getpid()))
	busy, idle := filepath.Join(base, "busy"), filepath.Join(base, "idle")
	var procs []*exec.Cmd
	for _, d := range []string{base, busy, idle} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, c := range procs {
			_ = c.Process.Kill()
			_, _ = c.Process.Wait()
		}
		for _, d := range []string{busy, idle, base} {
			if err := os.Remove(d); err != nil {
				t.Errorf("removing %s: %v", d, err)
			}
		}
	}()
	start := func(dir string, args ...string) {
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The sleeping process may run once while it settles into its cgroup;
	// from then on its cgroup must record nothing.
	start(idle, "sleep", "300")
	idleID, err := CgroupID(idle)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	idleBefore, err := p.Histogram(idleID)
	if err != nil {
		t.Fatal(err)
	}
	// More runnable loops than CPUs: they wait for each other.
	for i := 0; i < 4; i++ {
		start(busy, "sh", "-c", "while :; do :; done")
	}
	busyID, err := CgroupID(busy)
	if err != nil {
		t.Fatal(err)
	}
	var h Hist
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if h, err = p.Histogram(busyID); err != nil {
			t.Fatal(err)
		}
		if h.Count() >= 20 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if h.Count() < 20 {
		t.Fatalf("busy cgroup %d: %d waits recorded, want at least 20", busyID, h.Count())
	}
	t.Logf("busy cgroup: %d waits, p50 ≤ %gs, p99 ≤ %gs", h.Count(), h.Quantile(0.5), h.Quantile(0.99))
	if h, err := p.Histogram(idleID); err != nil || h.Count() != idleBefore.Count() {
		t.Errorf("idle cgroup %d: %d waits while the busy one ran (%v), want none", idleID, h.Count()-idleBefore.Count(), err)
	}
	if err := p.Forget(busyID); err != nil {
		t.Fatal(err)
	}
}
