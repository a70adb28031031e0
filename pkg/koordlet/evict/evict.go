// Package evict decides which BE pods koordlet evicts, and evicts them
// through the Eviction API (so PodDisruptionBudgets hold), when batch work
// would hurt the node (Koordinator's BEMemoryEvict and BECPUEvict):
//
//   - memory: once the node uses memoryEvictThresholdPercent of its memory,
//     BE pods go until its usage, less what they free, is at
//     memoryEvictLowerPercent;
//   - CPU: once BE pods have, over cpuEvictTimeWindowSeconds, had less than
//     cpuEvictBESatisfactionLowerPercent of the CPU they requested (their
//     suppressed share over their batch-cpu requests) while using at least
//     cpuEvictBEUsageThresholdPercent of that share, BE pods go until the
//     remaining ones would be satisfied at cpuEvictBESatisfactionUpperPercent.
//
// Victims are taken lowest priority first, then largest usage, and only as
// many as needed; pods already terminating count as freed, and after an
// eviction the kind waits a cool-down before it looks again, so one spike
// does not evict more than it must. Only BE pods are ever candidates.
package evict

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

// Reasons, Koordinator's feature names: the Event reason suffix and the
// metric label.
const (
	ReasonMemory = "BEMemoryEvict"
	ReasonCPU    = "BECPUEvict"
)

// Candidate is a BE pod with its latest usage.
type Candidate struct {
	Pod         *corev1.Pod
	MemoryBytes float64
	CPUMilli    float64
	// BatchCPURequestMilli is its batch-cpu request (milli-cores).
	BatchCPURequestMilli int64
	// Terminating pods are on their way out: what they hold is as good as freed.
	Terminating bool
}

// Victim is a pod to evict and why.
type Victim struct {
	Pod     *corev1.Pod
	Reason  string
	Message string
}

// order sorts candidates lowest priority first, then largest usage (by).
func order(cands []Candidate, by func(Candidate) float64) []Candidate {
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if !c.Terminating {
			out = append(out, c)
		}
	}
	prio := func(p *corev1.Pod) int32 {
		if p.Spec.Priority == nil {
			return 0
		}
		return *p.Spec.Priority
	}
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := prio(out[i].Pod), prio(out[j].Pod)
		if pi != pj {
			return pi < pj
		}
		return by(out[i]) > by(out[j])
	})
	return out
}

// Memory picks the BE pods to evict for node memory: used and capacity in
// bytes.
func Memory(t nodeslo.Threshold, capacity, used float64, cands []Candidate) []Victim {
	if capacity <= 0 || used < capacity*float64(t.MemoryEvictThresholdPercent)/100 {
		return nil
	}
	release := used - capacity*float64(t.MemoryEvictLowerPercent)/100
	for _, c := range cands {
		if c.Terminating {
			release -= c.MemoryBytes
		}
	}
	var out []Victim
	for _, c := range order(cands, func(c Candidate) float64 { return c.MemoryBytes }) {
		if release <= 0 {
			break
		}
		release -= c.MemoryBytes
		out = append(out, Victim{Pod: c.Pod, Reason: ReasonMemory, Message: fmt.Sprintf(
			"node memory usage %.0f%% reached memoryEvictThresholdPercent %d%%; evicting BE pods (lowest priority, then largest) until %d%%: this one uses %s",
			used*100/capacity, t.MemoryEvictThresholdPercent, t.MemoryEvictLowerPercent, bytes(c.MemoryBytes))})
	}
	return out
}

// CPUSample is one collect interval's view of BE CPU: what BE may use (its
// suppressed share), what BE pods request (batch-cpu) and use.
type CPUSample struct {
	At                                      time.Time
	RealLimitMilli, RequestMilli, UsedMilli float64
}

// CPUHistory keeps the samples of the last window.
type CPUHistory struct{ samples []CPUSample }

// Add records a sample and drops those older than window.
func (h *CPUHistory) Add(s CPUSample, window time.Duration) {
	h.samples = append(h.samples, s)
	i := 0
	for i < len(h.samples) && s.At.Sub(h.samples[i].At) > window {
		i++
	}
	h.samples = h.samples[i:]
}

// Reset forgets the history (after an eviction, the pods it averaged are gone).
func (h *CPUHistory) Reset() { h.samples = h.samples[:0] }

// CPU picks the BE pods to evict for CPU starvation. The window's average
// and the latest sample must both call for it (the smaller release wins);
// the window must hold at least a third of its length in samples.
func CPU(t nodeslo.Threshold, h *CPUHistory, window, interval time.Duration, cands []Candidate) []Victim {
	if !t.CPUEvictConfigured || len(h.samples) == 0 {
		return nil
	}
	window = max(window, interval)
	if time.Duration(len(h.samples))*interval < window/3 {
		return nil
	}
	var avg CPUSample
	for _, s := range h.samples {
		avg.RealLimitMilli += s.RealLimitMilli / float64(len(h.samples))
		avg.RequestMilli += s.RequestMilli / float64(len(h.samples))
		avg.UsedMilli += s.UsedMilli / float64(len(h.samples))
	}
	last := h.samples[len(h.samples)-1]
	release := min(cpuRelease(t, avg), cpuRelease(t, last))
	if release <= 0 {
		return nil
	}
	for _, c := range cands {
		if c.Terminating {
			release -= float64(c.BatchCPURequestMilli)
		}
	}
	var out []Victim
	for _, c := range order(cands, func(c Candidate) float64 { return c.CPUMilli }) {
		if release <= 0 {
			break
		}
		if c.BatchCPURequestMilli <= 0 {
			continue // evicting it would not make the others any more satisfied
		}
		release -= float64(c.BatchCPURequestMilli)
		out = append(out, Victim{Pod: c.Pod, Reason: ReasonCPU, Message: fmt.Sprintf(
			"BE pods got %.0f%% of the batch CPU they request (below cpuEvictBESatisfactionLowerPercent %d%%) for %s while using it all; evicting BE pods (lowest priority, then busiest) until the rest get %d%%",
			last.RealLimitMilli*100/last.RequestMilli, t.CPUEvictBESatisfactionLowerPercent, window, t.CPUEvictBESatisfactionUpperPercent)})
	}
	return out
}

// cpuRelease is how much batch-cpu request must go (milli-cores) for a
// sample, 0 when BE is satisfied enough or not using what it has.
func cpuRelease(t nodeslo.Threshold, s CPUSample) float64 {
	if s.RequestMilli <= 0 || s.RealLimitMilli <= 0 {
		return 0
	}
	// Below one CPU any use counts as busy (Koordinator's rule).
	if s.RealLimitMilli >= 1000 && s.UsedMilli < s.RealLimitMilli*float64(t.CPUEvictBEUsageThresholdPercent)/100 {
		return 0
	}
	satisfaction := s.RealLimitMilli / s.RequestMilli
	if satisfaction > float64(t.CPUEvictBESatisfactionLowerPercent)/100 {
		return 0
	}
	// Left with request R' the pods get L/R'; L/R' = upper at R' = L/upper.
	upper := float64(t.CPUEvictBESatisfactionUpperPercent) / 100
	return max(s.RequestMilli-s.RealLimitMilli/upper, 0)
}

func bytes(b float64) string {
	return resource.NewQuantity(int64(b), resource.BinarySI).String()
}
