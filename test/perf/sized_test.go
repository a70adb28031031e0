package perf

import (
	"slices"
	"strings"
	"testing"
)

// Every case measures at least minMeasured pods: a mix the nodes hold little
// of gets more nodes; one they hold plenty of keeps the cluster as given.
func TestSized(t *testing.T) {
	sz := size{nodes: 1000, warmupPods: 500, measuredPods: 8000, minMeasured: 3500}
	for _, tc := range []struct {
		m             mix
		nodes, warmup int
		measured      int
	}{
		{realistic, 1000, 500, 8000},
		{plain, 1000, 500, 8000},
		// 1.5 a node: 500 + 3500 pods need 2667 nodes, which hold 4000,
		// shared in proportion between warm-up and measured pods.
		{binding, 2667, 235, 3765},
	} {
		got := tc.m.sized(sz)
		if got.nodes != tc.nodes || got.warmupPods != tc.warmup || got.measuredPods != tc.measured {
			t.Errorf("%s: %d nodes, %d warm-up, %d measured; want %d, %d, %d", tc.m.name, got.nodes, got.warmupPods, got.measuredPods, tc.nodes, tc.warmup, tc.measured)
		}
	}
	// Asked for fewer measured pods than the minimum: the cluster need
	// only hold those.
	small := size{nodes: 100, warmupPods: 10, measuredPods: 50, minMeasured: 3500}
	if got := binding.sized(small); got.nodes != 100 || got.measuredPods != 50 {
		t.Errorf("small binding run: %+v", got)
	}
}

// Repetitions alternate the order of the cases, and every case runs once
// in each.
func TestInOrder(t *testing.T) {
	first, second := inOrder(cases, 1), inOrder(cases, 2)
	if first[0].name != cases[0].name || second[0].name != cases[len(cases)-1].name || second[len(second)-1].name != cases[0].name {
		t.Errorf("repetition 1 starts with %s, 2 with %s and ends with %s", first[0].name, second[0].name, second[len(second)-1].name)
	}
	if len(first) != len(cases) || len(second) != len(cases) {
		t.Errorf("%d and %d cases, want %d", len(first), len(second), len(cases))
	}
	if inOrder(cases, 3)[0].name != cases[0].name {
		t.Error("repetition 3 is not in the listed order")
	}
	if cases[0].name != "stock" {
		t.Error("inOrder reversed the list it was given")
	}
	// Every case with a target runs beside its stock, in both directions.
	for _, order := range [][]perfCase{first, second} {
		for _, target := range []string{"all", "plain/all", "binding/all"} {
			i := slices.IndexFunc(order, func(c perfCase) bool { return c.name == target })
			stock := strings.TrimSuffix(target, "all") + "stock"
			if i < 0 || !((i > 0 && order[i-1].name == stock) || (i+1 < len(order) && order[i+1].name == stock)) {
				t.Errorf("%s does not run next to %s: %v", target, stock, names(order))
			}
		}
	}
}

func names(cs []perfCase) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}
