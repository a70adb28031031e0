package perf

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
)

func labels(kv ...string) []*dto.LabelPair {
	var out []*dto.LabelPair
	for i := 0; i < len(kv); i += 2 {
		out = append(out, &dto.LabelPair{Name: ptr.To(kv[i]), Value: ptr.To(kv[i+1])})
	}
	return out
}

// Only the measured phase counts: the difference between two snapshots, of
// the label sets that match, summed.
func TestCounterAndHistogramDeltas(t *testing.T) {
	const evals = "scheduler_plugin_evaluation_total"
	fitFilter := key(evals, labels("plugin", "NodeResourcesFit", "extension_point", "Filter"))
	fitScore := key(evals, labels("plugin", "NodeResourcesFit", "extension_point", "Score"))
	laFilter := key(evals, labels("plugin", "LoadAwareScheduling", "extension_point", "Filter"))
	before := counters{fitFilter: 100, fitScore: 50}
	after := counters{fitFilter: 400, fitScore: 60, laFilter: 30}
	if got := after.sum(before, evals, "plugin=NodeResourcesFit", "extension_point=Filter"); got != 300 {
		t.Errorf("NodeResourcesFit Filter: %v, want 300", got)
	}
	if got := after.sum(before, evals, "extension_point=Filter"); got != 330 {
		t.Errorf("every Filter: %v, want 330 (a label set new since before counts from 0)", got)
	}
	if got := after.most(before, evals, "extension_point=Filter"); got != 300 {
		t.Errorf("most evaluated Filter plugin: %v, want 300", got)
	}
	if got := after.sum(before, evals, "plugin=Fit"); got != 0 {
		t.Errorf("a label value is matched whole: %v, want 0", got)
	}

	const attempts = "scheduler_scheduling_attempt_duration_seconds"
	hist := func(counts ...uint64) *dto.Histogram {
		h := &dto.Histogram{}
		var cum uint64
		for i, c := range counts {
			cum += c
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptr.To(float64(i + 1)), CumulativeCount: ptr.To(cum)})
		}
		h.SampleCount = ptr.To(cum)
		return h
	}
	k := key(attempts, labels("result", "scheduled"))
	d := histograms{k: hist(10, 90, 0)}.since(histograms{k: hist(10, 0, 0)}, attempts, "result=scheduled")
	if d.total != 90 {
		t.Fatalf("%d observations since before, want 90", d.total)
	}
	// All 90 new ones fell in (1, 2]: the median interpolates to 1.5.
	if q := d.quantile(0.5); math.Abs(q-1.5) > 1e-9 {
		t.Errorf("p50 %v, want 1.5", q)
	}
}
