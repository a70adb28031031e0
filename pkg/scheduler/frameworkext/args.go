package frameworkext

import (
	"strings"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// argsNotActedOn lists, per plugin, the Koordinator args a profile sets that
// koord-scheduler accepts without acting on them yet.
var argsNotActedOn = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Name:           "koord_scheduler_plugin_arg_not_implemented",
	Help:           "1 for each Koordinator plugin arg a profile sets that koord-scheduler accepts but does not act on yet.",
	StabilityLevel: metrics.ALPHA,
}, []string{"plugin", "arg"})

func init() { legacyregistry.MustRegister(argsNotActedOn) }

// ReportArgsNotActedOn tells, at plugin start, which of its args ("field=value")
// are kept without effect: a log line and koord_scheduler_plugin_arg_not_implemented.
func ReportArgsNotActedOn(logger klog.Logger, plugin string, args []string) {
	if len(args) == 0 {
		return
	}
	logger.Info("Koordinator args accepted that Koord does not act on yet", "plugin", plugin, "args", args)
	for _, a := range args {
		field, _, _ := strings.Cut(a, "=")
		argsNotActedOn.WithLabelValues(plugin, field).Set(1)
	}
}
