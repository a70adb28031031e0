package recommender

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
)

var rec = types.NamespacedName{Namespace: "default", Name: "web"}

func requests(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// feed adds one sample a minute for n minutes, CPU from cpu(i) and memory
// from mem(i), to container "app" of pod uid.
func feed(m *Model, uid types.UID, t0 time.Time, n int, cpu, mem func(i int) float64) time.Time {
	for i := 0; i < n; i++ {
		m.Add(rec, Sample{Pod: uid, Container: "app", Requests: requests("2", "1Gi"), Start: t0.Add(time.Duration(i) * time.Minute), CPU: cpu(i), Memory: mem(i)})
	}
	return t0.Add(time.Duration(n) * time.Minute)
}

// within checks a recommended quantity against VPA's published behaviour:
// a percentile is the upper bound of its histogram bucket (buckets grow by
// 5 %), plus the 15 % safety margin, and memory rounded up to a MiB. So the
// result lies in [v × 1.15, v × 1.05 × 1.15 + 1 MiB].
func within(t *testing.T, what string, got resource.Quantity, v float64) {
	t.Helper()
	g := got.AsApproximateFloat64()
	lo, hi := v*1.15*0.999, v*1.05*1.15*1.001
	if got.Format == resource.BinarySI {
		hi += 1 << 20
	}
	if g < lo || g > hi {
		t.Errorf("%s = %s (%.4g), want in [%.4g, %.4g]", what, got.String(), g, lo, hi)
	}
}

// CPU samples spread evenly over 0.01–1.00 cores, in shuffled order (with
// decay, later samples weigh more): the target is p95, 0.95 cores, plus the
// margin. Memory holds at 500 MiB: the target is its peak plus the margin.
func TestTargetsFollowPercentiles(t *testing.T) {
	m := NewModel(Defaults())
	if err := m.Track(rec, nil); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	feed(m, "p1", t0, 1000, func(i int) float64 { return float64(i*37%100+1) / 100 }, func(int) float64 { return 500 << 20 })
	res, ok := m.Recommend(rec)
	if !ok || !res.Ready || len(res.Containers) != 1 {
		t.Fatalf("result %+v (tracked %v), want one ready container", res, ok)
	}
	c := res.Containers[0]
	within(t, "cpu target", c.Resources[corev1.ResourceCPU], 0.95)
	within(t, "memory target", c.Resources[corev1.ResourceMemory], 500<<20)
	// The lower bound is the median with the margin (times VPA's confidence
	// factor, 0.998 after 16 hours); 16 hours of history make the upper
	// bound wider than the target.
	within(t, "cpu lower bound", c.LowerBound[corev1.ResourceCPU], 0.5*0.997)
	if up, tg := c.UpperBound.Cpu().AsApproximateFloat64(), c.Resources.Cpu().AsApproximateFloat64(); up <= tg {
		t.Errorf("cpu upper bound %v is not above the target %v with a short history", up, tg)
	}
	// Requests of 2 cores are about 183 % of the target: over-provisioned.
	if p := c.RequestsPercentOfTarget[corev1.ResourceCPU]; p < 170 || p > 185 {
		t.Errorf("cpu requests at %d%% of target, want about 180", p)
	}
	if peak := res.Peaks["app"]; peak.Cpu().AsApproximateFloat64() < 1 || peak.Cpu().AsApproximateFloat64() > 1.06 {
		t.Errorf("cpu peak %v, want the bucket of 1 core", peak.Cpu())
	}
}

// Old samples decay: a container that used 2 cores for a day and then 0.5
// is still recommended 2 cores three days (half-lives) later, when the old
// day still weighs 6.7 % (above the 5 % p95 leaves out), and 0.5 six days
// later, when it weighs under 1 %.
func TestSamplesDecay(t *testing.T) {
	for _, c := range []struct {
		days int
		want float64
	}{{3, 2}, {6, 0.5}} {
		m := NewModel(Defaults())
		_ = m.Track(rec, nil)
		t1 := feed(m, "p1", time.Unix(1_700_000_000, 0), 24*60, func(int) float64 { return 2 }, func(int) float64 { return 500 << 20 })
		feed(m, "p1", t1, c.days*24*60, func(int) float64 { return 0.5 }, func(int) float64 { return 500 << 20 })
		res, _ := m.Recommend(rec)
		if !res.Ready {
			t.Fatalf("not ready: %s", res.Message)
		}
		within(t, fmt.Sprintf("cpu target %d days on", c.days), res.Containers[0].Resources[corev1.ResourceCPU], c.want)
	}
}

func TestNoRecommendationBeforeEnoughData(t *testing.T) {
	cfg := Defaults()
	cfg.MinSamples, cfg.WarmUp = 10, 30*time.Minute
	m := NewModel(cfg)
	if res, ok := m.Recommend(rec); ok || res.Ready {
		t.Fatalf("an untracked recommendation has a result: %+v", res)
	}
	_ = m.Track(rec, nil)
	if res, _ := m.Recommend(rec); res.Ready || res.Reason != "NoSamples" {
		t.Errorf("without samples: %+v, want NoSamples", res)
	}
	t0 := time.Unix(1_700_000_000, 0)
	feed(m, "p1", t0, 20, func(int) float64 { return 1 }, func(int) float64 { return 1 << 30 })
	res, _ := m.Recommend(rec)
	if res.Ready || res.Reason != "NotEnoughData" || len(res.Containers) != 0 || !strings.Contains(res.Message, `"app" has 20 samples over 19m0s`) {
		t.Errorf("20 samples over 19 minutes: %+v, want NotEnoughData naming the container and no recommendation", res)
	}
	feed(m, "p1", t0.Add(20*time.Minute), 11, func(int) float64 { return 1 }, func(int) float64 { return 1 << 30 })
	if res, _ := m.Recommend(rec); !res.Ready || len(res.Containers) != 1 {
		t.Errorf("31 samples over 30 minutes: %+v, want a recommendation", res)
	}
}

// An OOM kill at a 1 GiB limit bumps memory to 1.2 GiB (VPA's 20 %), plus
// the margin, however little the container was seen using.
func TestOOMBumpsMemory(t *testing.T) {
	cfg := Defaults()
	cfg.MinSamples, cfg.WarmUp = 1, 0
	m := NewModel(cfg)
	_ = m.Track(rec, nil)
	t0 := time.Unix(1_700_000_000, 0)
	t1 := feed(m, "p1", t0, 60, func(int) float64 { return 0.2 }, func(int) float64 { return 300 << 20 })
	before, _ := m.Recommend(rec)
	within(t, "memory target before the OOM", before.Containers[0].Resources[corev1.ResourceMemory], 300<<20)
	if err := m.OOM(rec, "p1", "app", requests("2", "1Gi"), t1, 1<<30); err != nil {
		t.Fatal(err)
	}
	after, _ := m.Recommend(rec)
	within(t, "memory target after the OOM", after.Containers[0].Resources[corev1.ResourceMemory], 1.2*(1<<30))
}

// A restarted manager loads the checkpoint and recommends what it did.
func TestCheckpointRoundTrip(t *testing.T) {
	cfg := Defaults()
	m := NewModel(cfg)
	_ = m.Track(rec, nil)
	t0 := time.Unix(1_700_000_000, 0)
	feed(m, "p1", t0, 600, func(i int) float64 { return float64(i%50+1) / 50 }, func(i int) float64 { return float64(200+i%7*50) * (1 << 20) })
	want, _ := m.Recommend(rec)
	cps, err := m.Checkpoints(rec)
	if err != nil || len(cps) != 1 {
		t.Fatalf("checkpoints %v, %v", cps, err)
	}
	// Through JSON, as the API stores it.
	b, _ := json.Marshal(cps)
	var back []analysisv1alpha1.ContainerCheckpoint
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	restarted := NewModel(cfg)
	if err := restarted.Track(rec, back); err != nil {
		t.Fatal(err)
	}
	got, _ := restarted.Recommend(rec)
	if !got.Ready || got.Samples != want.Samples {
		t.Fatalf("after the round trip: ready %v samples %d, want ready with %d", got.Ready, got.Samples, want.Samples)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if g, w := got.Containers[0].Resources[r], want.Containers[0].Resources[r]; g.Cmp(w) != 0 {
			t.Errorf("restored %s target %s, want %s", r, g.String(), w.String())
		}
	}
	// The restarted manager reads the last report again: it is in the
	// checkpoint already and is not counted twice.
	if restarted.Add(rec, Sample{Pod: "p1", Container: "app", Requests: requests("2", "1Gi"), Start: t0.Add(599 * time.Minute), CPU: 1, Memory: 1 << 30}) {
		t.Error("a sample the checkpoint holds was taken again")
	}
	if !restarted.Add(rec, Sample{Pod: "p1", Container: "app", Requests: requests("2", "1Gi"), Start: t0.Add(600 * time.Minute), CPU: 1, Memory: 1 << 30}) {
		t.Error("a sample after the checkpoint was refused")
	}
	// A checkpoint that does not parse is reported by name; the others load.
	bad := append([]analysisv1alpha1.ContainerCheckpoint{}, back...)
	bad = append(bad, analysisv1alpha1.ContainerCheckpoint{ContainerName: "sidecar", Version: back[0].Version, CPUHistogram: analysisv1alpha1.HistogramCheckpoint{TotalWeight: "lots"}})
	third := NewModel(cfg)
	if err := third.Track(rec, bad); err == nil || !strings.Contains(err.Error(), `"sidecar"`) || !strings.Contains(err.Error(), "cpuHistogram.totalWeight") {
		t.Errorf("bad checkpoint: %v, want an error naming the container and the field", err)
	}
	if res, _ := third.Recommend(rec); !res.Ready || len(res.Containers) != 1 {
		t.Errorf("the good checkpoint was lost with the bad one: %+v", res)
	}
}

// Container states go with their pods; the aggregate keeps their samples.
func TestForgetPodBoundsState(t *testing.T) {
	m := NewModel(Defaults())
	_ = m.Track(rec, nil)
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 100; i++ {
		uid := types.UID("pod-" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		feed(m, uid, t0, 2, func(int) float64 { return 1 }, func(int) float64 { return 1 << 30 })
		m.ForgetPod(uid)
	}
	if a, c := m.Size(); a != 1 || c != 0 {
		t.Errorf("after 100 pods came and went: %d aggregates, %d containers; want 1 and 0", a, c)
	}
	// A pod of a forgotten Recommendation going later counts nothing twice.
	feed(m, "late", t0, 2, func(int) float64 { return 1 }, func(int) float64 { return 1 << 30 })
	m.Forget(rec)
	m.ForgetPod("late")
	if a, c := m.Size(); a != 0 || c != 0 || m.Tracked(rec) || len(m.byPod) != 0 {
		t.Errorf("a forgotten recommendation is still tracked: %d aggregates, %d containers, %d pods indexed", a, c, len(m.byPod))
	}
}

func TestConfigValidate(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	c.CPUPercentile = 1.5
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--recommender-cpu-percentile") {
		t.Errorf("percentile 1.5: %v", err)
	}
}

// Checkpoints come from the API: whatever they hold, loading one returns
// an error or loads, never panics.
func FuzzCheckpoint(f *testing.F) {
	f.Add(`{"containerName":"app","version":"v3","cpuHistogram":{"bucketWeights":{"3":10000},"totalWeight":"1.5"}}`)
	f.Add(`{"containerName":"app","version":"v3","memoryHistogram":{"bucketWeights":{"-1":1},"totalWeight":"NaN"}}`)
	f.Add(`{"containerName":"app","version":"v3","cpuHistogram":{"bucketWeights":{"9999":4294967295},"totalWeight":"1e308"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var cp analysisv1alpha1.ContainerCheckpoint
		if json.Unmarshal([]byte(s), &cp) != nil {
			return
		}
		m := NewModel(Defaults())
		_ = m.Track(rec, []analysisv1alpha1.ContainerCheckpoint{cp})
		m.Recommend(rec)
	})
}
