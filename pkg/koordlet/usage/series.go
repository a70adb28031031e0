// Package metrics samples node and pod usage (procfs, cgroups) into bounded
// in-memory histories and summarises them for NodeMetric.
package usage

import (
	"sort"
	"time"
)

// Series is a fixed-capacity ring of timestamped samples: its memory is set
// when it is made and never grows.
type Series struct {
	at   []time.Time
	v    []float64
	next int
	n    int
}

// NewSeries holds the last capacity samples.
func NewSeries(capacity int) *Series {
	capacity = max(capacity, 1)
	return &Series{at: make([]time.Time, capacity), v: make([]float64, capacity)}
}

// Add records a sample, dropping the oldest when full.
func (s *Series) Add(at time.Time, v float64) {
	s.at[s.next], s.v[s.next] = at, v
	s.next = (s.next + 1) % len(s.v)
	s.n = min(s.n+1, len(s.v))
}

// Since appends to buf the samples taken at or after t, oldest first.
func (s *Series) Since(t time.Time, buf []float64) []float64 {
	start := (s.next - s.n + len(s.v)) % len(s.v)
	for i := 0; i < s.n; i++ {
		j := (start + i) % len(s.v)
		if !s.at[j].Before(t) {
			buf = append(buf, s.v[j])
		}
	}
	return buf
}

// Stats are the statistics NodeMetric reports over a window.
type Stats struct{ Avg, P50, P90, P95, P99 float64 }

// Summarise computes Stats of samples (which it sorts in place); ok is false
// when there are none.
func Summarise(samples []float64) (st Stats, ok bool) {
	if len(samples) == 0 {
		return st, false
	}
	sum := 0.0
	for _, v := range samples {
		sum += v
	}
	sort.Float64s(samples)
	// Nearest-rank percentiles: always a value that was observed.
	rank := func(p float64) float64 {
		i := int(p*float64(len(samples))+0.999999) - 1
		return samples[min(max(i, 0), len(samples)-1)]
	}
	return Stats{Avg: sum / float64(len(samples)), P50: rank(0.50), P90: rank(0.90), P95: rank(0.95), P99: rank(0.99)}, true
}

// Last is the newest sample; ok is false when there is none.
func (s *Series) Last() (at time.Time, v float64, ok bool) {
	if s.n == 0 {
		return time.Time{}, 0, false
	}
	i := (s.next - 1 + len(s.v)) % len(s.v)
	return s.at[i], s.v[i], true
}
