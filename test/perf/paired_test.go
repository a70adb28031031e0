package perf

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// The two profiles of a paired run, by schedulerName: stock kube-scheduler's
// and the shipped Koord profile.
const (
	stockProfile = "stock"
	koordProfile = "koord-scheduler"
)

// cyclePoints are the extension points of the scheduling cycle, the one loop
// that schedules pods one at a time; the binding cycle runs beside it.
var cyclePoints = []string{"PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit"}

// pairedMixes are the mixes a paired run schedules, one cluster each.
var pairedMixes = []*mix{&realistic, &plain, &binding}

// BenchmarkPaired schedules each mix with both profiles in one scheduler:
// blocks of ten pods alternate between stock kube-scheduler's profile and
// the shipped Koord profile, so both share the nodes, the queue, the
// informers and the machine, and are measured milliseconds apart. The ratio
// of their scheduling cycles (stock-cycle-ms / koord-cycle-ms, the time in
// the cycle's extension points per pod each profile scheduled) cannot be
// moved by the machine's drift, which BenchmarkScheduler's separate cases
// can only spread over repetitions: it is the measure to judge a change to
// a plugin's per-node work by. It is not a throughput ratio. Throughput
// follows the whole process's CPU on this machine, and what Koord costs
// outside the cycle (informer handlers, the garbage its allocations make)
// lands on both profiles alike here; BenchmarkScheduler measures both. The
// part of the cycle outside any extension point (taking the pod from the
// queue, the snapshot, assuming the pod) is the same code in both and left
// out, so the ratio is lower than the cycle's true one, never higher.
// koord-filter-own-ms is what of Koord's PreFilter and Filter its plugins'
// own code took: each Koord plugin's mean call (the scheduler times one
// cycle in ten) times its calls per pod. Only those two points: the
// scheduler keeps 1000 timings a second per profile and drops the rest, and
// a timed cycle's Filter (a timing per plugin and node) fills that, so
// Score's timings arrive in some runs and not others. The rest of the
// extra in Filter is the framework's work for more plugins, and the nodes
// Koord's profile filters beyond stock's where it turns some away.
// Sizes, KOORD_PERF_REPETITIONS and KOORD_PERF_REPORT as BenchmarkScheduler;
// KOORD_PERF_CASES picks by "paired/<mix>". KOORD_PERF_FLOOR pairs stock
// with the floor profile instead of Koord's (see floorPlugins), its metrics
// named floor-… for koord-….
func BenchmarkPaired(b *testing.B) {
	sz, pick := fromEnv(b)
	cfg, err := schedulerConfig(namedProfile{stockProfile, nil}, namedProfile{koordProfile, allPlugins})
	if err != nil {
		b.Fatal(err)
	}
	label, prefix := "Koord", "koord"
	var opts []kubeschedulerapp.Option
	if os.Getenv("KOORD_PERF_FLOOR") != "" {
		if cfg, err = floorConfig(); err != nil {
			b.Fatal(err)
		}
		label, prefix, opts = "floor", "floor", floorOptions()
	}
	for rep := 1; rep <= envInt("KOORD_PERF_REPETITIONS", 1); rep++ {
		var results []result
		for _, m := range pairedMixes {
			name := "paired/" + m.name
			if !pick.MatchString(name) {
				continue
			}
			b.Run(fmt.Sprintf("rep=%d/%s", rep, m.name), func(b *testing.B) {
				r := runCase(b, name, cfg, m.alternating(), m.sized(sz), opts...)
				stock, koord := cycleMs(r.cycles[stockProfile]), cycleMs(r.cycles[koordProfile])
				if stock == 0 || koord == 0 {
					b.Fatalf("%s: scheduling cycle %.3f ms (stock), %.3f ms (%s): a profile scheduled nothing", name, stock, koord, label)
				}
				results = append(results, r)
				b.ReportMetric(stock, "stock-cycle-ms")
				b.ReportMetric(koord, prefix+"-cycle-ms")
				b.ReportMetric(stock/koord, "cycle-ratio")
				if prefix == "koord" {
					b.ReportMetric(filterOwnMs(r.own), "koord-filter-own-ms")
				}
				b.ReportMetric(r.searchedBy[stockProfile], "stock-filtered-nodes/pod")
				b.ReportMetric(r.searchedBy[koordProfile], prefix+"-filtered-nodes/pod")
				b.ReportMetric(r.avg, "pods/s")
				b.ReportMetric(r.cpuMs, "cpu-ms/pod")
				b.ReportMetric(0, "ns/op")
			})
		}
		reportPaired(b, rep, label, results)
	}
}

// alternating is m with every other block of ten pods (0–9, 20–29, ...) for
// the stock profile and the rest for Koord's: the realistic mix picks a
// pod's kind by i mod 10, so each profile gets the whole mix, and the
// reservation owners of the stock blocks stay unconsumed, held against
// every other pod.
func (m *mix) alternating() *mix {
	out := *m
	out.pod = func(namespace string, i int) *corev1.Pod {
		p := m.pod(namespace, i)
		p.Spec.SchedulerName = koordProfile
		if (i/10)%2 == 0 {
			p.Spec.SchedulerName = stockProfile
		}
		return p
	}
	return &out
}

// cycleMs is the time per pod in the scheduling cycle's extension points.
func cycleMs(points map[string]float64) float64 {
	var total float64
	for _, p := range cyclePoints {
		total += points[p]
	}
	return total
}

// filterOwnMs is the Koord plugins' own time per pod in PreFilter and
// Filter.
func filterOwnMs(own map[string]float64) float64 {
	var total float64
	for k, v := range own {
		if filterPoint(k) {
			total += v
		}
	}
	return total
}

// filterPoint says whether a "plugin/extension point" key is at PreFilter or
// Filter, the points whose timings the scheduler always keeps (see
// BenchmarkPaired).
func filterPoint(key string) bool {
	return strings.HasSuffix(key, "/PreFilter") || strings.HasSuffix(key, "/Filter")
}

// reportPaired prints, per mix, both profiles' time per pod in each
// extension point and the cycle's ratio, and appends it to
// $KOORD_PERF_REPORT; label names the second profile (Koord, floor).
func reportPaired(b *testing.B, rep int, label string, results []result) {
	if len(results) == 0 {
		return
	}
	out := fmt.Sprintf("\nBoth profiles in one scheduler: time per scheduled pod in each extension point, ms (mean); the cycle is %v, its ratio stock / %s.\n\n| mix | point | stock | %s |\n|---|---|---|---|\n", cyclePoints, label, label)
	for _, r := range results {
		var points []string
		for p := range r.cycles[koordProfile] {
			points = append(points, p)
		}
		for p := range r.cycles[stockProfile] {
			if !slices.Contains(points, p) {
				points = append(points, p)
			}
		}
		slices.SortFunc(points, func(a, b string) int {
			if d := pointOrder(a) - pointOrder(b); d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		for _, p := range points {
			out += fmt.Sprintf("| %s | %s | %.3f | %.3f |\n", r.mix, p, r.cycles[stockProfile][p], r.cycles[koordProfile][p])
		}
		for _, k := range slices.Sorted(maps.Keys(r.own)) {
			out += fmt.Sprintf("| %s | %s, the plugin's own time%s | | %.3f |\n", r.mix, k, sampledNote(k), r.own[k])
		}
		out += fmt.Sprintf("| %s | nodes filtered a pod | %.0f | %.0f |\n", r.mix, r.searchedBy[stockProfile], r.searchedBy[koordProfile])
		stock, koord := cycleMs(r.cycles[stockProfile]), cycleMs(r.cycles[koordProfile])
		out += fmt.Sprintf("| %s | **cycle** | **%.3f** | **%.3f** (ratio %.2f) |\n", r.mix, stock, koord, stock/koord)
	}
	title := fmt.Sprintf("Paired repetition %d", rep)
	if label != "Koord" {
		title += ", " + label
	}
	publish(b, title, out)
}

// sampledNote marks the points whose timings the scheduler mostly drops (see
// BenchmarkPaired): absent from some runs, from few cycles in the others.
func sampledNote(key string) string {
	if filterPoint(key) {
		return ""
	}
	return " (few timings kept)"
}

// reportOrder is the order a pod meets the reported extension points in.
var reportOrder = append(slices.Clone(cyclePoints), "PreBind", "Bind", "PostBind")

// pointOrder sorts extension points as a pod meets them; the rest last.
func pointOrder(p string) int {
	if i := slices.Index(reportOrder, p); i >= 0 {
		return i
	}
	return len(reportOrder)
}
