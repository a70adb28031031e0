package cpusuppress

import (
	"testing"
	"time"

	"k8s.io/utils/cpuset"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

// eight CPUs: core c has threads c and c+4; cores 0-1 on NUMA node 0, 2-3 on 1.
func eight() []CPU {
	var out []CPU
	for id := 0; id < 8; id++ {
		core := id % 4
		out = append(out, CPU{ID: id, Core: core, Node: core / 2})
	}
	return out
}

func TestDecide(t *testing.T) {
	base := Input{Policy: slov1alpha1.CPUSetPolicy, ThresholdPercent: 65, CapacityMilli: 8000, ReservedMilli: 200,
		NodeUsedMilli: 3500, PodsUsedMilli: 3000, NonBEUsedMilli: 2000, Pool: cpuset.New(0, 1, 2, 3, 4, 5, 6, 7), CPUs: eight(), GuardStepPercent: 10}
	for _, c := range []struct {
		name      string
		mutate    func(*Input)
		wantMilli int64
		wantCPUs  int
	}{
		// Koordinator's formula: 8 × 65 % − 2 (LS) − max(0.5 system, 0.2 reserved) = 2.7.
		{"formula", func(*Input) {}, 2700, 2},
		{"reserved above system", func(in *Input) { in.ReservedMilli = 1000 }, 2200, 2},
		{"busy LS: the floor of one CPU", func(in *Input) { in.NonBEUsedMilli = 5000 }, 1000, 1},
		{"busy LS, cfsQuota: the floor of 0.1 CPU", func(in *Input) { in.NonBEUsedMilli = 5000; in.Policy = slov1alpha1.CPUCfsQuotaPolicy }, 100, 0},
		{"cpuSuppressMinPercent above the floor", func(in *Input) { in.NonBEUsedMilli = 5000; in.MinPercent = 25 }, 2000, 2},
		{"two guard steps take 20 % of the node", func(in *Input) { in.GuardSteps = 2 }, 1100, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := base
			c.mutate(&in)
			r := Decide(in)
			if r.AllowedMilli != c.wantMilli || r.CPUs.Size() != c.wantCPUs {
				t.Errorf("allowed %d on %s, want %d on %d CPUs", r.AllowedMilli, r.CPUs, c.wantMilli, c.wantCPUs)
			}
		})
	}
}

// A fall is followed at once, a rise after two decisions ask for it.
func TestDecideFollowsWithinTwoIntervals(t *testing.T) {
	in := Input{Policy: slov1alpha1.CPUCfsQuotaPolicy, ThresholdPercent: 100, CapacityMilli: 8000}
	step := func(lsUsed int64) int64 {
		in.NonBEUsedMilli = lsUsed
		r := Decide(in)
		in.Prev = &r
		return r.AllowedMilli
	}
	if got := step(2000); got != 6000 {
		t.Fatalf("start %d", got)
	}
	if got := step(6000); got != 2000 {
		t.Errorf("LS up: BE %d at once, want 2000", got)
	}
	if got := step(2000); got != 2000 {
		t.Errorf("one quiet sample: BE %d, want it held at 2000", got)
	}
	if got := step(2000); got != 6000 {
		t.Errorf("second quiet sample: BE %d, want 6000", got)
	}
	if got, again := step(1000), step(6000); got != 6000 || again != 2000 {
		t.Errorf("a spike between: %d then %d", got, again)
	}
}

// Whole cores first, spread over NUMA nodes from the highest core, never
// the sibling of a bound CPU while whole cores remain; what BE had is kept.
func TestPick(t *testing.T) {
	pool := cpuset.New(1, 2, 3, 4, 5, 6, 7) // CPU 0 is bound: its sibling 4 is not a whole core
	for _, c := range []struct {
		n    int
		prev cpuset.CPUSet
		want string
	}{
		{2, cpuset.New(), "1,5"},
		{3, cpuset.New(), "1,3,5"},
		{4, cpuset.New(), "1,3,5,7"},
		{6, cpuset.New(), "1-3,5-7"},
		{7, cpuset.New(), "1-7"},
		{9, cpuset.New(), "1-7"},
		{2, cpuset.New(2, 6), "2,6"},
	} {
		if got := Pick(pool, eight(), c.n, c.prev); got.String() != c.want {
			t.Errorf("n=%d prev=%s: %s, want %s", c.n, c.prev, got, c.want)
		}
	}
}

func TestGuardSteps(t *testing.T) {
	g := nodeslo.Guard{Enable: true, TargetP99: time.Millisecond, StepPercent: 10, MinWaits: 100}
	steps := int64(0)
	for i, c := range []struct {
		p99   time.Duration
		waits uint64
		want  int64
	}{
		{2 * time.Millisecond, 500, 1},
		{2 * time.Millisecond, 500, 2},
		{2 * time.Millisecond, 50, 2},    // too few waits to count
		{800 * time.Microsecond, 500, 2}, // under the target but not under half: hold
		{400 * time.Microsecond, 500, 1},
		{100 * time.Microsecond, 500, 0},
		{100 * time.Microsecond, 500, 0},
	} {
		steps = GuardSteps(g, 65, steps, c.p99, c.waits)
		if steps != c.want {
			t.Errorf("interval %d (p99 %s, %d waits): %d steps, want %d", i, c.p99, c.waits, steps, c.want)
		}
	}
	for i := 0; i < 20; i++ {
		steps = GuardSteps(g, 65, steps, time.Second, 1000)
	}
	if steps != 7 {
		t.Errorf("steps stop once the threshold is gone: %d, want 7", steps)
	}
	g.Enable = false
	if GuardSteps(g, 65, 3, time.Second, 1000) != 0 {
		t.Error("a guard turned off keeps its steps")
	}
}
