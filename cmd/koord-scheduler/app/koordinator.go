package app

import (
	"fmt"
	"os"
	"slices"
	"sort"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/yaml"

	"github.com/koord-project/koord/pkg/plugins/coscheduling"
	"github.com/koord-project/koord/pkg/plugins/elasticquota"
	"github.com/koord-project/koord/pkg/plugins/loadaware"
	"github.com/koord-project/koord/pkg/plugins/numaresource"
	"github.com/koord-project/koord/pkg/plugins/reservation"
)

// koordinatorOnly are Koordinator's scheduler plugins Koord does not have.
// A Koordinator configuration that enables them loads all the same: they
// are left out, and named (log and koord_scheduler_plugin_not_implemented).
var koordinatorOnly = []string{"DefaultPreBind", "DeviceShare",
	"NodeResourcesFitPlus", "ScarceResourceAvoidance", "SchedulingHint"}

// koordPlugins are Koord's plugins, as values their extension points can be
// read from. Koordinator's configuration lists some of its plugins at points
// Koord's do not implement (Reservation under postFilter): those entries
// are left out and named too, as kube-scheduler refuses them.
var koordPlugins = map[string]any{
	loadaware.Name:    (*loadaware.Plugin)(nil),
	numaresource.Name: (*numaresource.Plugin)(nil),
	reservation.Name:  (*reservation.Plugin)(nil),
	coscheduling.Name: (*coscheduling.Plugin)(nil),
	elasticquota.Name: (*elasticquota.Plugin)(nil),
}

func implements(p any, point string) bool {
	var ok bool
	switch point {
	case "preEnqueue":
		_, ok = p.(fwk.PreEnqueuePlugin)
	case "queueSort":
		_, ok = p.(fwk.QueueSortPlugin)
	case "preFilter":
		_, ok = p.(fwk.PreFilterPlugin)
	case "filter":
		_, ok = p.(fwk.FilterPlugin)
	case "postFilter":
		_, ok = p.(fwk.PostFilterPlugin)
	case "preScore":
		_, ok = p.(fwk.PreScorePlugin)
	case "score":
		_, ok = p.(fwk.ScorePlugin)
	case "reserve":
		_, ok = p.(fwk.ReservePlugin)
	case "permit":
		_, ok = p.(fwk.PermitPlugin)
	case "preBind":
		_, ok = p.(fwk.PreBindPlugin)
	case "bind":
		_, ok = p.(fwk.BindPlugin)
	case "postBind":
		_, ok = p.(fwk.PostBindPlugin)
	default: // multiPoint and points newer than this list
		ok = true
	}
	return ok
}

var pluginsNotImplemented = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Name:           "koord_scheduler_plugin_not_implemented",
	Help:           "1 for each Koordinator scheduler plugin (or plugin at an extension point) a profile enables that koord-scheduler leaves out.",
	StabilityLevel: metrics.ALPHA,
}, []string{"plugin", "point"})

func init() { legacyregistry.MustRegister(pluginsNotImplemented) }

// adaptKoordinatorConfig rewrites a KubeSchedulerConfiguration (YAML or
// JSON) without the plugins Koord lacks and without Koord's plugins at
// points they do not implement; dropped names each ("Plugin" or
// "Plugin at point"). raw comes back unchanged when nothing is dropped.
func adaptKoordinatorConfig(raw []byte) ([]byte, []string, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, nil, err
	}
	profiles, _ := cfg["profiles"].([]any)
	seen := map[string]bool{}
	for _, p := range profiles {
		profile, _ := p.(map[string]any)
		if profile == nil {
			continue
		}
		if points, ok := profile["plugins"].(map[string]any); ok {
			for point, set := range points {
				s, _ := set.(map[string]any)
				if s == nil {
					continue
				}
				list, _ := s["enabled"].([]any)
				kept := list[:0:0]
				for _, e := range list {
					name := nameOf(e)
					switch {
					case slices.Contains(koordinatorOnly, name):
						seen[name] = true
						pluginsNotImplemented.WithLabelValues(name, point).Set(1)
						continue
					case koordPlugins[name] != nil && !implements(koordPlugins[name], point):
						seen[name+" at "+point] = true
						pluginsNotImplemented.WithLabelValues(name, point).Set(1)
						continue
					}
					kept = append(kept, e)
				}
				if len(kept) != len(list) {
					s["enabled"] = kept
				}
			}
		}
		if configs, ok := profile["pluginConfig"].([]any); ok {
			kept := configs[:0:0]
			for _, c := range configs {
				if name := nameOf(c); slices.Contains(koordinatorOnly, name) {
					seen[name] = true
					continue
				}
				kept = append(kept, c)
			}
			profile["pluginConfig"] = kept
		}
	}
	if len(seen) == 0 {
		return raw, nil, nil
	}
	dropped := make([]string, 0, len(seen))
	for d := range seen {
		dropped = append(dropped, d)
	}
	sort.Strings(dropped)
	out, err := yaml.Marshal(cfg)
	return out, dropped, err
}

func nameOf(entry any) string {
	m, _ := entry.(map[string]any)
	name, _ := m["name"].(string)
	return name
}

// adaptConfigFile is path, or, when it enables what Koord lacks, a copy of
// it without that, in the temporary directory; the left-out entries are
// logged.
func adaptConfigFile(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	out, dropped, err := adaptKoordinatorConfig(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if len(dropped) == 0 {
		return path, nil
	}
	klog.InfoS("Koordinator scheduler plugins Koord does not have are left out of the configuration", "config", path, "plugins", dropped)
	f, err := os.CreateTemp("", "koord-scheduler-config-*.yaml")
	if err != nil {
		return "", fmt.Errorf("writing the adapted %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Write(out); err != nil {
		return "", fmt.Errorf("writing the adapted %s: %w", path, err)
	}
	return f.Name(), nil
}
