package recommender

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// populate tracks workloads Recommendations of podsPer single-container
// pods each, and gives every container a day of samples, one a minute in
// the aggregate (the histograms' size does not grow with samples).
func populate(tb testing.TB, workloads, podsPer int) *Model {
	m := NewModel(Defaults())
	t0 := time.Unix(1_700_000_000, 0)
	for w := 0; w < workloads; w++ {
		rec := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("w%d", w)}
		if err := m.Track(rec, nil); err != nil {
			tb.Fatal(err)
		}
		for p := 0; p < podsPer; p++ {
			uid := types.UID(fmt.Sprintf("w%d-p%d", w, p))
			for i := 0; i < 10; i++ {
				m.Add(rec, Sample{Pod: uid, Container: "app", Requests: requests("1", "1Gi"), Start: t0.Add(time.Duration(i) * 144 * time.Minute),
					CPU: 0.1 + float64((w+p+i)%40)/10, Memory: float64((100 + (w+i)%400) << 20)})
			}
		}
	}
	return m
}

func heapMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// The recommender's memory at 10 000 containers, in the two shapes that
// bound it: 10 000 single-pod workloads (an aggregate, two histograms, per
// container) and 1 000 workloads of 10 pods.
func BenchmarkModelMemory(b *testing.B) {
	for _, shape := range []struct{ workloads, pods int }{{10000, 1}, {1000, 10}} {
		b.Run(fmt.Sprintf("workloads=%d/pods=%d", shape.workloads, shape.pods), func(b *testing.B) {
			b.ReportAllocs()
			var mib float64
			for i := 0; i < b.N; i++ {
				before := heapMiB()
				m := populate(b, shape.workloads, shape.pods)
				mib = heapMiB() - before
				runtime.KeepAlive(m)
			}
			b.ReportMetric(mib, "MiB")
		})
	}
}

// One NodeMetric report's worth of work per container: a CPU and a memory
// sample.
func BenchmarkAdd(b *testing.B) {
	m := populate(b, 1000, 10)
	rec := types.NamespacedName{Namespace: "ns", Name: "w7"}
	t0 := time.Unix(1_800_000_000, 0)
	req := requests("1", "1Gi")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Add(rec, Sample{Pod: "w7-p3", Container: "app", Requests: req, Start: t0.Add(time.Duration(i) * time.Minute), CPU: 0.5, Memory: 300 << 20})
	}
}

// Recomputing one Recommendation (every interval, per Recommendation).
func BenchmarkRecommend(b *testing.B) {
	m := populate(b, 1000, 10)
	rec := types.NamespacedName{Namespace: "ns", Name: "w7"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, _ := m.Recommend(rec); len(res.Peaks) != 1 {
			b.Fatal("no result")
		}
	}
}

// The bound the docs promise: 10 000 containers of single-pod workloads,
// the costliest shape, take under 50 MiB.
func TestModelMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 10 000 aggregates")
	}
	before := heapMiB()
	m := populate(t, 10000, 1)
	if mib := heapMiB() - before; mib > 50 {
		t.Errorf("10 000 containers take %.1f MiB, want under 50", mib)
	}
	runtime.KeepAlive(m)
}
