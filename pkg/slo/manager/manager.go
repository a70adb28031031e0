// Package manager assembles koord-manager: a controller-runtime manager with
// the Reservation lifecycle controller and the SLO controllers the feature
// gates enable.
package manager

import (
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"crypto/tls"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/pkg/compat"
	"github.com/koord-project/koord/pkg/slo/webhook"
	"github.com/koord-project/koord/pkg/slo/webhook/certs"

	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	analysisv1alpha1 "github.com/koord-project/koord/apis/analysis/v1alpha1"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/client/lenient"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/slo/config"
	"github.com/koord-project/koord/pkg/slo/index"
	"github.com/koord-project/koord/pkg/slo/nodemetric"
	"github.com/koord-project/koord/pkg/slo/noderesource"
	"github.com/koord-project/koord/pkg/slo/nodeslo"
	"github.com/koord-project/koord/pkg/slo/podgroup"
	"github.com/koord-project/koord/pkg/slo/quotastatus"
	"github.com/koord-project/koord/pkg/slo/recommender"
	"github.com/koord-project/koord/pkg/slo/reservationlifecycle"
)

// Options are koord-manager's settings (its flags).
type Options struct {
	// Namespace holds the leader lease and the reservations' placeholder
	// pods, and by default the configuration ConfigMap.
	Namespace string
	// SLOConfigName and SLOConfigNamespace name the configuration ConfigMap
	// (default slo-controller-config in Namespace): Koordinator's
	// --slo-config-name and --config-namespace, so that ACK's
	// kube-system/ack-slo-config can be used as it is.
	SLOConfigName      string
	SLOConfigNamespace string
	LeaderElect        bool
	MetricsAddr        string
	// MetricsSecure serves /metrics over HTTPS (a self-signed certificate)
	// to clients the API server authenticates and authorizes for GET
	// /metrics (a TokenReview and a SubjectAccessReview per scrape): for a
	// metrics address other pods can reach.
	MetricsSecure  bool
	HealthAddr     string
	Gates          featuregate.FeatureGate
	LeaderElection string // lease name
	// ReservationGCAfter is how long Succeeded and Failed reservations are kept (default 24h).
	ReservationGCAfter time.Duration
	// InProcess allows several managers in one process, one after another
	// (tests): controller-runtime refuses a controller name twice otherwise.
	InProcess bool
	// Webhook configures the admission webhook server (off when Port is 0).
	Webhook WebhookOptions
	// Recommender configures the resource recommender (gate
	// ResourceRecommender).
	Recommender recommender.Options
}

// WebhookOptions configure the admission webhooks' server and certificate.
type WebhookOptions struct {
	// Host and Port the server listens on; Port 0 turns the webhooks off.
	Host string
	Port int
	// CertSecret is the Secret in Namespace holding the serving certificate.
	CertSecret string
	// CertSelfManaged: koord-manager issues, renews and injects the
	// certificate; off, cert-manager does.
	CertSelfManaged bool
	// CertHosts are the certificate's DNS names or IP addresses.
	CertHosts []string
	// CertValidity is the serving certificate's lifetime.
	CertValidity time.Duration
	// MutatingConfigurations and ValidatingConfigurations are the webhook
	// configurations whose caBundle koord-manager keeps current.
	MutatingConfigurations, ValidatingConfigurations []string
}

// Scheme has every type koord-manager reads or writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, slov1alpha1.AddToScheme, schedulingv1alpha1.AddToScheme, colocationv1alpha1.AddToScheme, analysisv1alpha1.AddToScheme, schedulingsigsv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// lenientKinds are Koord's kinds the manager caches.
var lenientKinds = map[reflect.Type]lenient.Kind{
	reflect.TypeFor[*schedulingv1alpha1.Reservation]():         lenient.Reservations,
	reflect.TypeFor[*slov1alpha1.NodeMetric]():                 lenient.NodeMetrics,
	reflect.TypeFor[*slov1alpha1.NodeSLO]():                    lenient.NodeSLOs,
	reflect.TypeFor[*analysisv1alpha1.Recommendation]():        lenient.Recommendations,
	reflect.TypeFor[*analysisv1alpha1.RecommendationProfile](): lenient.RecommendationProfiles,
	reflect.TypeFor[*schedulingsigsv1alpha1.PodGroup]():        lenient.PodGroups,
	reflect.TypeFor[*schedulingsigsv1alpha1.ElasticQuota]():    lenient.ElasticQuotas,
}

func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr, SecureServing: o.MetricsSecure}
	if o.MetricsSecure {
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

// New builds the manager and registers the enabled controllers.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	// Our CRD types have no protobuf encoding: a caller's protobuf config
	// (kube-apiserver's own loopback config does this) must not reach them.
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	if o.LeaderElection == "" {
		o.LeaderElection = "koord-manager"
	}
	if o.SLOConfigName == "" {
		o.SLOConfigName = config.ConfigMapName
	}
	if o.SLOConfigNamespace == "" {
		o.SLOConfigNamespace = o.Namespace
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var recorder record.EventRecorder // set once the manager exists
	var told sync.Map
	refused := func(u *unstructured.Unstructured, err error) {
		if _, seen := told.LoadOrStore(string(u.GetUID())+"/"+u.GetResourceVersion(), true); seen {
			return
		}
		ctrl.Log.Error(err, "Ignoring an object that does not decode; fix or delete it", "kind", u.GetKind(), "name", u.GetName())
		if recorder != nil {
			recorder.Eventf(u, corev1.EventTypeWarning, "InvalidObject", "koord-manager ignores this object: %v", err)
		}
	}
	byObject := map[client.Object]cache.ByObject{
		// The only ConfigMap read is our own configuration.
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{o.SLOConfigNamespace: {}}},
	}
	var webhookServer ctrlwebhook.Server
	var certProvider *certs.Provider
	if o.Webhook.Port != 0 {
		// The only Secret read is the webhook certificate's.
		byObject[&corev1.Secret{}] = cache.ByObject{Namespaces: map[string]cache.Config{o.Namespace: {}},
			Field: fields.OneTermEqualSelector("metadata.name", o.Webhook.CertSecret)}
		certProvider = &certs.Provider{}
		webhookServer = ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: o.Webhook.Host, Port: o.Webhook.Port,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = certProvider.GetCertificate }},
		})
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:                 webhookServer,
		Scheme:                        scheme,
		LeaderElection:                o.LeaderElect,
		LeaderElectionID:              o.LeaderElection,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsOptions(o),
		HealthProbeBindAddress:        o.HealthAddr,
		Controller:                    ctrlconfig.Controller{SkipNameValidation: &o.InProcess},
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			// Koord's own kinds decode one object at a time: one that does
			// not decode is skipped and reported, not a cache that never
			// syncs (package lenient).
			NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
				if k, ok := lenientKinds[reflect.TypeOf(obj)]; ok {
					lw = lenient.ListWatch(dyn, k, nil, refused)
				}
				return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
			},
			ByObject: byObject,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	recorder = mgr.GetEventRecorderFor("koord-manager")
	reporter := compat.NewReporter("manager", recorder, ctrlmetrics.Registry)
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	store := &config.Store{
		Reader:   mgr.GetClient(),
		Writer:   mgr.GetClient(),
		Key:      types.NamespacedName{Namespace: o.SLOConfigNamespace, Name: o.SLOConfigName},
		Recorder: mgr.GetEventRecorderFor("koord-manager"),
		Reporter: reporter,
	}
	if err := (&nodemetric.Reconciler{Client: mgr.GetClient(), Config: store}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if o.Gates == nil || o.Gates.Enabled(features.NodeSLOSync) {
		if err := (&nodeslo.Reconciler{Client: mgr.GetClient(), Config: store}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	if o.Gates == nil || o.Gates.Enabled(features.BatchResource) {
		if err := (&noderesource.Reconciler{Client: mgr.GetClient(), Config: store, Reporter: reporter}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	gc := o.ReservationGCAfter
	if gc <= 0 {
		gc = 24 * time.Hour
	}
	if err := (&reservationlifecycle.Reconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Namespace: o.Namespace, GCAfter: gc, Reporter: reporter}).SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	// PodGroup status, for koord-scheduler's Coscheduling plugin's gangs.
	if served, err := podgroup.Setup(mgr); err != nil {
		return nil, err
	} else if !served {
		ctrl.Log.Info("The PodGroup CRD (scheduling.sigs.k8s.io/v1alpha1) is not served: no PodGroup status is kept")
	}
	// ElasticQuota figures (runtime, request, used), for koord-scheduler's
	// ElasticQuota plugin's tree.
	if served, err := quotastatus.Setup(mgr); err != nil {
		return nil, err
	} else if !served {
		ctrl.Log.Info("The ElasticQuota CRD (scheduling.sigs.k8s.io/v1alpha1) is not served: no quota status is kept")
	}
	if o.Gates != nil && o.Gates.Enabled(features.ResourceRecommender) {
		if o.Recommender.Metrics, err = recommender.NewMetrics(ctrlmetrics.Registry); err != nil {
			return nil, err
		}
		if _, err := recommender.Setup(ctx, mgr, o.Recommender); err != nil {
			return nil, err
		}
		if err := recommender.SetupProfiles(mgr); err != nil {
			return nil, err
		}
	}
	if o.Webhook.Port != 0 {
		if err := setupWebhooks(ctx, mgr, o, certProvider); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setupWebhooks serves the admission webhooks with the certificate the
// Secret holds, and (self-managed) has the leader keep that certificate and
// the webhook configurations' caBundle current.
func setupWebhooks(ctx context.Context, mgr ctrl.Manager, o Options, p *certs.Provider) error {
	w := o.Webhook
	if err := certs.Setup(ctx, mgr, p, certs.Options{
		Namespace: o.Namespace, SecretName: w.CertSecret, SelfManaged: w.CertSelfManaged,
		Hosts: w.CertHosts, Validity: w.CertValidity,
		MutatingConfigurations: w.MutatingConfigurations, ValidatingConfigurations: w.ValidatingConfigurations,
		Recorder: mgr.GetEventRecorderFor("koord-manager"),
	}, ctrlmetrics.Registry); err != nil {
		return err
	}
	// Informers for what the pod webhook reads start with the manager, not
	// at the first admission.
	for _, obj := range []client.Object{&colocationv1alpha1.ClusterColocationProfile{}, &corev1.Namespace{}, &schedulingv1.PriorityClass{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	h, err := webhook.New(mgr.GetClient(), webhook.Options{
		Gates:          o.Gates,
		SkipNamespaces: []string{metav1.NamespaceSystem, o.Namespace},
		SLOConfig:      types.NamespacedName{Namespace: o.SLOConfigNamespace, Name: o.SLOConfigName},
		Registry:       ctrlmetrics.Registry,
	})
	if err != nil {
		return err
	}
	h.Register(mgr)
	if err := mgr.AddReadyzCheck("webhook-certificate", p.Ready); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker())
}
