package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const samplePerf = `goos: linux
pkg: github.com/koord-project/koord/test/perf
nodes: 1000
BenchmarkScheduler/rep=1/stock-2         	       1	        26.8 attempt-p50-ms	       121.6 attempt-p99-ms	       722.2 heap-MB	         1.00 attempts/pod	       4.0 cpu-ms/pod	       200 alloc-KB/pod	       774 filtered-nodes/pod	       272.0 p50-pods/s	       200.0 pods/s
BenchmarkScheduler/rep=1/all-2           	       1	        37.5 attempt-p50-ms	       126.5 attempt-p99-ms	       767.8 heap-MB	         1.00 attempts/pod	       5.0 cpu-ms/pod	       300 alloc-KB/pod	       880 filtered-nodes/pod	       220.0 p50-pods/s	       190.0 pods/s
BenchmarkScheduler/rep=1/plain/stock-2   	       1	        20 attempt-p50-ms	       100 attempt-p99-ms	       700 heap-MB	       300 p50-pods/s	       300 pods/s
BenchmarkScheduler/rep=1/plain/all-2     	       1	        20 attempt-p50-ms	       100 attempt-p99-ms	       700 heap-MB	       300 p50-pods/s	       297 pods/s
BenchmarkScheduler/rep=2/stock-2         	       1	        26.8 attempt-p50-ms	       121.6 attempt-p99-ms	       722.2 heap-MB	         1.00 attempts/pod	       4.0 cpu-ms/pod	       200 alloc-KB/pod	       774 filtered-nodes/pod	       272.0 p50-pods/s	       100.0 pods/s
BenchmarkScheduler/rep=2/all-2           	       1	        37.5 attempt-p50-ms	       126.5 attempt-p99-ms	       767.8 heap-MB	         1.10 attempts/pod	       6.0 cpu-ms/pod	       260 alloc-KB/pod	       900 filtered-nodes/pod	       220.0 p50-pods/s	       80.0 pods/s
BenchmarkScheduler/rep=2/plain/stock-2   	       1	        20 attempt-p50-ms	       100 attempt-p99-ms	       700 heap-MB	       300 p50-pods/s	       300 pods/s
BenchmarkScheduler/rep=2/plain/all-2     	       1	        20 attempt-p50-ms	       100 attempt-p99-ms	       700 heap-MB	       300 p50-pods/s	       240 pods/s
BenchmarkScheduler/rep=3/stock-2         	       1	        26.8 attempt-p50-ms	       121.6 attempt-p99-ms	       722.2 heap-MB	         1.00 attempts/pod	       4.0 cpu-ms/pod	       200 alloc-KB/pod	       774 filtered-nodes/pod	       272.0 p50-pods/s	       150.0 pods/s
BenchmarkScheduler/rep=3/all-2           	       1	        37.5 attempt-p50-ms	       126.5 attempt-p99-ms	       767.8 heap-MB	         1.02 attempts/pod	       4.4 cpu-ms/pod	       220 alloc-KB/pod	       870 filtered-nodes/pod	       220.0 p50-pods/s	       135.0 pods/s
`

const sampleMicro = `pkg: github.com/koord-project/koord/pkg/plugins/loadaware
BenchmarkFilter/LoadAwareScheduling-2         	18946042	        66 ns/op	       0 B/op	       0 allocs/op
BenchmarkFilter/NodeResourcesFit-2            	 4885592	       226 ns/op	     256 B/op	       1 allocs/op
BenchmarkFilter/LoadAwareScheduling-2         	18946042	        70 ns/op	       0 B/op	       0 allocs/op
BenchmarkFilter/NodeResourcesFit-2            	 4885592	       220 ns/op	     256 B/op	       1 allocs/op
pkg: github.com/koord-project/koord/pkg/plugins/numaresource
BenchmarkScore/NodeNUMAResource-2          	24571605	        200 ns/op	       0 B/op	       0 allocs/op
BenchmarkScore/NodeResourcesFit-2          	24571605	        100 ns/op	       48 B/op	       3 allocs/op
`

// generate writes the inputs into dir (perf.txt, micro.txt, doc.md), runs
// benchdoc over them and returns the document it wrote.
func generate(t *testing.T, dir, perf, micro, doc string, compare ...string) string {
	t.Helper()
	files := map[string]string{"perf.txt": perf, "micro.txt": micro, "doc.md": doc, "compare.txt": strings.Join(compare, "")}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(filepath.Join(dir, "doc.md"), filepath.Join(dir, "perf.txt"), filepath.Join(dir, "micro.txt"), "", "", "", filepath.Join(dir, "compare.txt"), "make bench", "docs/bench", "today", false); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "doc.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// requireContains reports each of wants that text lacks.
func requireContains(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("section lacks %q:\n%s", want, text)
		}
	}
}

// Ratios are taken within each repetition (the machine drifts between
// them), then the median; targets are judged on that median.
func TestSection(t *testing.T) {
	dir := t.TempDir()
	text := generate(t, dir, samplePerf, sampleMicro, "# Benchmarks\n\nanalysis stays\n")
	requireContains(t, text,
		"analysis stays",
		"3 repetitions",
		// all/stock: 0.95, 0.80, 0.90 → median 0.90; pods/s median 135 (80–190).
		"| all | realistic | 135 (80–190) | 0.90 |",
		// Medians of 1.00/1.10/1.02 and 880/900/870; CPU per pod 5.0, 6.0,
		// 4.4 against stock's 4.0: median 5.00, ratios 1.25, 1.5, 1.1 →
		// 1.25. Allocated 300/260/220 KB against 200: median 260, ratio
		// 1.30. Runs without the figures (plain here) show a dash.
		"| 1.02 | 880 | 5.00 | 1.25 | 260 | 1.30 |\n",
		"| 700 | — | — | — | — | — | — |\n",
		"every Koord plugin, realistic mix (`all`) ≥ 0.90×: 0.90×, met",
		// plain: 0.99 and 0.80 → median 0.895.
		"(`plain/all`) ≥ 0.97×: 0.90×, **missed**",
		"(`binding/all`) ≥ 0.80×: not measured",
		"| loadaware | Filter | LoadAwareScheduling | 68 | 0 | 223 | 0.30× | met |",
		"| numaresource | Score | NodeNUMAResource | 200 | 0 | 100 | 2.00× | **missed** |",
	)
	// A second run replaces the section instead of adding one.
	again := generate(t, dir, samplePerf, sampleMicro, text)
	if strings.Count(again, begin) != 1 || again != text {
		t.Errorf("the second run changed the document:\n%s", again)
	}
}

const samplePaired = `pkg: github.com/koord-project/koord/test/perf
BenchmarkPaired/rep=1/realistic-2   	       1	         0.75 cycle-ratio	         1.20 floor-cycle-ms	         0.86 floor-ratio	         0.30 koord-filter-own-ms	         1.40 koord-cycle-ms	       456 koord-filtered-nodes/pod	         1.05 stock-cycle-ms	       421 stock-filtered-nodes/pod
BenchmarkPaired/rep=1/plain-2       	       1	         0.90 cycle-ratio	         1.05 floor-cycle-ms	         0.95 floor-ratio	         0.10 koord-filter-own-ms	         1.10 koord-cycle-ms	       421 koord-filtered-nodes/pod	         0.99 stock-cycle-ms	       421 stock-filtered-nodes/pod
BenchmarkPaired/rep=2/realistic-2   	       1	         0.79 cycle-ratio	         1.26 floor-cycle-ms	         0.97 floor-ratio	         0.20 koord-filter-own-ms	         1.30 koord-cycle-ms	       458 koord-filtered-nodes/pod	         1.03 stock-cycle-ms	       421 stock-filtered-nodes/pod
BenchmarkPaired/rep=2/plain-2       	       1	         0.92 cycle-ratio	         0.97 floor-cycle-ms	         0.97 floor-ratio	         0.12 koord-filter-own-ms	         1.00 koord-cycle-ms	       421 koord-filtered-nodes/pod	         0.92 stock-cycle-ms	       421 stock-filtered-nodes/pod
`

// Paired runs get their own table, a row per mix with the medians over the
// repetitions and the floor target judged on the floor ratio's median; the
// separate cases' table does not take them for cases.
func TestPairedSection(t *testing.T) {
	text := generate(t, t.TempDir(), samplePerf+samplePaired, "", "")
	requireContains(t, text,
		"`BenchmarkPaired`, 2 repetitions",
		// Floor ratios 0.86 and 0.97 → median 0.915, under 0.92.
		"| realistic | 1.04 (1.03–1.05) | 1.23 (1.20–1.26) | 1.35 (1.30–1.40) | 0.77 (0.75–0.79) | 0.92 (0.86–0.97) | 0.92, **missed** | 0.250 (0.200–0.300) | 421 (421–421) | 457 (456–458) |",
		"| plain | 0.96 (0.92–0.99) | 1.01 (0.97–1.05) | 1.05 (1.00–1.10) | 0.91 (0.90–0.92) | 0.96 (0.95–0.97) | 0.95, met |",
		// The separate cases' table still has its 3 repetitions.
		"3 repetitions, cases interleaved",
	)
	if strings.Contains(text, "| realistic | realistic |") || strings.Contains(text, "BenchmarkPaired/") {
		t.Errorf("a paired run is listed as a case:\n%s", text)
	}
}

// The comparison with a base commit takes each commit's runs by the
// "commit:" line before them and judges the change of the median ratio.
func TestComparedSection(t *testing.T) {
	cmp := `base: d984624
commit: base
BenchmarkPaired/rep=1/realistic-2   	       1	         0.77 cycle-ratio	         3.4 koord-cycle-ms	         0.30 koord-filter-own-ms
BenchmarkPaired/rep=1/binding-2   	       1	         0.70 cycle-ratio	         5.0 koord-cycle-ms	         0.70 koord-filter-own-ms
commit: head
BenchmarkPaired/rep=1/realistic-2   	       1	         0.76 cycle-ratio	         3.5 koord-cycle-ms	         0.32 koord-filter-own-ms
BenchmarkPaired/rep=1/binding-2   	       1	         0.60 cycle-ratio	         6.0 koord-cycle-ms	         1.20 koord-filter-own-ms
commit: head
BenchmarkPaired/rep=1/realistic-2   	       1	         0.78 cycle-ratio	         3.3 koord-cycle-ms	         0.31 koord-filter-own-ms
BenchmarkPaired/rep=1/binding-2   	       1	         0.62 cycle-ratio	         5.8 koord-cycle-ms	         1.10 koord-filter-own-ms
commit: base
BenchmarkPaired/rep=1/realistic-2   	       1	         0.77 cycle-ratio	         3.4 koord-cycle-ms	         0.30 koord-filter-own-ms
BenchmarkPaired/rep=1/binding-2   	       1	         0.72 cycle-ratio	         5.0 koord-cycle-ms	         0.70 koord-filter-own-ms
`
	text := generate(t, t.TempDir(), samplePerf, "", "", cmp)
	requireContains(t, text,
		"2 runs each, interleaved",
		"| realistic | 0.77 (0.77–0.77) | 0.77 (0.76–0.78) | +0.00, met |",
		"| binding | 0.71 (0.70–0.72) | 0.61 (0.60–0.62) | -0.10, **missed** |",
	)
}

// Cluster-size cases: a row per size and profile, Koord's heap a node only
// on its own rows.
func TestScaleSection(t *testing.T) {
	perf := samplePerf + `BenchmarkScale/rep=1/1000/stock-2 	1	2.0 cycle-ms/pod	4.0 cycle-us/node	500 filtered-nodes/pod	140 heap-KB/node	136 heap-MB	390 pods/s
BenchmarkScale/rep=1/1000/all-2 	1	3.0 cycle-ms/pod	6.0 cycle-us/node	500 filtered-nodes/pod	150 heap-KB/node	146 heap-MB	10.2 koord-heap-KB/node	300 pods/s
`
	text := generate(t, t.TempDir(), perf, "", "")
	requireContains(t, text,
		"`BenchmarkScale`, 1 repetitions",
		"| 1000 | stock | 390 | 136 | 140 | — | 2.00 | 500 | 4.00 |",
		"| 1000 | Koord | 300 | 146 | 150 | 10.2 | 3.00 | 500 | 6.00 |",
	)
}

// A paired result without a mix is an error naming it, as a separate case
// without one is, not a row quietly left out.
func TestPairedNameWithoutCase(t *testing.T) {
	dir := t.TempDir()
	perf := filepath.Join(dir, "perf.txt")
	bad := "BenchmarkPaired/rep=1-2   	       1	         0.75 cycle-ratio\n"
	if err := os.WriteFile(perf, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(filepath.Join(dir, "doc.md"), perf, "", "", "", "", "", "make bench", "docs/bench", "today", true)
	if err == nil || !strings.Contains(err.Error(), "BenchmarkPaired/rep=1") {
		t.Errorf("err = %v, want one naming BenchmarkPaired/rep=1", err)
	}
}
