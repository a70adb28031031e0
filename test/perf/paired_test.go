package perf

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The profiles of a paired run, by schedulerName: stock kube-scheduler's,
// the floor (stock's with plugins that do no work, see floorPlugins) and the
// shipped Koord profile.
const (
	stockProfile = "stock"
	floorProfile = "floor"
	koordProfile = "koord-scheduler"
)

// pairedProfiles take the blocks of ten pods in turn.
var pairedProfiles = []string{stockProfile, floorProfile, koordProfile}

// activeProfiles are pairedProfiles, less the floor with
// KOORD_PERF_NO_FLOOR set: stock and Koord alone, as paired runs were before
// the floor profile, so that their cycle ratio can be compared with those
// runs' (the floor's pods change what each profile's cycle finds in the
// CPU's caches, and with it the ratio).
func activeProfiles() []string {
	if os.Getenv("KOORD_PERF_NO_FLOOR") != "" {
		return []string{stockProfile, koordProfile}
	}
	return pairedProfiles
}

// cyclePoints are the extension points of the scheduling cycle, the one loop
// that schedules pods one at a time; the binding cycle runs beside it.
var cyclePoints = []string{"PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit"}

// pairedMixes are the mixes a paired run schedules, one cluster each.
var pairedMixes = []*mix{&realistic, &plain, &binding}

// floorTargets are the lowest cycle rate Koord's profile may have, as a
// fraction of the floor's in the same run (floor-cycle-ms / koord-cycle-ms),
// per mix.
var floorTargets = map[string]float64{"realistic": 0.92, "plain": 0.95, "binding": 0.85}

// BenchmarkPaired schedules each mix with three profiles in one scheduler:
// blocks of ten pods take turns between stock kube-scheduler's profile, the
// floor profile and the shipped Koord profile, so all share the nodes, the
// queue, the informers and the machine, and are measured milliseconds apart.
// A profile's cycle is the time per pod it scheduled in the scheduling
// cycle's extension points; the machine's drift cannot move the ratio of two
// profiles' cycles, which BenchmarkScheduler's separate cases can only spread
// over repetitions. cycle-ratio is stock's cycle over Koord's; floor-ratio
// is the floor's over Koord's: the framework's own price for running three
// more plugins is in the floor, so floor-ratio is what the Koord plugins'
// work costs, the measure floorTargets are set on. Neither is a throughput
// ratio: throughput follows the whole process's CPU on this machine, and
// what Koord costs outside the cycle (informer handlers, the garbage its
// allocations make) lands on every profile alike here; BenchmarkScheduler
// measures both. The part of the cycle outside any extension point (taking
// the pod from the queue, the snapshot, assuming the pod) is the same code
// in every profile and left out, so the ratios are lower than the cycle's
// true ones, never higher. koord-filter-own-ms is what of Koord's PreFilter
// and Filter its plugins' own code took: each Koord plugin's mean call (the
// scheduler times one cycle in ten) times its calls per pod. Only those two
// points: the scheduler keeps 1000 timings a second per profile and drops
// the rest, and a timed cycle's Filter (a timing per plugin and node) fills
// that, so Score's timings arrive in some runs and not others. Sizes,
// KOORD_PERF_REPETITIONS and KOORD_PERF_REPORT as BenchmarkScheduler;
// KOORD_PERF_CASES picks by "paired/<mix>".
func BenchmarkPaired(b *testing.B) {
	sz, pick := fromEnv(b)
	profiles := activeProfiles()
	cfg, err := pairedConfig(profiles)
	if err != nil {
		b.Fatal(err)
	}
	for rep := 1; rep <= envInt("KOORD_PERF_REPETITIONS", 1); rep++ {
		var results []result
		for _, m := range pairedMixes {
			name := "paired/" + m.name
			if !pick.MatchString(name) {
				continue
			}
			b.Run(fmt.Sprintf("rep=%d/%s", rep, m.name), func(b *testing.B) {
				r := runCase(b, name, cfg, m.rotating(profiles), m.sized(sz), floorOptions()...)
				cycle := map[string]float64{}
				for _, prof := range profiles {
					if cycle[prof] = cycleMs(r.cycles[prof]); cycle[prof] == 0 {
						b.Fatalf("%s: profile %s scheduled nothing", name, prof)
					}
				}
				results = append(results, r)
				b.ReportMetric(cycle[stockProfile], "stock-cycle-ms")
				b.ReportMetric(cycle[koordProfile], "koord-cycle-ms")
				b.ReportMetric(cycle[stockProfile]/cycle[koordProfile], "cycle-ratio")
				if cycle[floorProfile] > 0 {
					b.ReportMetric(cycle[floorProfile], "floor-cycle-ms")
					b.ReportMetric(cycle[floorProfile]/cycle[koordProfile], "floor-ratio")
					b.ReportMetric(r.searchedBy[floorProfile], "floor-filtered-nodes/pod")
				}
				b.ReportMetric(filterOwnMs(r.own), "koord-filter-own-ms")
				b.ReportMetric(r.searchedBy[stockProfile], "stock-filtered-nodes/pod")
				b.ReportMetric(r.searchedBy[koordProfile], "koord-filtered-nodes/pod")
				b.ReportMetric(r.avg, "pods/s")
				b.ReportMetric(r.cpuMs, "cpu-ms/pod")
				b.ReportMetric(0, "ns/op")
			})
		}
		reportPaired(b, rep, results)
	}
}

// rotating is m with its blocks of ten pods (0–9, 10–19, ...) taking turns
// between profiles: the realistic mix picks a pod's kind by i mod 10, so
// each profile gets the whole mix, and the reservation owners of the stock
// and floor blocks stay unconsumed, held against every other pod.
func (m *mix) rotating(profiles []string) *mix {
	out := *m
	out.pod = func(namespace string, i int) *corev1.Pod {
		p := m.pod(namespace, i)
		p.Spec.SchedulerName = profiles[(i/10)%len(profiles)]
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

// reportPaired prints, per mix, each profile's time per pod in each
// extension point and the cycle's ratios, and appends it to
// $KOORD_PERF_REPORT.
func reportPaired(b *testing.B, rep int, results []result) {
	if len(results) == 0 {
		return
	}
	out := fmt.Sprintf("\nThree profiles in one scheduler: time per scheduled pod in each extension point, ms (mean); the cycle is %v.\n\n| mix | point | stock | floor | Koord |\n|---|---|---|---|---|\n", cyclePoints)
	for _, r := range results {
		var points []string
		for _, prof := range pairedProfiles {
			for p := range r.cycles[prof] {
				if !slices.Contains(points, p) {
					points = append(points, p)
				}
			}
		}
		slices.SortFunc(points, func(a, b string) int {
			if d := pointOrder(a) - pointOrder(b); d != 0 {
				return d
			}
			return strings.Compare(a, b)
		})
		for _, p := range points {
			out += fmt.Sprintf("| %s | %s | %.3f | %.3f | %.3f |\n", r.mix, p, r.cycles[stockProfile][p], r.cycles[floorProfile][p], r.cycles[koordProfile][p])
		}
		for _, k := range slices.Sorted(maps.Keys(r.own)) {
			out += fmt.Sprintf("| %s | %s, the plugin's own time%s | | | %.3f |\n", r.mix, k, sampledNote(k), r.own[k])
		}
		out += fmt.Sprintf("| %s | nodes filtered a pod | %.0f | %.0f | %.0f |\n", r.mix, r.searchedBy[stockProfile], r.searchedBy[floorProfile], r.searchedBy[koordProfile])
		stock, floor, koord := cycleMs(r.cycles[stockProfile]), cycleMs(r.cycles[floorProfile]), cycleMs(r.cycles[koordProfile])
		out += fmt.Sprintf("| %s | **cycle** | **%.3f** | **%.3f** | **%.3f** (stock/Koord %.2f, floor/Koord %.2f, target %.2f) |\n",
			r.mix, stock, floor, koord, stock/koord, floor/koord, floorTargets[r.mix])
	}
	publish(b, fmt.Sprintf("Paired repetition %d", rep), out)
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
