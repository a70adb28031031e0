// Package perf measures koord-scheduler side by side with stock
// kube-scheduler: the same nodes and the same pods, scheduled by one profile
// per case, in one process, cases interleaved across -count repetitions so
// that the machine's drift touches all alike. See README.md.
package perf

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/yaml"

	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/manifests"
)

// perfCase is one scheduler profile, the shipped koord-scheduler profile with
// only these Koord plugins left in (none: stock kube-scheduler), scheduling
// one mix of pods. Its ratio is to stock on the same mix.
type perfCase struct {
	name    string
	plugins []string
	mix     *mix
}

var sizesOnce sync.Once

var allPlugins = []string{"LoadAwareScheduling", "Reservation", "NodeNUMAResource"}

// cases in the order a repetition runs them (reversed every other one).
// Each case a target is set for comes right after its stock, so both run
// within a minute of each other in either direction: this machine can
// change speed for minutes at a time, and a ratio taken across such a change
// measures the machine. The single-plugin cases follow.
var cases = []perfCase{
	{"stock", nil, &realistic},
	{"all", allPlugins, &realistic},
	{"LoadAwareScheduling", []string{"LoadAwareScheduling"}, &realistic},
	{"NodeNUMAResource", []string{"NodeNUMAResource"}, &realistic},
	{"Reservation", []string{"Reservation"}, &realistic},
	{"plain/stock", nil, &plain},
	{"plain/all", allPlugins, &plain},
	{"binding/stock", nil, &binding},
	{"binding/all", allPlugins, &binding},
	{"gang/stock", nil, &gang},
	{"gang/Coscheduling", []string{"Coscheduling"}, &gang},
	{"quota/stock", nil, &quotaMix},
	{"quota/ElasticQuota", []string{"ElasticQuota"}, &quotaMix},
}

// profile is the shipped scheduler configuration narrowed to keep's Koord
// plugins, with their shipped args.
func profile(keep []string) ([]byte, error) {
	return schedulerConfig(namedProfile{"koord-scheduler", keep})
}

// namedProfile is the shipped profile narrowed to keep's Koord plugins (none:
// stock kube-scheduler), under schedulerName.
type namedProfile struct {
	schedulerName string
	keep          []string
}

// schedulerConfig is the shipped scheduler configuration with one profile
// per p, each cut from the shipped profile.
func schedulerConfig(ps ...namedProfile) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(manifests.SchedulerConfig, &cfg); err != nil {
		return nil, err
	}
	var out []any
	for _, np := range ps {
		// A fresh copy of the shipped profile for each: narrowing edits it.
		var shipped map[string]any
		if err := yaml.Unmarshal(manifests.SchedulerConfig, &shipped); err != nil {
			return nil, err
		}
		profiles, _ := shipped["profiles"].([]any)
		if len(profiles) != 1 {
			return nil, fmt.Errorf("shipped scheduler config has %d profiles, want 1", len(profiles))
		}
		p := profiles[0].(map[string]any)
		narrow(p, np.keep)
		p["schedulerName"] = np.schedulerName
		out = append(out, p)
	}
	cfg["profiles"] = out
	return yaml.Marshal(cfg)
}

// narrow leaves only keep's Koord plugins, and their args, in profile p.
func narrow(p map[string]any, keep []string) {
	plugins := p["plugins"].(map[string]any)
	for point, v := range plugins {
		set, _ := v.(map[string]any)
		enabled, _ := set["enabled"].([]any)
		var kept []any
		for _, e := range enabled {
			if slices.Contains(keep, e.(map[string]any)["name"].(string)) {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(plugins, point)
		} else {
			set["enabled"] = kept
		}
	}
	// ElasticQuota takes DefaultPreemption's place in the shipped profile:
	// without it, DefaultPreemption is back, as in stock kube-scheduler.
	if mp, ok := plugins["multiPoint"].(map[string]any); ok && !slices.Contains(keep, "ElasticQuota") {
		delete(mp, "disabled")
	}
	var args []any
	for _, a := range p["pluginConfig"].([]any) {
		if slices.Contains(keep, a.(map[string]any)["name"].(string)) {
			args = append(args, a)
		}
	}
	p["pluginConfig"] = args
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// result is one case of one repetition.
type result struct {
	name, mix              string
	pods                   int     // measured
	avg, p50               float64 // pods/s: all measured pods / time; median of 1-second windows
	attemptP50, attemptP99 float64 // ms
	heapMB                 float64
	attempts               float64            // scheduling attempts per measured pod (1: none retried)
	searched               float64            // nodes Filter ran on per measured pod
	points                 map[string]float64 // extension point → p99 ms
	plugins                map[string]float64 // plugin/extension point → p99 ms
	// cpuMs is the process's CPU time (user + system) per measured pod: API
	// server, etcd, scheduler and pod creators together. When the process
	// keeps every core busy, throughput is about cores / cpuMs: this tells
	// a case that costs more CPU from one that waits more.
	cpuMs float64
	// allocKB is what the process allocated per measured pod: the garbage
	// collector's work grows with it, whoever allocated.
	allocKB float64
	// cycles is, per profile (schedulerName) and extension point, the time
	// spent in that point per pod the profile scheduled, in ms: the mean,
	// from the histogram's sum, not a quantile.
	cycles map[string]map[string]float64
	// searchedBy is searched per profile: per pod that profile scheduled.
	searchedBy map[string]float64
	// own is each Koord plugin's time per pod its profile scheduled, by
	// "plugin/extension point", in ms: the mean of a call (the scheduler
	// times one cycle in ten, and keeps 1000 timings a second: see
	// BenchmarkPaired) times the calls a pod took.
	own map[string]float64
}

// BenchmarkScheduler runs every case once per repetition, the cases of a
// repetition one after another, so that the machine's drift touches all
// alike (go test's -count would repeat each case back to back instead), in
// the opposite order every other repetition, so that no case is always the
// one run later, after the others' garbage and on a machine drifting one
// way: use
// -test.benchtime=1x and KOORD_PERF_REPETITIONS (default 1). Cases are named
// rep=<n>/<case>; `benchstat -ignore /rep` summarises across repetitions.
// Sizes: KOORD_PERF_NODES (default 1000), KOORD_PERF_PODS (measured pods,
// default 8000), KOORD_PERF_WARMUP (500); a mix that cannot fit that many
// pods on the nodes gets more nodes, up to holding KOORD_PERF_MIN_PODS
// measured pods (3500: about 15 seconds here), and runs fewer pods past that
// (see mix.sized). KOORD_PERF_CASES, a regular expression, picks cases by
// name.
func BenchmarkScheduler(b *testing.B) {
	sz, pick := fromEnv(b)
	for rep := 1; rep <= envInt("KOORD_PERF_REPETITIONS", 1); rep++ {
		var results []result
		for _, c := range inOrder(cases, rep) {
			if !pick.MatchString(c.name) {
				continue
			}
			b.Run(fmt.Sprintf("rep=%d/%s", rep, c.name), func(b *testing.B) {
				cfg, err := profile(c.plugins)
				if err != nil {
					b.Fatal(err)
				}
				r := runCase(b, c.name, cfg, c.mix, c.mix.sized(sz))
				results = append(results, r)
				b.ReportMetric(r.avg, "pods/s")
				b.ReportMetric(r.p50, "p50-pods/s")
				b.ReportMetric(r.attemptP50, "attempt-p50-ms")
				b.ReportMetric(r.attemptP99, "attempt-p99-ms")
				b.ReportMetric(r.heapMB, "heap-MB")
				b.ReportMetric(r.attempts, "attempts/pod")
				b.ReportMetric(r.searched, "filtered-nodes/pod")
				b.ReportMetric(r.cpuMs, "cpu-ms/pod")
				b.ReportMetric(r.allocKB, "alloc-KB/pod")
				b.ReportMetric(0, "ns/op") // one run of the whole case, not an op
			})
		}
		slices.SortStableFunc(results, func(a, b result) int { return caseIndex(a.name) - caseIndex(b.name) })
		report(b, rep, results)
	}
}

// fromEnv reads the sizes and KOORD_PERF_CASES (see BenchmarkScheduler),
// and prints the sizes once.
func fromEnv(b *testing.B) (size, *regexp.Regexp) {
	sz := size{nodes: envInt("KOORD_PERF_NODES", 1000), measuredPods: envInt("KOORD_PERF_PODS", 8000), warmupPods: envInt("KOORD_PERF_WARMUP", 500),
		minMeasured: envInt("KOORD_PERF_MIN_PODS", 3500)}
	pick, err := regexp.Compile(os.Getenv("KOORD_PERF_CASES"))
	if err != nil {
		b.Fatalf("KOORD_PERF_CASES: %v", err)
	}
	// benchstat reads "key: value" lines as the configuration of the
	// results that follow.
	sizesOnce.Do(func() {
		fmt.Printf("nodes: %d\nwarmup-pods: %d\nmeasured-pods: %d\n", sz.nodes, sz.warmupPods, sz.measuredPods)
	})
	return sz, pick
}

// inOrder is the order repetition rep runs the cases in: as listed in odd
// repetitions, reversed in even ones.
func inOrder(cs []perfCase, rep int) []perfCase {
	out := slices.Clone(cs)
	if rep%2 == 0 {
		slices.Reverse(out)
	}
	return out
}

func caseIndex(name string) int {
	return slices.IndexFunc(cases, func(c perfCase) bool { return c.name == name })
}

// runCase schedules sz's pods of m with the scheduler configuration cfg on a
// new cluster, and measures the measured phase.
func runCase(b *testing.B, name string, cfg []byte, m *mix, sz size, opts ...kubeschedulerapp.Option) result {
	for b.Loop() {
		// One iteration (-benchtime=1x); the loop is what testing wants.
	}
	// The control plane logs through klog (to a file, see TestMain): a
	// benchmark's log is for results.
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Stop()
	// Cancelled before the control plane stops: the harness's watches
	// would otherwise hold kube-apiserver's shutdown for a minute.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube, koord, err := clients(cp)
	if err != nil {
		b.Fatal(err)
	}
	progress("%s: control plane up", name)
	if err := buildNodes(ctx, cp, sz.nodes); err != nil {
		b.Fatal(err)
	}
	progress("%s: %d nodes", name, sz.nodes)
	owners := (sz.warmupPods + sz.measuredPods + 9) / 10
	if err := buildReservations(ctx, koord, owners, sz.nodes); err != nil {
		b.Fatal(err)
	}
	sched, err := cp.StartScheduler(ctx, cfg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	progress("%s: scheduler started", name)
	defer sched.Stop()
	ns := "perf"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if m.setup != nil {
		if err := m.setup(ctx, koord, ns); err != nil {
			b.Fatal(err)
		}
	}
	bound, err := watchBound(ctx, kube, ns)
	if err != nil {
		b.Fatal(err)
	}
	waitBound := func(want int, timeout time.Duration) {
		deadline := time.Now().Add(timeout)
		for bound.bound.Load() < int64(want) {
			if time.Now().After(deadline) {
				b.Fatalf("%s: %d of %d pods bound after %s; %s", name, bound.bound.Load(), want, timeout, unscheduled(ctx, kube, ns))
			}
			if err := sched.Err(); err != nil {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Warm-up: caches, informers, the first cycles.
	if err := createPods(ctx, kube, ns, m, 0, sz.warmupPods); err != nil {
		b.Fatal(err)
	}
	waitBound(sz.warmupPods, 5*time.Minute)
	progress("%s: warm-up done", name)

	names := []string{"scheduler_scheduling_attempt_duration_seconds", "scheduler_framework_extension_point_duration_seconds", "scheduler_plugin_execution_duration_seconds"}
	counted := []string{"scheduler_plugin_evaluation_total", "scheduler_schedule_attempts_total"}
	before, beforeCounts, err := gather(append(names, counted...)...)
	if err != nil {
		b.Fatal(err)
	}
	total := sz.warmupPods + sz.measuredPods
	cpuStart, err := processCPU()
	if err != nil {
		b.Fatal(err)
	}
	allocStart := allocatedBytes()
	stopProfile, err := startCPUProfile(os.Getenv("KOORD_PERF_CPU_PROFILES"), name)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	created := make(chan error, 1)
	go func() { created <- createPods(ctx, kube, ns, m, sz.warmupPods, total) }()
	var windows []float64
	last, lastProgress := bound.bound.Load(), time.Now()
	for tick := time.NewTicker(time.Second); bound.bound.Load() < int64(total); {
		select {
		case err := <-created:
			if err != nil {
				b.Fatal(err)
			}
		case <-tick.C:
			now := bound.bound.Load()
			windows = append(windows, float64(now-last))
			if now > last {
				lastProgress = time.Now()
			} else if time.Since(lastProgress) > 30*time.Second {
				b.Fatalf("%s: stuck at %d of %d pods bound; %s", name, now, total, unscheduled(ctx, kube, ns))
			}
			last = now
			if err := sched.Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Unix(0, bound.last.Load()).Sub(start)
	cpuEnd, err := processCPU()
	if err != nil {
		b.Fatal(err)
	}
	allocEnd := allocatedBytes()
	if err := stopProfile(); err != nil {
		b.Fatal(err)
	}
	after, afterCounts, err := gather(append(names, counted...)...)
	if err != nil {
		b.Fatal(err)
	}
	// Live heap of the whole process (API server, etcd, scheduler, this
	// harness) at the end of the measured phase, after a collection: what
	// earlier cases left behind is garbage by now and not counted.
	runtime.GC()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	if dir := os.Getenv("KOORD_PERF_HEAP_PROFILES"); dir != "" {
		if err := writeHeapProfile(filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".heap")); err != nil {
			b.Fatal(err)
		}
	}

	r := result{name: name, mix: m.name, pods: sz.measuredPods, avg: float64(sz.measuredPods) / elapsed.Seconds(), p50: median(windows), heapMB: float64(mem.HeapInuse) / (1 << 20),
		points: map[string]float64{}, plugins: map[string]float64{}}
	r.cpuMs = float64(cpuEnd-cpuStart) / float64(time.Millisecond) / float64(sz.measuredPods)
	r.allocKB = float64(allocEnd-allocStart) / 1024 / float64(sz.measuredPods)
	r.attempts = afterCounts.sum(beforeCounts, counted[1]) / float64(sz.measuredPods)
	// Every Filter plugin without a PreFilter skip sees every node searched,
	// so the most evaluated one counts the nodes searched.
	r.searched = afterCounts.most(beforeCounts, counted[0], "extension_point=Filter") / float64(sz.measuredPods)
	attempts := after.since(before, names[0], "result=scheduled")
	r.attemptP50, r.attemptP99 = attempts.quantile(0.5)*1000, attempts.quantile(0.99)*1000
	for _, point := range after.labelValues(names[1], "extension_point") {
		if d := after.since(before, names[1], "extension_point="+point); d.total > 0 {
			r.points[point] = d.quantile(0.99) * 1000
		}
	}
	r.cycles, r.searchedBy = map[string]map[string]float64{}, map[string]float64{}
	scheduledBy := map[string]float64{}
	for _, prof := range after.labelValues(names[1], "profile") {
		scheduled := afterCounts.sum(beforeCounts, counted[1], "profile="+prof, "result=scheduled")
		if scheduled == 0 {
			continue
		}
		scheduledBy[prof] = scheduled
		r.searchedBy[prof] = afterCounts.most(beforeCounts, counted[0], "extension_point=Filter", "profile="+prof) / scheduled
		per := map[string]float64{}
		for _, point := range after.labelValues(names[1], "extension_point") {
			if d := after.since(before, names[1], "extension_point="+point, "profile="+prof); d.total > 0 {
				per[point] = d.sum * 1000 / scheduled
			}
		}
		r.cycles[prof] = per
	}
	r.own = map[string]float64{}
	for _, plugin := range allPlugins {
		// Only the points the scheduler counts evaluations of.
		for _, point := range []string{"PreFilter", "Filter", "PreScore", "Score"} {
			d := after.since(before, names[2], "plugin="+plugin, "extension_point="+point)
			if d.total == 0 {
				continue
			}
			// A Koord plugin runs in one profile: its calls per pod are
			// per pod of that profile.
			for prof, scheduled := range scheduledBy {
				calls := afterCounts.sum(beforeCounts, counted[0], "plugin="+plugin, "extension_point="+point, "profile="+prof)
				if calls > 0 {
					r.own[plugin+"/"+point] = d.sum / float64(d.total) * calls / scheduled * 1000
				}
			}
		}
	}
	for _, plugin := range after.labelValues(names[2], "plugin") {
		for _, point := range after.labelValues(names[2], "extension_point") {
			if d := after.since(before, names[2], "plugin="+plugin, "extension_point="+point); d.total > 0 {
				r.plugins[plugin+"/"+point] = d.quantile(0.99) * 1000
			}
		}
	}
	return r
}

// allocatedBytes is what the process has allocated on the heap so far (a
// runtime metric: reading it does not stop the world, as ReadMemStats does).
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// processCPU is the CPU time (user + system) the process has used so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// startCPUProfile profiles the measured phase only, into <dir>/<case>.cpu,
// so that two cases' profiles differ by their schedulers and not by the
// setup around them (go tool pprof -diff_base). No dir, no profile. A
// profile of the whole run (-test.cpuprofile) would hold every case.
func startCPUProfile(dir, name string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".cpu"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// writeHeapProfile keeps what is live at the end of the measured phase, by
// where it was allocated (go tool pprof -sample_index=inuse_space).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// progress goes to stderr with the time: setup dominates a case's wall time.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s perf: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[len(s)/2]
}

// report prints this repetition's cases side by side, each with its ratio
// to stock kube-scheduler on the same mix from the same repetition.
func report(b *testing.B, rep int, results []result) {
	stock := map[string]result{}
	for _, r := range results {
		if r.name == "stock" || strings.HasSuffix(r.name, "/stock") {
			stock[r.mix] = r
		}
	}
	ratio := func(r result, f func(result) float64) string {
		s, ok := stock[r.mix]
		if !ok || f(s) == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", f(r)/f(s))
	}
	out := "\n| case | mix | pods | pods/s (avg) | ratio | pods/s (p50 of 1 s) | ratio | attempt p50 ms | attempt p99 ms | heap MB | attempts/pod | nodes filtered/pod | CPU ms/pod | ratio | alloc KB/pod | ratio |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
	for _, r := range results {
		out += fmt.Sprintf("| %s | %s | %d | %.0f | %s | %.0f | %s | %.1f | %.1f | %.0f | %.2f | %.0f | %.2f | %s | %.0f | %s |\n", r.name, r.mix, r.pods,
			r.avg, ratio(r, func(r result) float64 { return r.avg }), r.p50, ratio(r, func(r result) float64 { return r.p50 }), r.attemptP50, r.attemptP99, r.heapMB, r.attempts, r.searched,
			r.cpuMs, ratio(r, func(r result) float64 { return r.cpuMs }), r.allocKB, ratio(r, func(r result) float64 { return r.allocKB }))
	}
	out += "\np99 per extension point, ms:\n\n" + table(results, func(r result) map[string]float64 { return r.points })
	out += "\np99 per plugin and extension point (the scheduler samples 10 percent of cycles), ms; Koord plugins and NodeResourcesFit:\n\n" +
		table(results, func(r result) map[string]float64 { return koordAndFit(r.plugins) })
	publish(b, fmt.Sprintf("Repetition %d", rep), out)
}

// publish prints a repetition's report and appends it, under heading and the
// time, to $KOORD_PERF_REPORT when set. Printed, not logged: testing
// truncates a benchmark's log.
func publish(b *testing.B, heading, out string) {
	fmt.Println(out)
	if path := os.Getenv("KOORD_PERF_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if _, err := fmt.Fprintf(f, "\n#### %s, ended %s\n%s", heading, time.Now().UTC().Format(time.RFC3339), out); err != nil {
			b.Fatal(err)
		}
	}
}

// koordAndFit keeps the rows a reader compares: Koord's plugins beside
// NodeResourcesFit, the in-tree plugin they are held to.
func koordAndFit(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		name, _, _ := strings.Cut(k, "/")
		if name == "NodeResourcesFit" || slices.Contains(allPlugins, name) {
			out[k] = v
		}
	}
	return out
}

// table is a markdown table: one row per key, one column per case.
func table(results []result, values func(result) map[string]float64) string {
	keys := map[string]bool{}
	for _, r := range results {
		for k := range values(r) {
			keys[k] = true
		}
	}
	sortedKeys := slices.Sorted(maps.Keys(keys))
	out := "| |"
	sep := "|---|"
	for _, r := range results {
		out += " " + r.name + " |"
		sep += "---|"
	}
	out += "\n" + sep + "\n"
	for _, k := range sortedKeys {
		out += "| " + k + " |"
		for _, r := range results {
			if v, ok := values(r)[k]; ok {
				out += fmt.Sprintf(" %.2f |", v)
			} else {
				out += " |"
			}
		}
		out += "\n"
	}
	return out
}

// TestMain sends klog (the API servers' and the scheduler's logs) to a file:
// at this scale they would drown the results and cost CPU on the terminal.
func TestMain(m *testing.M) {
	f, err := os.CreateTemp("", "koord-perf-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "legacy_stderr_threshold_behavior": "false"} {
		_ = fs.Set(k, v)
	}
	klog.SetOutput(f)
	fmt.Fprintf(os.Stderr, "perf: control-plane and scheduler logs in %s\n", f.Name())
	code := m.Run()
	klog.Flush()
	f.Close()
	os.Exit(code)
}
