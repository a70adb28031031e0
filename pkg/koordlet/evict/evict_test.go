package evict

import (
	"strings"
	"testing"
	"time"

	"github.com/koord-project/koord/pkg/koordlet/cgroup/cgrouptest"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

func cand(name string, prio int32, memGi, cpu float64, req int64) Candidate {
	p := cgrouptest.Pod(name, "BE", cgrouptest.Container{Name: "a"})
	p.Spec.Priority = &prio
	return Candidate{Pod: p, MemoryBytes: memGi * (1 << 30), CPUMilli: cpu, BatchCPURequestMilli: req}
}

func names(v []Victim) string {
	var out []string
	for _, x := range v {
		out = append(out, x.Pod.Name)
	}
	return strings.Join(out, ",")
}

// Koordinator's rule: at memoryEvictThresholdPercent, evict lowest priority
// first, then largest, until usage less what they free is at the lower mark.
func TestMemory(t *testing.T) {
	th := nodeslo.Default().Threshold // 70 %, lower 68 %
	const capacity = 100 << 30
	cands := []Candidate{cand("big-batch", 5000, 8, 0, 0), cand("small-free", 3000, 1, 0, 0), cand("big-free", 3000, 3, 0, 0), cand("mid-batch", 5000, 2, 0, 0)}
	for _, c := range []struct {
		usedGi float64
		want   string
	}{
		{69, ""},
		{70, "big-free"},                      // 2 Gi to free: the larger free pod
		{72, "big-free,small-free"},           // 4 Gi
		{75, "big-free,small-free,big-batch"}, // 7 Gi: then batch, largest first
		{99, "big-free,small-free,big-batch,mid-batch"},
	} {
		if got := names(Memory(th, capacity, c.usedGi*(1<<30), cands)); got != c.want {
			t.Errorf("used %v Gi: evict %q, want %q", c.usedGi, got, c.want)
		}
	}
	// A pod already terminating counts as freed: nothing more goes.
	term := append([]Candidate{}, cands...)
	term[2].Terminating = true
	if got := names(Memory(th, capacity, 70<<30, term)); got != "" {
		t.Errorf("with big-free terminating: evict %q, want none", got)
	}
	if v := Memory(th, capacity, 75<<30, cands); !strings.Contains(v[0].Message, "memoryEvictThresholdPercent 70%") {
		t.Errorf("message %q", v[0].Message)
	}
}

func TestCPU(t *testing.T) {
	th := nodeslo.Default().Threshold
	th.CPUEvictConfigured, th.CPUEvictBESatisfactionLowerPercent, th.CPUEvictBESatisfactionUpperPercent = true, 40, 80
	cands := []Candidate{cand("a", 5000, 0, 900, 2000), cand("b", 5000, 0, 1200, 2000), cand("c", 3000, 0, 100, 2000), cand("d", 5000, 0, 0, 2000)}
	now := time.Now()
	var h CPUHistory
	// BE requests 8 CPUs and gets 2 (25 %) while using them all.
	h.Add(CPUSample{At: now, RealLimitMilli: 2000, RequestMilli: 8000, UsedMilli: 2000}, 30*time.Second)
	if v := CPU(th, &h, 30*time.Second, 5*time.Second, cands); len(v) != 0 {
		t.Errorf("evicted %q on 5 s of a 30 s window, want none before a third of it", names(v))
	}
	h.Add(CPUSample{At: now.Add(5 * time.Second), RealLimitMilli: 2000, RequestMilli: 8000, UsedMilli: 2000}, 30*time.Second)
	// Left with R' the rest get 2/R' = 80 % at R' = 2.5: 5.5 CPUs of requests go.
	if got := names(CPU(th, &h, 30*time.Second, 5*time.Second, cands)); got != "c,b,a" {
		t.Errorf("evict %q, want c (lowest priority), then the busiest", got)
	}
	// Not using what it has: no eviction.
	var idle CPUHistory
	for i := 0; i < 6; i++ {
		idle.Add(CPUSample{At: now.Add(time.Duration(i) * 5 * time.Second), RealLimitMilli: 2000, RequestMilli: 8000, UsedMilli: 500}, 30*time.Second)
	}
	if v := CPU(th, &idle, 30*time.Second, 5*time.Second, cands); len(v) != 0 {
		t.Errorf("BE idle: evicted %q", names(v))
	}
	th.CPUEvictConfigured = false
	if v := CPU(th, &h, 30*time.Second, 5*time.Second, cands); len(v) != 0 {
		t.Error("unconfigured CPU eviction evicted")
	}
}

// The evictor never evicts a pod that is not BE.
func TestEvictorRefusesNonBE(t *testing.T) {
	ls := cgrouptest.Pod("web", "LS", cgrouptest.Container{Name: "a"})
	e := &Evictor{}
	if n := e.Evict(t.Context(), time.Now(), []Victim{{Pod: ls, Reason: ReasonMemory}}); n != 0 {
		t.Errorf("evicted %d", n)
	}
}
