// Package descheduler assembles koord-descheduler: a controller-runtime
// manager (leader election, metrics, health) running, while it leads, the
// descheduling rounds of each profile on sigs.k8s.io/descheduler's
// framework (LowNodeLoad at balance; MigrationController as the evictor,
// that is the framework's DefaultEvictor with Koordinator's arg names) and
// the PodMigrationJob controller that carries out the moves.
package descheduler

import (
	"context"
	"fmt"
	"slices"

	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	deschedulerapi "sigs.k8s.io/descheduler/pkg/api"
	"sigs.k8s.io/descheduler/pkg/descheduler/evictions"
	podutil "sigs.k8s.io/descheduler/pkg/descheduler/pod"
	deschedulerfeatures "sigs.k8s.io/descheduler/pkg/features"
	"sigs.k8s.io/descheduler/pkg/framework/pluginregistry"
	"sigs.k8s.io/descheduler/pkg/framework/plugins/defaultevictor"
	frameworkprofile "sigs.k8s.io/descheduler/pkg/framework/profile"
	frameworktypes "sigs.k8s.io/descheduler/pkg/framework/types"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/client/lenient"
	"github.com/koord-project/koord/pkg/descheduler/lownodeload"
	"github.com/koord-project/koord/pkg/descheduler/migration"
)

// Options are koord-descheduler's settings.
type Options struct {
	Config *v1alpha2.Config
	// Namespace holds the lease unless the configuration names one.
	Namespace   string
	LeaderElect bool
	MetricsAddr string
	// MetricsSecure serves /metrics over HTTPS to clients the API server
	// authorizes for GET /metrics.
	MetricsSecure bool
	HealthAddr    string
	// InProcess allows several in one process, one after another (tests).
	InProcess bool
}

// New builds the manager.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, schedulingv1alpha1.AddToScheme, slov1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	if cc := o.Config.ClientConnection; cc.QPS > 0 {
		cfg.QPS, cfg.Burst = cc.QPS, int(cc.Burst)
	}
	le := o.Config.LeaderElection
	leaseNS, leaseName := o.Namespace, "koord-descheduler"
	if le.ResourceNamespace != "" {
		leaseNS = le.ResourceNamespace
	}
	if le.ResourceName != "" {
		leaseName = le.ResourceName
	}
	leader := o.LeaderElect
	if le.LeaderElect != nil {
		leader = leader && *le.LeaderElect
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// Reservations decode one object at a time, quantities bounded
		// first (package lenient): one that does not decode is skipped
		// and logged, not a cache that never syncs or stalls.
		Cache: cache.Options{NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			if _, ok := obj.(*schedulingv1alpha1.Reservation); ok {
				lw = lenient.ListWatch(dyn, lenient.Reservations, nil, func(u *unstructured.Unstructured, err error) {
					ctrl.Log.Error(err, "Ignoring a Reservation that does not decode; fix or delete it", "name", u.GetName())
				})
			}
			return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		}},
		LeaderElection:                leader,
		LeaderElectionID:              leaseName,
		LeaderElectionNamespace:       leaseNS,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsOptions(o),
		HealthProbeBindAddress:        o.HealthAddr,
		Controller:                    ctrlconfig.Controller{SkipNameValidation: &o.InProcess},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	migArgs := o.Config.Run[0].MigrationController
	guard := &migration.Guard{}
	if err := (&migration.Reconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Kube: kube, Args: migArgs, Guard: guard,
		Recorder: mgr.GetEventRecorderFor("koord-descheduler")}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	m := newMetrics(ctrlmetrics.Registry)
	if err := mgr.Add(&rounds{o: o, kube: kube, dyn: dyn, c: mgr.GetClient(), metrics: m, guard: guard}); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, mgr.AddReadyzCheck("ping", healthz.Ping)
}

func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsAddr, SecureServing: o.MetricsSecure}
	if o.MetricsSecure {
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

// rounds runs the descheduling loop while this replica leads.
type rounds struct {
	o       Options
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	c       client.Client
	metrics *metrics
	// guard gets its rules once the caches they read have synced.
	guard *migration.Guard
}

func (r *rounds) NeedLeaderElection() bool { return true }

type profile interface {
	RunBalancePlugins(ctx context.Context, nodes []*corev1.Node) *frameworktypes.Status
}

func (r *rounds) Start(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("koord-descheduler")
	factory := informers.NewSharedInformerFactory(r.kube, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	nodeLister := factory.Core().V1().Nodes().Lister()
	getPods, err := podutil.BuildGetPodsAssignedToNodeFunc(podInformer)
	if err != nil {
		return err
	}
	// NodeMetrics decode one at a time: one a node wrote wrong is skipped
	// and named, not a cache that never syncs.
	nmInformer := toolscache.NewSharedIndexInformer(lenient.ListWatch(r.dyn, lenient.NodeMetrics, nil, func(u *unstructured.Unstructured, err error) {
		logger.Error(err, "Ignoring a NodeMetric that does not decode", "name", u.GetName())
	}), &slov1alpha1.NodeMetric{}, 0, toolscache.Indexers{})
	nodeMetric := func(node string) *slov1alpha1.NodeMetric {
		obj, ok, err := nmInformer.GetStore().GetByKey(node)
		if err != nil || !ok {
			return nil
		}
		return obj.(*slov1alpha1.NodeMetric)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: r.kube.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, "koord-descheduler")
	podEvictor, err := evictions.NewPodEvictor(ctx, r.kube, recorder, podInformer, deschedulerfeatures.DefaultMutableFeatureGate,
		evictions.NewOptions().WithDryRun(true)) // moves go through PodMigrationJobs, never this evictor
	if err != nil {
		return err
	}
	var profiles []profile
	var selectors []labels.Selector
	for _, p := range r.o.Config.Run {
		if p.LowNodeLoad == nil {
			continue
		}
		reg := pluginregistry.NewRegistry()
		lnl, mc := p.LowNodeLoad, p.MigrationController
		pluginregistry.Register(lownodeload.Name, func(ctx context.Context, _ runtime.Object, h frameworktypes.Handle) (frameworktypes.Plugin, error) {
			return lownodeload.New(lnl, h, lownodeload.Deps{
				NodeMetric: nodeMetric,
				DryRun:     r.o.Config.DryRun || mc.DryRun,
				Migrate:    func(ctx context.Context, m lownodeload.Move) error { return r.migrate(ctx, mc, m) },
				Report:     r.metrics.report(p.Name),
				Namespaces: namespaces(mc.Namespaces),
				Leaving:    r.leaving,
			})
		}, &lownodeload.Plugin{}, &v1alpha2.LowNodeLoadArgs{}, nil, nil, reg)
		pluginregistry.Register(v1alpha2.MigrationControllerName, defaultevictor.New, &defaultevictor.DefaultEvictor{}, &defaultevictor.DefaultEvictorArgs{}, nil, nil, reg)
		prof, err := frameworkprofile.NewProfile(ctx, deschedulerapi.DeschedulerProfile{
			Name: p.Name,
			PluginConfigs: []deschedulerapi.PluginConfig{
				{Name: lownodeload.Name, Args: lnl},
				{Name: v1alpha2.MigrationControllerName, Args: evictorArgs(mc)},
			},
			Plugins: deschedulerapi.Plugins{
				Balance:           deschedulerapi.PluginSet{Enabled: []string{lownodeload.Name}},
				Filter:            deschedulerapi.PluginSet{Enabled: []string{v1alpha2.MigrationControllerName}},
				PreEvictionFilter: deschedulerapi.PluginSet{Enabled: []string{v1alpha2.MigrationControllerName}},
			},
		}, reg, frameworkprofile.WithClientSet(r.kube), frameworkprofile.WithSharedInformerFactory(factory),
			frameworkprofile.WithPodEvictor(podEvictor), frameworkprofile.WithGetPodsAssignedToNodeFnc(getPods))
		if err != nil {
			return fmt.Errorf("profile %s: %w", p.Name, err)
		}
		sel := labels.Everything()
		for _, s := range []*metav1.LabelSelector{r.o.Config.NodeSelector, p.NodeSelector} {
			if s == nil {
				continue
			}
			ps, err := metav1.LabelSelectorAsSelector(s)
			if err != nil {
				return fmt.Errorf("profile %s nodeSelector: %w", p.Name, err)
			}
			if reqs, ok := ps.Requirements(); ok {
				sel = sel.Add(reqs...)
			}
		}
		profiles = append(profiles, prof)
		selectors = append(selectors, sel)
	}
	setGuard, err := r.guardRules(ctx, factory, podEvictor, getPods)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go nmInformer.Run(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), nmInformer.HasSynced) {
		return ctx.Err()
	}
	setGuard()
	logger.Info("Descheduling", "profiles", len(profiles), "interval", r.o.Config.DeschedulingInterval.Duration, "dryRun", r.o.Config.DryRun)
	for {
		start := time.Now()
		for i, prof := range profiles {
			nodes, err := nodeLister.List(selectors[i])
			if err != nil {
				return err
			}
			nodes = slices.DeleteFunc(nodes, func(n *corev1.Node) bool { return !ready(n) })
			if st := prof.RunBalancePlugins(ctx, nodes); st != nil && st.Err != nil {
				logger.Error(st.Err, "Descheduling round")
			}
		}
		r.metrics.rounds.Observe(time.Since(start).Seconds())
		if r.o.Config.DeschedulingInterval.Duration == 0 {
			<-ctx.Done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.o.Config.DeschedulingInterval.Duration):
		}
	}
}

// guardRules builds the rules every PodMigrationJob is held to (see
// migration.Guard): the first profile's MigrationController namespaces and
// the framework's DefaultEvictor with its args, the very filter LowNodeLoad
// moves pods through. The returned function installs them; call it once
// the factory's caches have synced.
func (r *rounds) guardRules(ctx context.Context, factory informers.SharedInformerFactory, podEvictor *evictions.PodEvictor, getPods podutil.GetPodsAssignedToNodeFunc) (func(), error) {
	mc := r.o.Config.Run[0].MigrationController
	var ev *defaultevictor.DefaultEvictor
	reg := pluginregistry.NewRegistry()
	pluginregistry.Register(v1alpha2.MigrationControllerName, func(ctx context.Context, args runtime.Object, h frameworktypes.Handle) (frameworktypes.Plugin, error) {
		pl, err := defaultevictor.New(ctx, args, h)
		if err == nil {
			ev, _ = pl.(*defaultevictor.DefaultEvictor)
		}
		return pl, err
	}, &defaultevictor.DefaultEvictor{}, &defaultevictor.DefaultEvictorArgs{}, nil, nil, reg)
	_, err := frameworkprofile.NewProfile(ctx, deschedulerapi.DeschedulerProfile{
		Name:          "koord-migration-guard",
		PluginConfigs: []deschedulerapi.PluginConfig{{Name: v1alpha2.MigrationControllerName, Args: evictorArgs(mc)}},
		Plugins: deschedulerapi.Plugins{
			Filter:            deschedulerapi.PluginSet{Enabled: []string{v1alpha2.MigrationControllerName}},
			PreEvictionFilter: deschedulerapi.PluginSet{Enabled: []string{v1alpha2.MigrationControllerName}},
		},
	}, reg, frameworkprofile.WithClientSet(r.kube), frameworkprofile.WithSharedInformerFactory(factory),
		frameworkprofile.WithPodEvictor(podEvictor), frameworkprofile.WithGetPodsAssignedToNodeFnc(getPods))
	if err != nil {
		return nil, fmt.Errorf("the PodMigrationJob guard: %w", err)
	}
	if ev == nil {
		return nil, fmt.Errorf("the PodMigrationJob guard: %s did not build", v1alpha2.MigrationControllerName)
	}
	return func() {
		r.guard.Set(migration.GuardRules{Namespace: namespaces(mc.Namespaces), Filter: ev.Filter, PreEvictionFilter: ev.PreEvictionFilter})
	}, nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// evictorArgs are MigrationControllerArgs' pod filters in the framework's
// DefaultEvictor terms: DaemonSet and mirror pods are never moved.
func evictorArgs(m *v1alpha2.MigrationControllerArgs) *defaultevictor.DefaultEvictorArgs {
	a := &defaultevictor.DefaultEvictorArgs{
		LabelSelector: m.LabelSelector, EvictLocalStoragePods: m.EvictLocalStoragePods, EvictSystemCriticalPods: m.EvictSystemCriticalPods,
		IgnorePvcPods: m.IgnorePvcPods, EvictFailedBarePods: m.EvictFailedBarePods,
	}
	if t := m.PriorityThreshold; t != nil {
		a.PriorityThreshold = &deschedulerapi.PriorityThreshold{Value: t.Value, Name: t.Name}
	}
	return a
}

func namespaces(n *v1alpha2.Namespaces) func(string) bool {
	return func(ns string) bool {
		if n == nil {
			return true
		}
		if len(n.Include) > 0 && !slices.Contains(n.Include, ns) {
			return false
		}
		return !slices.Contains(n.Exclude, ns)
	}
}

// leaving are the pods of the unfinished PodMigrationJobs (the manager's
// cache), whoever made them.
func (r *rounds) leaving(ctx context.Context) (map[string]bool, error) {
	var jobs schedulingv1alpha1.PodMigrationJobList
	if err := r.c.List(ctx, &jobs); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, j := range jobs.Items {
		if unfinished(j.Status.Phase) && j.Spec.PodRef != nil {
			out[j.Spec.PodRef.Namespace+"/"+j.Spec.PodRef.Name] = true
		}
	}
	return out, nil
}

func unfinished(p schedulingv1alpha1.PodMigrationJobPhase) bool {
	return p == "" || p == schedulingv1alpha1.PodMigrationJobPending || p == schedulingv1alpha1.PodMigrationJobRunning
}

// migrate creates the PodMigrationJob for a move, unless the pod has an
// unfinished one already.
func (r *rounds) migrate(ctx context.Context, mc *v1alpha2.MigrationControllerArgs, m lownodeload.Move) error {
	var jobs schedulingv1alpha1.PodMigrationJobList
	if err := r.c.List(ctx, &jobs, client.MatchingLabels{migration.LabelJobPod: string(m.Pod.UID)}); err != nil {
		return err
	}
	for _, j := range jobs.Items {
		if unfinished(j.Status.Phase) {
			return nil
		}
	}
	job := &schedulingv1alpha1.PodMigrationJob{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lownodeload-", Labels: map[string]string{migration.LabelJobPod: string(m.Pod.UID)},
			Annotations: map[string]string{"descheduler.koordinator.sh/reason": m.Reason}},
		Spec: schedulingv1alpha1.PodMigrationJobSpec{
			Mode:   schedulingv1alpha1.PodMigrationJobMode(mc.DefaultJobMode),
			TTL:    ptr.To(*mc.DefaultJobTTL),
			PodRef: &corev1.ObjectReference{Kind: "Pod", Namespace: m.Pod.Namespace, Name: m.Pod.Name, UID: m.Pod.UID},
		},
	}
	if err := r.c.Create(ctx, job); err != nil {
		return err
	}
	r.metrics.moves.WithLabelValues(m.From).Inc()
	return nil
}

// metrics are koord_descheduler_*.
type metrics struct {
	hot    *prometheus.GaugeVec
	moves  *prometheus.CounterVec
	rounds prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		hot: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "koord_descheduler_lownodeload_nodes",
			Help: "Nodes by LowNodeLoad's judgement in the last round: hot (over the high thresholds long enough), rising (over, not yet long enough), low (under the low thresholds)."},
			[]string{"profile", "pool", "state"}),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "koord_descheduler_migrations_created_total",
			Help: "PodMigrationJobs created by LowNodeLoad, by source node."}, []string{"node"}),
		rounds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "koord_descheduler_round_duration_seconds",
			Help: "Time of one descheduling round over every profile.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}),
	}
	for _, c := range []prometheus.Collector{m.hot, m.moves, m.rounds} {
		_ = reg.Register(c) // a second instance in one process (tests) keeps the first's
	}
	return m
}

func (m *metrics) report(profile string) func(pool string, p lownodeload.Plan, dryRun bool) {
	return func(pool string, p lownodeload.Plan, dryRun bool) {
		m.hot.WithLabelValues(profile, pool, "hot").Set(float64(len(p.Hot)))
		m.hot.WithLabelValues(profile, pool, "rising").Set(float64(len(p.Rising)))
		m.hot.WithLabelValues(profile, pool, "low").Set(float64(len(p.Low)))
	}
}
