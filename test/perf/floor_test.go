package perf

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/yaml"
)

// The framework's price for Koord's plugins, apart from their work: with
// KOORD_PERF_FLOOR set, BenchmarkPaired pairs stock's profile with stock's
// plus three plugins that do no work, in place of Koord's. They have the
// extension points Koord's plugins run for a pod that binds CPUs: all three
// PreFilter (writing their cycle state) and Filter every node; two Score it
// (LoadAwareScheduling, NodeNUMAResource) and the third skips Score at
// PreScore (Reservation, for a pod owning no reservation). So the binding
// mix's ratio against this profile is the most its plugins could reach if
// their own work cost nothing and they turned no node away. Measuring only:
// the scheduler is never shipped with these.
var floorPlugins = []struct {
	name  string
	score bool
}{{"FloorScoredA", true}, {"FloorScoredB", true}, {"FloorFilterOnly", false}}

// floorConfig is the paired configuration with the floor profile in place
// of Koord's, under the same schedulerName.
func floorConfig() ([]byte, error) {
	raw, err := schedulerConfig(namedProfile{stockProfile, nil}, namedProfile{koordProfile, nil})
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) != 2 {
		return nil, fmt.Errorf("paired configuration has %d profiles, want 2", len(profiles))
	}
	p := profiles[1].(map[string]any)
	plugins, _ := p["plugins"].(map[string]any)
	if plugins == nil {
		plugins = map[string]any{}
		p["plugins"] = plugins
	}
	var enabled []any
	for _, f := range floorPlugins {
		enabled = append(enabled, map[string]any{"name": f.name, "weight": 1})
	}
	plugins["multiPoint"] = map[string]any{"enabled": enabled}
	return yaml.Marshal(cfg)
}

// floorOptions registers the floor plugins with the scheduler.
func floorOptions() []kubeschedulerapp.Option {
	var out []kubeschedulerapp.Option
	for _, f := range floorPlugins {
		pl := &floorPlugin{name: f.name, score: f.score}
		out = append(out, kubeschedulerapp.WithPlugin(f.name, func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return pl, nil
		}))
	}
	return out
}

// floorPlugin takes part in a cycle as a Koord plugin does, and decides
// nothing.
type floorPlugin struct {
	name  string
	score bool
}

var (
	_ fwk.PreFilterPlugin = &floorPlugin{}
	_ fwk.FilterPlugin    = &floorPlugin{}
	_ fwk.PreScorePlugin  = &floorPlugin{}
	_ fwk.ScorePlugin     = &floorPlugin{}
)

type floorState struct{}

func (floorState) Clone() fwk.StateData { return floorState{} }

func (p *floorPlugin) Name() string { return p.name }

func (p *floorPlugin) PreFilter(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	cs.Write(fwk.StateKey(p.name), floorState{})
	return nil, nil
}

func (p *floorPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *floorPlugin) Filter(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) *fwk.Status {
	return nil
}

func (p *floorPlugin) PreScore(context.Context, fwk.CycleState, *corev1.Pod, []fwk.NodeInfo) *fwk.Status {
	if !p.score {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

func (p *floorPlugin) Score(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}

func (p *floorPlugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
