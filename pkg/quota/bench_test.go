package quota

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkCompute is one recomputation of a 20-quota tree's runtimes
// from a ledger of 8,000 pods: what ElasticQuota's PreFilter pays when
// requests changed since the last.
func BenchmarkCompute(b *testing.B) {
	var list []*Quota
	for i := 0; i < 20; i++ {
		list = append(list, eq("perf", fmt.Sprintf("q-%02d", i), "100", "100000", nil, nil))
	}
	tree := NewTree(list)
	l := NewLedger()
	for i := 0; i < 8000; i++ {
		l.Set(types.UID(fmt.Sprint(i)), Entry{Quota: fmt.Sprintf("q-%02d", i%20), Requests: Vec{"cpu": 50, "memory": 128 << 20 * 1000}, Placed: i%2 == 0})
	}
	total := Vec{"cpu": 4000 * 1000, "memory": 1000 * 32 << 30 * 1000}
	b.ReportAllocs()
	for b.Loop() {
		used, request, outside := l.Totals()
		t := total.Clone()
		t.Sub(outside)
		tree.Compute(used, request, t)
	}
}
