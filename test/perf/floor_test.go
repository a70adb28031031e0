package perf

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/yaml"

	"github.com/koord-project/koord/apis/extension"
)

// The framework's price for Koord's plugins, apart from their work:
// BenchmarkPaired's floor profile is stock's plus three plugins that do no
// work. Each takes part in a pod's cycle as the Koord plugin it stands for
// does for test/perf's pods: at the same extension points, skipping the same
// ones. So Koord's cycle against the floor's is what its plugins' own work
// (and the nodes they turn away) cost, with the framework's price for
// having plugins at all taken out. Measuring only: the scheduler is never
// shipped with these.
var floorPlugins = []floorPlugin{
	// LoadAwareScheduling filters and scores every pod (DaemonSet pods
	// aside, which test/perf has none of).
	{name: "FloorLikeLoadAware", filters: always, scores: always},
	// Reservation filters every pod while reservations hold resources, as
	// they do throughout test/perf, and scores only their owners.
	{name: "FloorLikeReservation", filters: always, scores: ownsReservation},
	// NodeNUMAResource skips pods that bind no CPUs at PreFilter, and
	// their Score at PreScore.
	{name: "FloorLikeNUMA", filters: bindsCPUs, scores: bindsCPUs},
}

func always(*corev1.Pod) bool { return true }

// ownsReservation: test/perf's reservations are owned by app=reserved-<i>.
func ownsReservation(pod *corev1.Pod) bool {
	return strings.HasPrefix(pod.Labels["app"], "reserved-")
}

// bindsCPUs: test/perf's binding pods say so in resource-spec; none of its
// other pods is LSE or LSR, or on a node with a cpu-bind-policy.
func bindsCPUs(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[extension.AnnotationResourceSpec]
	return ok
}

// pairedConfig is the configuration of a paired run with the given
// profiles, by schedulerName: stock kube-scheduler's profile, the floor
// profile (stock's with the floor plugins) and the shipped Koord profile.
func pairedConfig(profiles []string) ([]byte, error) {
	var named []namedProfile
	for _, p := range profiles {
		var keep []string
		if p == koordProfile {
			keep = allPlugins
		}
		named = append(named, namedProfile{p, keep})
	}
	raw, err := schedulerConfig(named...)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(profiles, floorProfile) {
		return raw, nil
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	loaded, _ := cfg["profiles"].([]any)
	i := slices.IndexFunc(loaded, func(p any) bool { return p.(map[string]any)["schedulerName"] == floorProfile })
	if i < 0 {
		return nil, fmt.Errorf("paired configuration has no %s profile", floorProfile)
	}
	p := loaded[i].(map[string]any)
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
	for i := range floorPlugins {
		pl := &floorPlugins[i]
		out = append(out, kubeschedulerapp.WithPlugin(pl.name, func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return pl, nil
		}))
	}
	return out
}

// floorPlugin takes part in a cycle as a Koord plugin does, and decides
// nothing: filters and scores say for which pods it runs Filter and Score.
type floorPlugin struct {
	name            string
	filters, scores func(*corev1.Pod) bool
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

func (p *floorPlugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.filters(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cs.Write(fwk.StateKey(p.name), floorState{})
	return nil, nil
}

func (p *floorPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *floorPlugin) Filter(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) *fwk.Status {
	return nil
}

func (p *floorPlugin) PreScore(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if !p.scores(pod) {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

func (p *floorPlugin) Score(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}

func (p *floorPlugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
