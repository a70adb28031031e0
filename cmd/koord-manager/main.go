// Command koord-manager is Koord's SLO controller. See pkg/slo and DESIGN.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/slo/cleanup"
	"github.com/koord-project/koord/pkg/slo/manager"
	"github.com/koord-project/koord/pkg/slo/recommender"
	"github.com/koord-project/koord/pkg/version"
)

func main() {
	var (
		o           manager.Options
		kubeconfig  string
		showVersion bool
		cleanupNUMA bool
		koordletDS  string
	)
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "koord-system"
	}
	fs := flag.NewFlagSet("koord-manager", flag.ExitOnError)
	fs.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG, else the in-cluster config)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "run the controllers only while holding the koord-manager lease (run 2 replicas)")
	fs.StringVar(&o.Namespace, "namespace", ns, "namespace of the leader lease and of reservations' placeholder pods (default $POD_NAMESPACE, else koord-system)")
	fs.StringVar(&o.SLOConfigName, "slo-config-name", "slo-controller-config", "name of the configuration ConfigMap (Koordinator's flag; ACK uses ack-slo-config)")
	fs.StringVar(&o.SLOConfigNamespace, "config-namespace", "", "namespace of the configuration ConfigMap (Koordinator's flag; default --namespace)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "127.0.0.1:9317", "address of /metrics (0 turns it off); plain HTTP on localhost unless --metrics-secure")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false, "serve /metrics over HTTPS to clients authorized for GET /metrics (TokenReview and SubjectAccessReview); use it when --metrics-addr is reachable from other pods")
	fs.StringVar(&o.HealthAddr, "health-addr", ":9318", "address of /healthz and /readyz")
	fs.DurationVar(&o.ReservationGCAfter, "reservation-gc-after", 24*time.Hour, "how long Succeeded and Failed reservations are kept before they are deleted")
	var certSource, webhookHosts, mutatingConfigs, validatingConfigs string
	fs.IntVar(&o.Webhook.Port, "webhook-port", 9876, "port of the admission webhook server (Koordinator's manager.webhook.port); 0 turns the webhooks off")
	fs.StringVar(&o.Webhook.Host, "webhook-host", "", "address the admission webhook server listens on (default all)")
	fs.StringVar(&certSource, "webhook-cert-source", "self", "who issues the webhook's certificate: self (koord-manager keeps a CA and a serving certificate in --webhook-cert-secret and injects the CA bundle) or secret (cert-manager writes the Secret and injects the bundle; koord-manager only serves it)")
	fs.StringVar(&o.Webhook.CertSecret, "webhook-cert-secret", "koord-webhook-certs", "Secret in --namespace holding the webhook's certificate")
	fs.StringVar(&webhookHosts, "webhook-hosts", "", "DNS names or IP addresses of the serving certificate, comma-separated (default koord-webhook-service.<namespace>.svc)")
	fs.DurationVar(&o.Webhook.CertValidity, "webhook-cert-validity", 365*24*time.Hour, "lifetime of a self-issued serving certificate, renewed when a third is left (the CA lives ten times as long)")
	fs.StringVar(&mutatingConfigs, "mutating-webhook-configurations", "koord-mutating-webhook-configuration", "MutatingWebhookConfigurations whose caBundle koord-manager keeps current, comma-separated")
	fs.StringVar(&validatingConfigs, "validating-webhook-configurations", "koord-validating-webhook-configuration", "ValidatingWebhookConfigurations whose caBundle koord-manager keeps current, comma-separated")
	o.Recommender.Config = recommender.Defaults()
	rc := &o.Recommender.Config
	fs.DurationVar(&rc.HalfLife, "recommender-half-life", rc.HalfLife, "how long a usage sample takes to lose half its weight in the recommender's histograms (gate ResourceRecommender)")
	fs.Float64Var(&rc.CPUPercentile, "recommender-cpu-percentile", rc.CPUPercentile, "percentile of the CPU samples the CPU target is set at")
	fs.Float64Var(&rc.MemoryPercentile, "recommender-memory-percentile", rc.MemoryPercentile, "percentile of the daily memory peaks the memory target is set at")
	fs.Float64Var(&rc.SafetyMargin, "recommender-safety-margin", rc.SafetyMargin, "fraction added to the targets and bounds")
	fs.IntVar(&rc.MinSamples, "recommender-min-samples", rc.MinSamples, "CPU samples (one per NodeMetric report) a container needs before it is recommended")
	fs.DurationVar(&rc.WarmUp, "recommender-warm-up", rc.WarmUp, "history a container needs before it is recommended")
	fs.DurationVar(&o.Recommender.Interval, "recommender-interval", time.Minute, "how often each Recommendation is recomputed")
	fs.DurationVar(&o.Recommender.CheckpointInterval, "recommender-checkpoint-interval", 10*time.Minute, "how often the recommender's histograms are saved in each Recommendation's status (what a restart can lose)")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&cleanupNUMA, "cleanup-numa-info", false, "uninstall helper: stop the koordlet DaemonSet (--koordlet-daemonset), delete every numa-info ConfigMap koordlet manages, and exit")
	fs.StringVar(&koordletDS, "koordlet-daemonset", "koord-system/koordlet", "namespace/name of the koordlet DaemonSet, for --cleanup-numa-info")
	gates := features.New()
	features.Flag(fs, gates)
	o.Gates = gates
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if showVersion {
		fmt.Println(version.String("koord-manager"))
		return
	}
	switch certSource {
	case "self":
		o.Webhook.CertSelfManaged = true
	case "secret":
	default:
		fmt.Fprintf(os.Stderr, "--webhook-cert-source %q: want self or secret\n", certSource)
		os.Exit(2)
	}
	if webhookHosts == "" {
		webhookHosts = "koord-webhook-service." + o.Namespace + ".svc"
	}
	o.Webhook.CertHosts = splitList(webhookHosts)
	o.Webhook.MutatingConfigurations = splitList(mutatingConfigs)
	o.Webhook.ValidatingConfigurations = splitList(validatingConfigs)
	ctrl.SetLogger(klog.NewKlogr())
	ctrlmetrics.Registry.MustRegister(features.ReportNotImplemented(ctrl.Log, gates))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := restConfig(kubeconfig)
	if err == nil {
		if cleanupNUMA {
			err = runCleanup(ctx, cfg, koordletDS)
		} else {
			err = run(ctx, cfg, o)
		}
	}
	if err != nil {
		klog.ErrorS(err, "koord-manager failed")
		klog.Flush()
		os.Exit(1)
	}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("API server config: %w", err)
	}
	cfg.UserAgent = "koord-manager/" + version.Version
	return cfg, nil
}

func run(ctx context.Context, cfg *rest.Config, o manager.Options) error {
	klog.InfoS("starting", "version", version.String("koord-manager"), "namespace", o.Namespace, "leaderElect", o.LeaderElect)
	mgr, err := manager.New(ctx, cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func runCleanup(ctx context.Context, cfg *rest.Config, ds string) error {
	ns, name, ok := strings.Cut(ds, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--koordlet-daemonset %q: want namespace/name", ds)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := cleanup.StopKoordlet(ctx, c, ns, name); err != nil {
		return fmt.Errorf("stopping koordlet before deleting its ConfigMaps: %w", err)
	}
	n, err := cleanup.NUMAInfo(ctx, c)
	klog.InfoS("numa-info ConfigMaps deleted", "count", n)
	return err
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
