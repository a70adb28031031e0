package validation

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/koord-project/koord/apis/config"
)

// ValidatePluginArgs validates one Koord args object; args of other plugins
// are left to kube-scheduler.
func ValidatePluginArgs(path *field.Path, args runtime.Object) error {
	switch a := args.(type) {
	case *config.LoadAwareSchedulingArgs:
		return ValidateLoadAwareSchedulingArgs(path, a)
	case *config.NodeNUMAResourceArgs:
		return ValidateNodeNUMAResourceArgs(path, a)
	case *config.ReservationArgs:
		return ValidateReservationArgs(path, a)
	case *config.CoschedulingArgs:
		return ValidateCoschedulingArgs(path, a)
	case *config.ElasticQuotaArgs:
		return ValidateElasticQuotaArgs(path, a)
	}
	return nil
}

// ValidateProfiles validates the Koord args of every profile, whether or not
// the plugin is enabled there, as kube-scheduler does for in-tree args: a typo
// in a disabled plugin's args should not wait to bite until it is enabled.
func ValidateProfiles(profiles []schedconfig.KubeSchedulerProfile) error {
	var errs []error
	for i := range profiles {
		for j, pc := range profiles[i].PluginConfig {
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			if err := ValidatePluginArgs(path, pc.Args); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}
