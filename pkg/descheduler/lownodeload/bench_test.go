package lownodeload

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkRound is one descheduling round's planning at 1000 nodes and
// 30 000 pods: 50 nodes hot (over the high mark for long enough), 300 under
// the low mark, the rest in between.
func BenchmarkRound(b *testing.B) {
	var nodes []NodeLoad
	for i := range 1000 {
		n := node(fmt.Sprintf("node-%04d", i), "32", "128Gi")
		pods := map[*corev1.Pod]string{}
		perPod := "500m" // 30 × 0.5 = 15 of 32 cores: between the marks
		switch {
		case i < 50:
			perPod = "800m" // 24 + 1 = 25 of 32: 78 % > 70 %
		case i < 350:
			perPod = "200m" // 6 + 1 = 7 of 32: 22 % < 30 %
		}
		for j := range 30 {
			qos, prio := "LS", int32(9000)
			if j%3 == 0 {
				qos, prio = "BE", 5000
			}
			pods[pod(fmt.Sprintf("p-%d-%d", i, j), n.Name, qos, prio)] = perPod
		}
		nodes = append(nodes, load(n, "1", pods))
	}
	o := opts(1)
	b.ReportAllocs()
	for b.Loop() {
		d := NewDetector(time.Hour)
		p := d.plan(nodes, o)
		if len(p.Moves) == 0 || len(p.Hot) != 50 {
			b.Fatalf("hot %d moves %d", len(p.Hot), len(p.Moves))
		}
	}
}
