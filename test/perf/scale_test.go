package perf

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkScale runs the realistic mix through stock kube-scheduler's
// profile and through the shipped Koord profile on clusters of each size in
// KOORD_PERF_SCALE_NODES (default 1000 and 5000 nodes), with
// KOORD_PERF_SCALE_PODS measured pods (default 2000, after 300 warm-up
// ones): fewer than BenchmarkScheduler's, since what is measured here is how
// the costs grow with the cluster, not throughput. Per case:
//
//   - heap-KB/node: the process's live heap (API server, etcd and scheduler
//     together, after a collection) per node; in the Koord case also
//     koord-heap-KB/node, its heap less stock's on the same size in the same
//     repetition, per node: what Koord's plugins and informers keep per node.
//   - cycle-ms/pod: time per pod in the scheduling cycle's extension points,
//     and cycle-us/node: that per node Filter ran on, the figure that stays
//     flat if a plugin's per-node work does not grow with the cluster.
//
// KOORD_PERF_REPETITIONS repeats the whole set; KOORD_PERF_CASES picks by
// "scale/<nodes>/<stock|all>".
func BenchmarkScale(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(envString("KOORD_PERF_SCALE_NODES", "1000,5000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("KOORD_PERF_SCALE_NODES: %q is not a node count", f)
		}
		sizes = append(sizes, n)
	}
	_, pick := fromEnv(b)
	pods := envInt("KOORD_PERF_SCALE_PODS", 2000)
	for rep := 1; rep <= envInt("KOORD_PERF_REPETITIONS", 1); rep++ {
		for _, nodes := range sizes {
			sz := size{nodes: nodes, warmupPods: 300, measuredPods: pods}
			// Stock first, so that the Koord case can report the
			// difference of their heaps.
			heap := map[string]float64{}
			for _, c := range []perfCase{{"stock", nil, &realistic}, {"all", allPlugins, &realistic}} {
				name := fmt.Sprintf("scale/%d/%s", nodes, c.name)
				if !pick.MatchString(name) {
					continue
				}
				b.Run(fmt.Sprintf("rep=%d/%d/%s", rep, nodes, c.name), func(b *testing.B) {
					cfg, err := profile(c.plugins)
					if err != nil {
						b.Fatal(err)
					}
					r := runCase(b, name, cfg, c.mix, c.mix.sized(sz))
					n := float64(c.mix.sized(sz).nodes)
					heap[c.name] = r.heapMB
					cycle := cycleMs(r.cycles[koordProfile])
					b.ReportMetric(r.heapMB, "heap-MB")
					b.ReportMetric(r.heapMB*1024/n, "heap-KB/node")
					b.ReportMetric(cycle, "cycle-ms/pod")
					if r.searched > 0 {
						b.ReportMetric(cycle*1000/r.searched, "cycle-us/node")
					}
					b.ReportMetric(r.searched, "filtered-nodes/pod")
					b.ReportMetric(r.avg, "pods/s")
					b.ReportMetric(0, "ns/op")
					if s, ok := heap["stock"]; ok && c.name == "all" {
						b.ReportMetric((r.heapMB-s)*1024/n, "koord-heap-KB/node")
					}
				})
			}
		}
	}
}

func envString(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}
