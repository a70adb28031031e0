// Package app builds the koord-scheduler command: the upstream kube-scheduler
// command with Koord's plugins in its registry and Koord's args in its scheme.
package app

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	// Registers the Koord plugin args in kube-scheduler's schemes.
	_ "github.com/koord-project/koord/apis/config/scheme"
	"github.com/koord-project/koord/apis/config/validation"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/plugins/coscheduling"
	"github.com/koord-project/koord/pkg/plugins/elasticquota"
	"github.com/koord-project/koord/pkg/plugins/loadaware"
	"github.com/koord-project/koord/pkg/plugins/numaresource"
	"github.com/koord-project/koord/pkg/plugins/reservation"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/version"
)

// Name is the binary's name and the schedulerName of its default profile.
const Name = "koord-scheduler"

// Plugins are the out-of-tree plugins compiled into koord-scheduler. They
// share one frameworkext.Extender per scheduler (one Koord informer factory,
// the reservation holds, the binding), handed to each constructor.
func Plugins() []kubeschedulerapp.Option {
	ext := frameworkext.NewExtender()
	return []kubeschedulerapp.Option{
		kubeschedulerapp.WithPlugin(loadaware.Name, ext.Factory(loadaware.New)),
		kubeschedulerapp.WithPlugin(numaresource.Name, ext.Factory(numaresource.New)),
		kubeschedulerapp.WithPlugin(reservation.Name, ext.Factory(reservation.New)),
		kubeschedulerapp.WithPlugin(coscheduling.Name, ext.Factory(coscheduling.New)),
		kubeschedulerapp.WithPlugin(elasticquota.Name, ext.Factory(elasticquota.New)),
	}
}

var addGates sync.Once

// NewSchedulerCommand returns the koord-scheduler command.
func NewSchedulerCommand(extra ...kubeschedulerapp.Option) *cobra.Command {
	// Koord's gates join kube-scheduler's, so the one --feature-gates string the
	// chart passes to every component is accepted here too.
	addGates.Do(func() {
		if err := features.Add(utilfeature.DefaultMutableFeatureGate); err != nil {
			panic(err)
		}
	})
	cmd := kubeschedulerapp.NewSchedulerCommand(append(Plugins(), extra...)...)
	cmd.Use = Name
	cmd.Short = "Kubernetes scheduler with Koord's QoS-aware co-location plugins"
	cmd.Long = `koord-scheduler is kube-scheduler with Koord's plugins compiled in: load-aware
placement, CPU-topology and NUMA-aware CPU binding, and reservations. Pods opt in
with spec.schedulerName: koord-scheduler; operators configure it with a
KubeSchedulerConfiguration (--config), exactly as they configure kube-scheduler.`

	upstream := cmd.PersistentPreRunE
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		// kube-scheduler's own --version reports only the Kubernetes version;
		// operators need to know the Koord release too.
		if f := c.Flags().Lookup("version"); f != nil && f.Value.String() != "false" {
			fmt.Fprintln(c.OutOrStdout(), version.String(Name))
			os.Exit(0)
		}
		if upstream != nil {
			if err := upstream(c, args); err != nil {
				return err
			}
		}
		legacyregistry.Registerer().MustRegister(features.ReportNotImplemented(klog.Background(), utilfeature.DefaultFeatureGate))
		if f := c.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
			// A Koordinator configuration loads as it is: what Koord
			// does not have is left out, and named.
			path, err := adaptConfigFile(f.Value.String())
			if err != nil {
				return err
			}
			if err := c.Flags().Set("config", path); err != nil {
				return err
			}
			return ValidateConfigFile(path)
		}
		return nil
	}
	return cmd
}

// ValidateConfigFile loads a KubeSchedulerConfiguration the way kube-scheduler
// does (strict decoding, defaulting), validates the Koord plugin args in it
// and checks that Reservation binds first wherever it runs.
func ValidateConfigFile(path string) error {
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	if err := validation.ValidateProfiles(cfg.Profiles); err != nil {
		return fmt.Errorf("invalid plugin args in %s: %w", path, err)
	}
	if err := checkBindOrder(cfg.Profiles); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Setup prepares an in-process koord-scheduler from a config file, with the
// same registry and validation as the binary. Tests and the demo use it.
func Setup(ctx context.Context, configFile string, extra ...kubeschedulerapp.Option) (func(context.Context) error, error) {
	configFile, err := adaptConfigFile(configFile)
	if err != nil {
		return nil, err
	}
	if err := ValidateConfigFile(configFile); err != nil {
		return nil, err
	}
	opts := options.NewOptions()
	opts.ConfigFile = configFile
	// No serving port in-process: several schedulers may run in one test binary.
	opts.SecureServing.BindPort = 0
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	cc, sched, err := kubeschedulerapp.Setup(ctx, opts, append(Plugins(), extra...)...)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return kubeschedulerapp.Run(ctx, cc, sched) }, nil
}
