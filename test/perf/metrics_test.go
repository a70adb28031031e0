package perf

import (
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// histograms is a snapshot of the scheduler's duration histograms, by
// metric name and label set. The scheduler runs in this process, so its
// metrics are read from the registry it records into; one snapshot is taken
// before the measured phase and one after, and only the difference counts
// (the registry lives as long as the process, across cases).
type histograms map[string]*dto.Histogram

// counters is a snapshot of the scheduler's counters, keyed as histograms.
type counters map[string]float64

// sum is what the counters of name whose labels include all of match
// ("k=v") gained since before.
func (after counters) sum(before counters, name string, match ...string) float64 {
	var total float64
	for k, v := range after {
		if matches(k, name, match) {
			total += v - before[k]
		}
	}
	return total
}

// most is the largest gain since before among the counters of name whose
// labels include all of match.
func (after counters) most(before counters, name string, match ...string) float64 {
	var top float64
	for k, v := range after {
		if matches(k, name, match) {
			top = max(top, v-before[k])
		}
	}
	return top
}

// matches says whether key (see key) is of metric name with every "k=v"
// of match among its labels.
func matches(key, name string, match []string) bool {
	if !strings.HasPrefix(key, name+",") && key != name {
		return false
	}
	for _, m := range match {
		if !strings.Contains(key+",", ","+m+",") {
			return false
		}
	}
	return true
}

// gather reads names from the registry the in-process scheduler records into.
func gather(names ...string) (histograms, counters, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out, sums := histograms{}, counters{}
	for _, f := range families {
		if !want[f.GetName()] {
			continue
		}
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				out[key(f.GetName(), m.GetLabel())] = h
			}
			if c := m.GetCounter(); c != nil {
				sums[key(f.GetName(), m.GetLabel())] = c.GetValue()
			}
		}
	}
	return out, sums, nil
}

func key(name string, labels []*dto.LabelPair) string {
	parts := []string{name}
	for _, l := range labels {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts[1:])
	return strings.Join(parts, ",")
}

// delta is what was observed between two snapshots, merged over every
// label set of name whose labels include all of match ("k=v").
type delta struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative
	total  uint64
	sum    float64 // of the observations
}

func (after histograms) since(before histograms, name string, match ...string) delta {
	var d delta
	for k, h := range after {
		if !matches(k, name, match) {
			continue
		}
		prev := before[k]
		if d.bounds == nil {
			for _, b := range h.GetBucket() {
				d.bounds = append(d.bounds, b.GetUpperBound())
			}
			d.counts = make([]uint64, len(d.bounds)+1)
		}
		var cumPrev, cumNow uint64
		for i, b := range h.GetBucket() {
			now := b.GetCumulativeCount()
			var was uint64
			if prev != nil && i < len(prev.GetBucket()) {
				was = prev.GetBucket()[i].GetCumulativeCount()
			}
			if i < len(d.counts)-1 {
				d.counts[i] += (now - cumNow) - (was - cumPrev)
			}
			cumNow, cumPrev = now, was
		}
		total := h.GetSampleCount()
		if prev != nil {
			total -= prev.GetSampleCount()
		}
		d.counts[len(d.counts)-1] += total - (cumNow - cumPrev)
		d.total += total
		d.sum += h.GetSampleSum()
		if prev != nil {
			d.sum -= prev.GetSampleSum()
		}
	}
	return d
}

// quantile interpolates within the bucket holding q of the observations,
// as Prometheus' histogram_quantile does; NaN without observations.
func (d delta) quantile(q float64) float64 {
	if d.total == 0 {
		return math.NaN()
	}
	rank := q * float64(d.total)
	var cum float64
	lower := 0.0
	for i, c := range d.counts {
		upper := math.Inf(1)
		if i < len(d.bounds) {
			upper = d.bounds[i]
		}
		if cum+float64(c) >= rank && c > 0 {
			if math.IsInf(upper, 1) {
				return lower
			}
			return lower + (upper-lower)*(rank-cum)/float64(c)
		}
		cum += float64(c)
		lower = upper
	}
	return lower
}

// labelValues lists the values label takes in the snapshot's keys of name.
func (after histograms) labelValues(name, label string) []string {
	seen := map[string]bool{}
	for k := range after {
		if !strings.HasPrefix(k, name+",") {
			continue
		}
		for _, part := range strings.Split(k, ",")[1:] {
			if v, ok := strings.CutPrefix(part, label+"="); ok {
				seen[v] = true
			}
		}
	}
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
