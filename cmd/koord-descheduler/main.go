// Command koord-descheduler moves pods off nodes that stay hot. See
// pkg/descheduler and docs/operations.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/pkg/descheduler"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/version"
)

func main() {
	var (
		o           descheduler.Options
		configFile  string
		kubeconfig  string
		dryRun      bool
		showVersion bool
	)
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "koord-system"
	}
	fs := flag.NewFlagSet("koord-descheduler", flag.ExitOnError)
	fs.StringVar(&configFile, "config", "", "DeschedulerConfiguration file (Koordinator's descheduler/v1alpha2)")
	fs.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG, else the in-cluster config)")
	fs.StringVar(&o.Namespace, "namespace", ns, "namespace of the leader lease when the configuration names none (default $POD_NAMESPACE, else koord-system)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "deschedule only while holding the lease (run 2 replicas)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "127.0.0.1:9319", "address of /metrics (0 turns it off)")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false, "serve /metrics over HTTPS to clients authorized for GET /metrics (TokenReview and SubjectAccessReview); use it when --metrics-addr is reachable from other pods")
	fs.StringVar(&o.HealthAddr, "health-addr", ":9320", "address of /healthz and /readyz")
	fs.BoolVar(&dryRun, "dry-run", false, "log what would be moved and why, and move nothing (as the configuration's dryRun)")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	gates := features.New()
	features.Flag(fs, gates)
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if showVersion {
		fmt.Println(version.String("koord-descheduler"))
		return
	}
	ctrl.SetLogger(klog.NewKlogr())
	if err := run(configFile, kubeconfig, dryRun, o); err != nil {
		klog.ErrorS(err, "koord-descheduler failed")
		klog.Flush()
		os.Exit(1)
	}
}

func run(configFile, kubeconfig string, dryRun bool, o descheduler.Options) error {
	data := []byte("apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\n")
	if configFile != "" {
		var err error
		if data, err = os.ReadFile(configFile); err != nil {
			return err
		}
	}
	cfg, err := v1alpha2.Load(data)
	if err != nil {
		return fmt.Errorf("configuration %s: %w", configFile, err)
	}
	cfg.DryRun = cfg.DryRun || dryRun
	for _, f := range cfg.NotActedOn {
		klog.InfoS("Configuration field accepted, not acted on", "field", f)
	}
	if !hasLowNodeLoad(cfg) {
		klog.InfoS("No profile enables LowNodeLoad at balance: nothing is descheduled; PodMigrationJobs are still carried out")
	}
	o.Config = cfg
	var rc *rest.Config
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("API server config: %w", err)
	}
	rc.UserAgent = "koord-descheduler/" + version.Version
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	klog.InfoS("starting", "version", version.String("koord-descheduler"), "dryRun", cfg.DryRun, "interval", cfg.DeschedulingInterval.Duration)
	mgr, err := descheduler.New(ctx, rc, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func hasLowNodeLoad(c *v1alpha2.Config) bool {
	for _, p := range c.Run {
		if p.LowNodeLoad != nil {
			return true
		}
	}
	return false
}
