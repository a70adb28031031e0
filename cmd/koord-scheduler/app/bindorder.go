package app

import (
	"fmt"
	"slices"

	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/koord-project/koord/pkg/plugins/numaresource"
	"github.com/koord-project/koord/pkg/plugins/reservation"
)

// binders are the plugins koord-scheduler can run that implement Bind.
var binders = []string{"DefaultBinder", reservation.Name, numaresource.Name}

// checkBindOrder refuses a profile where Reservation runs but is not the
// first binder. Its Bind is what turns a reservation's placeholder pod into
// the reservation; any binder before it would bind the placeholder to the
// node like an ordinary pod, and a kubelet would run the reservation's
// template in koord-manager's namespace. Enabling Reservation through
// multiPoint alone does exactly that: kube-scheduler's defaults put
// DefaultBinder in multiPoint ahead of it.
func checkBindOrder(profiles []schedconfig.KubeSchedulerProfile) error {
	for i := range profiles {
		p := &profiles[i]
		if p.Plugins == nil || !enabledAnywhere(p.Plugins, reservation.Name) {
			continue
		}
		order := bindOrder(p.Plugins)
		if len(order) > 0 && order[0] == reservation.Name {
			continue
		}
		return fmt.Errorf("profile %q: plugin %s runs but binds after %v: it must be the first binder, or placeholder pods of reservations are bound to nodes as ordinary pods; "+
			"list it under plugins.bind.enabled and under plugins.multiPoint.enabled (as manifests/scheduler/koord-scheduler-config.yaml does)",
			p.SchedulerName, reservation.Name, order)
	}
	return nil
}

func enabledAnywhere(pl *schedconfig.Plugins, name string) bool {
	for _, set := range []schedconfig.PluginSet{pl.MultiPoint, pl.PreEnqueue, pl.QueueSort, pl.PreFilter, pl.Filter, pl.PostFilter, pl.PreScore,
		pl.Score, pl.Reserve, pl.Permit, pl.PreBind, pl.Bind, pl.PostBind} {
		if slices.ContainsFunc(set.Enabled, func(p schedconfig.Plugin) bool { return p.Name == name }) {
			return true
		}
	}
	return false
}

// bindOrder is the order the framework calls the profile's binders in, by
// its rules for merging multiPoint into an extension point
// (frameworkImpl.expandMultiPointPlugins): binders listed under bind that are
// also in multiPoint, in bind's order; then multiPoint's other binders, in
// multiPoint's order, unless bind disables them; then bind's remaining ones.
// The profile is as loaded, with kube-scheduler's defaults merged in.
func bindOrder(pl *schedconfig.Plugins) []string {
	isBinder := func(name string) bool { return slices.Contains(binders, name) }
	var explicit []string
	for _, p := range pl.Bind.Enabled {
		if isBinder(p.Name) {
			explicit = append(explicit, p.Name)
		}
	}
	disabled := func(name string) bool {
		return slices.ContainsFunc(pl.Bind.Disabled, func(p schedconfig.Plugin) bool { return p.Name == name || p.Name == "*" })
	}
	var multi []string
	if !disabled("*") {
		for _, p := range pl.MultiPoint.Enabled {
			if isBinder(p.Name) && !disabled(p.Name) && !slices.Contains(multi, p.Name) {
				multi = append(multi, p.Name)
			}
		}
	}
	var order, rest []string
	for _, name := range explicit {
		if slices.Contains(multi, name) {
			order = append(order, name)
		} else {
			rest = append(rest, name)
		}
	}
	for _, name := range multi {
		if !slices.Contains(explicit, name) {
			order = append(order, name)
		}
	}
	return append(order, rest...)
}
