// Package agent is koordlet's main loop: it watches its node's pods and
// objects and keeps what it publishes in step with the node.
package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	nrtclientset "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	koordinformers "github.com/koord-project/koord/pkg/client/informers/externalversions"
	"github.com/koord-project/koord/pkg/client/lenient"
	schedlisters "github.com/koord-project/koord/pkg/client/listers/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/evict"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
	"github.com/koord-project/koord/pkg/koordlet/qos"
	"github.com/koord-project/koord/pkg/koordlet/reporter"
	"github.com/koord-project/koord/pkg/koordlet/topology"
	"github.com/koord-project/koord/pkg/koordlet/usage"
)

// Options are koordlet's inputs; the roots let tests point it at fixture trees.
type Options struct {
	NodeName       string
	SysfsRoot      string
	ProcfsRoot     string
	KubeletRootDir string
	// CgroupRoot is where the cgroup hierarchies are mounted; KubeletCgroupRoot
	// is kubelet's --cgroup-root under it. Pod cgroups are found there.
	CgroupRoot        string
	KubeletCgroupRoot string
	// SyncInterval is how often the machine's topology is re-read (CPU
	// hotplug); kubelet's state and the pods are re-read every
	// ReconcileInterval, and at once on any event.
	SyncInterval      time.Duration
	ReconcileInterval time.Duration
	// CollectInterval is how often usage is sampled; the histories hold
	// MaxWindow of node samples (the longest aggregation window reported).
	CollectInterval time.Duration
	MaxWindow       time.Duration
	// RunQueueLatency loads the eBPF probe; where it cannot load, koordlet
	// runs without it and says why once.
	RunQueueLatency bool
	// NRT, when set, also receives the topology as a NodeResourceTopology.
	NRT nrtclientset.Interface
	// Gates are the feature gates (features.New() defaults when nil): the
	// QoS strategies run only where their gate is on.
	Gates featuregate.FeatureGate
	// Dynamic, when set, reads the NodeSLO and Reservations one object at a
	// time (package lenient); without it, the typed clients (tests' fakes).
	Dynamic dynamic.Interface
	// KubeletPodResourcesSocket is kubelet's pod-resources API, asked for
	// the CPUs kubelet pinned when its cpu_manager_state is not under
	// KubeletRootDir (default <KubeletRootDir>/pod-resources/kubelet.sock).
	KubeletPodResourcesSocket string
	// SchedulerNames are koord-scheduler's profiles: only their pods'
	// resource-status cpusets are applied (qos.VetClaims). Default
	// koord-scheduler.
	SchedulerNames []string
}

// DefaultSchedulerName is koord-scheduler's default profile.
const DefaultSchedulerName = "koord-scheduler"

// Agent is one koordlet.
type Agent struct {
	opts Options
	// podResources asks kubelet which CPUs it pinned (nil without a socket path).
	podResources *topology.PodResources
	client       kubernetes.Interface
	koord        koordclientset.Interface
	collector    *usage.Collector
	latency      *latency // nil without eBPF
	reg          prometheus.Registerer
	// nextReport is when NodeMetric is next written (owned by Run).
	nextReport time.Time
	metrics    *metrics
	faults     *faults

	// sloSynced and resSynced are the NodeSLO and Reservation informers'.
	sloSynced, resSynced cache.InformerSynced
	pods                 corelisters.PodLister
	nodes                corelisters.NodeLister
	cms                  corelisters.ConfigMapLister
	reservations         schedlisters.ReservationLister
	slo                  *nodeslo.Source
	recorder             record.EventRecorder
	qos                  qosState
	qosMetrics           *qosMetrics
	synced               []cache.InformerSynced
	start                func(stop <-chan struct{})
	trigger              chan struct{}
	healthy              atomic.Bool

	// Owned by the Run loop.
	machine   *topology.Machine
	machineAt time.Time
	layout    *cgroup.Layout
	// applied is what each pod's cgroups were last seen or made to hold
	// (cpuset and container IDs); between full checks, pods whose plan is
	// unchanged are not re-read.
	applied     map[types.UID]string
	lastChecked time.Time
	// shared is the shared pool of the last pass: what non-bound pods run on
	// and BE suppression picks from.
	shared cpuset.CPUSet
}

// New wires an agent to the API server (koord for NodeMetric); reg receives
// its metrics.
func New(client kubernetes.Interface, koord koordclientset.Interface, opts Options, reg prometheus.Registerer) (*Agent, error) {
	if opts.NodeName == "" {
		return nil, errors.New("the node name is required (--node-name or NODE_NAME)")
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = time.Minute
	}
	if opts.ReconcileInterval <= 0 {
		opts.ReconcileInterval = time.Second
	}
	if opts.CollectInterval <= 0 {
		opts.CollectInterval = 5 * time.Second
	}
	if opts.MaxWindow <= 0 {
		opts.MaxWindow = slices.Max(slov1alpha1.DefaultAggregateWindows())
	}
	if opts.Gates == nil {
		opts.Gates = features.New()
	}
	if len(opts.SchedulerNames) == 0 {
		opts.SchedulerNames = []string{DefaultSchedulerName}
	}
	if opts.KubeletPodResourcesSocket == "" && opts.KubeletRootDir != "" {
		opts.KubeletPodResourcesSocket = filepath.Join(opts.KubeletRootDir, "pod-resources", "kubelet.sock")
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	qm, err := newQoSMetrics(reg)
	if err != nil {
		return nil, err
	}
	evictions := evict.NewEvictionsMetric()
	if err := reg.Register(evictions); err != nil {
		return nil, err
	}
	// Events (invalid NodeSLO, evictions, quota conflicts) name koordlet and its node.
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := slov1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "koordlet", Host: opts.NodeName})
	a := &Agent{opts: opts, client: client, koord: koord, metrics: m, qosMetrics: qm, recorder: recorder, faults: newFaults(m), trigger: make(chan struct{}, 1),
		// Pods' histories cover the NodeMetric aggregation window; 10 minutes
		// bounds what a controller may ask for.
		collector: usage.NewCollector(opts.ProcfsRoot, opts.CollectInterval, opts.MaxWindow, 10*time.Minute), reg: reg}
	if opts.KubeletPodResourcesSocket != "" {
		a.podResources = &topology.PodResources{Socket: opts.KubeletPodResourcesSocket}
	}

	// Only this node's pods, this Node and this node's ConfigMap: the agent's
	// watch cost does not grow with the cluster.
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", opts.NodeName).String()
	}))
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", opts.NodeName).String()
	}))
	cmFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(extension.NUMAInfoNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", extension.NUMAInfoConfigMapName(opts.NodeName)).String()
		}))
	kick := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.kick() },
		UpdateFunc: func(any, any) { a.kick() },
		DeleteFunc: func(any) { a.kick() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		podFactory.Core().V1().Pods().Informer(),
		nodeFactory.Core().V1().Nodes().Informer(),
		cmFactory.Core().V1().ConfigMaps().Informer(),
	} {
		reg, err := inf.AddEventHandler(kick)
		if err != nil {
			return nil, err
		}
		a.synced = append(a.synced, reg.HasSynced)
	}
	a.pods = podFactory.Core().V1().Pods().Lister()
	if err := reg.Register(containerUsage{a}); err != nil {
		return nil, err
	}
	a.nodes = nodeFactory.Core().V1().Nodes().Lister()
	a.cms = cmFactory.Core().V1().ConfigMaps().Lister()
	a.qos = qosState{gates: opts.Gates, evictor: &evict.Evictor{Client: client, Recorder: recorder, Total: evictions}}
	// The node's own NodeSLO, and the reservations placed on the node (the
	// CRD makes status.nodeName selectable): neither watch grows with the cluster.
	sloTweak := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", opts.NodeName).String()
	}
	resTweak := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("status.nodeName", opts.NodeName).String()
	}
	sloFactory := koordinformers.NewSharedInformerFactoryWithOptions(koord, 0, koordinformers.WithTweakListOptions(sloTweak))
	resFactory := koordinformers.NewSharedInformerFactoryWithOptions(koord, 0, koordinformers.WithTweakListOptions(resTweak))
	if opts.Dynamic != nil {
		// One object that does not decode is skipped and reported, not a
		// cache that never syncs (package lenient).
		refused := func(u *unstructured.Unstructured, err error) {
			a.faults.report(klog.Background(), "decode/"+string(u.GetUID())+"/"+u.GetResourceVersion(), err)
		}
		sloFactory.InformerFor(&slov1alpha1.NodeSLO{}, func(koordclientset.Interface, time.Duration) cache.SharedIndexInformer {
			return lenient.Informer(opts.Dynamic, lenient.NodeSLOs, sloTweak, refused)
		})
		resFactory.InformerFor(&schedulingv1alpha1.Reservation{}, func(koordclientset.Interface, time.Duration) cache.SharedIndexInformer {
			return lenient.Informer(opts.Dynamic, lenient.Reservations, resTweak, refused)
		})
	}
	// Koord's CRDs may be missing (a chart toggled off, an API server still
	// starting): these two are not waited for forever (see Run).
	for _, inf := range []struct {
		informer cache.SharedIndexInformer
		synced   *cache.InformerSynced
	}{
		{sloFactory.Slo().V1alpha1().NodeSLOs().Informer(), &a.sloSynced},
		{resFactory.Scheduling().V1alpha1().Reservations().Informer(), &a.resSynced},
	} {
		reg, err := inf.informer.AddEventHandler(kick)
		if err != nil {
			return nil, err
		}
		*inf.synced = reg.HasSynced
	}
	a.slo = &nodeslo.Source{Lister: sloFactory.Slo().V1alpha1().NodeSLOs().Lister(), Node: opts.NodeName, Recorder: recorder}
	a.reservations = resFactory.Scheduling().V1alpha1().Reservations().Lister()
	a.start = func(stop <-chan struct{}) {
		podFactory.Start(stop)
		nodeFactory.Start(stop)
		cmFactory.Start(stop)
		sloFactory.Start(stop)
		resFactory.Start(stop)
	}
	return a, nil
}

func (a *Agent) kick() {
	select {
	case a.trigger <- struct{}{}:
	default: // a sync is already pending; it will see this change too
	}
}

// Run publishes until ctx ends. Failures (API server away, unreadable
// files) are logged once per cause, counted, and retried on the next event
// or tick; they never stop the agent.
func (a *Agent) Run(ctx context.Context) error {
	if a.opts.RunQueueLatency {
		a.loadProbe(klog.FromContext(ctx))
		if a.latency != nil {
			defer a.latency.probe.Close()
		}
	}
	a.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return ctx.Err()
	}
	// The NodeSLO and Reservation caches get a deadline: without the CRDs
	// koordlet still publishes topology and usage and pins CPUs, and the
	// informers keep trying, so a CRD installed later is picked up.
	deadline, cancel := context.WithTimeout(ctx, optionalSyncTimeout)
	synced := cache.WaitForCacheSync(deadline.Done(), a.sloSynced, a.resSynced)
	cancel()
	if !synced && ctx.Err() == nil {
		klog.FromContext(ctx).Info("NodeSLO or Reservation cache not synced yet: the QoS strategies wait for the NodeSLO, CPU fencing runs without reservations meanwhile (are Koord's CRDs installed?)",
			"nodeSLOSynced", a.sloSynced(), "reservationsSynced", a.resSynced(), "waited", optionalSyncTimeout)
	}
	a.healthy.Store(true)
	ticker := time.NewTicker(a.opts.ReconcileInterval)
	defer ticker.Stop()
	collect := time.NewTicker(a.opts.CollectInterval)
	defer collect.Stop()
	a.kick()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.trigger:
			a.reconcile(ctx)
		case <-ticker.C:
			a.reconcile(ctx)
		case <-collect.C:
			// The time of the read, not of the tick: a tick that waited
			// behind a reconcile would skew the rate.
			a.collect(ctx, time.Now())
		}
	}
}

// collect samples usage and, when due, writes NodeMetric.
func (a *Agent) collect(ctx context.Context, now time.Time) {
	logger := klog.FromContext(ctx)
	running := a.running()
	if a.latency != nil && a.layout != nil {
		a.latency.collect(a.layout, running)
	}
	if err := a.collector.Collect(now, a.layout, running); err != nil {
		a.faults.report(logger, "procfs", err)
		return
	}
	a.faults.clear(logger, "procfs")
	// The strategies that act on usage decide on each fresh sample, and
	// what they decide is written at once.
	if a.layout != nil {
		a.decide(ctx, now, running)
		a.reconcile(ctx)
	}
	if now.Before(a.nextReport) {
		return
	}
	node, err := a.nodes.Get(a.opts.NodeName)
	if err != nil {
		return // reported by reconcile
	}
	policy, wrote, err := reporter.PublishNodeMetric(ctx, a.koord, node, func(p reporter.Policy) (*slov1alpha1.NodeMetricStatus, bool) {
		st, ok := reporter.NodeMetricStatus(now, a.collector, running, p)
		if ok && a.latency != nil {
			uids := map[string]types.UID{}
			for _, pod := range running {
				uids[pod.Namespace+"/"+pod.Name] = pod.UID
			}
			for _, pm := range st.PodsMetric {
				pm.Extensions = a.latency.extension(uids[pm.Namespace+"/"+pm.Name])
			}
		}
		return st, ok
	})
	if err != nil {
		a.faults.report(logger, "nodemetric", err)
		return // retried at the next sample
	}
	a.faults.clear(logger, "nodemetric")
	if wrote {
		a.metrics.nodeMetricReports.Inc()
		a.nextReport = now.Add(policy.Report)
	}
}

// reconcile brings what koordlet publishes and enforces in line with the
// node: the numa-info ConfigMap, then the pods' cpusets.
func (a *Agent) reconcile(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if a.machine == nil || time.Since(a.machineAt) >= a.opts.SyncInterval {
		m, err := topology.ReadMachine(a.opts.SysfsRoot, a.opts.ProcfsRoot)
		if err != nil {
			a.faults.report(logger, "sysfs", err)
			return
		}
		a.faults.clear(logger, "sysfs")
		a.machine, a.machineAt = m, time.Now()
		numaOf := make(map[int]int, len(m.CPUTopology.Detail))
		for _, c := range m.CPUTopology.Detail {
			numaOf[int(c.ID)] = int(c.Node)
		}
		a.collector.SetNUMA(a.opts.SysfsRoot, numaOf)
	}
	k, err := topology.ReadKubelet(a.opts.KubeletRootDir)
	if err != nil {
		a.faults.report(logger, "kubelet", err)
		return
	}
	a.faults.clear(logger, "kubelet")
	pods := a.running()
	if !k.FromState && a.podResources != nil && a.podResources.Available() {
		byName, err := a.podResources.Pinned(ctx)
		if err != nil {
			// Without knowing kubelet's pins, the shared pool could
			// overlap them: wait rather than pin wrongly.
			a.faults.report(logger, "podresources", err)
			return
		}
		a.faults.clear(logger, "podresources")
		refs := make([]topology.PodRef, len(pods))
		for i, p := range pods {
			refs[i] = topology.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
		}
		k.AddPinned(byName, refs)
	}
	// Each pod's resource-status is read once per pass, for both uses.
	bound, malformed := qos.Bound(pods)
	for _, p := range pods {
		cause := "annotation/" + string(p.UID)
		if err, bad := malformed[p.UID]; bad {
			a.faults.report(logger, cause, err)
		} else {
			a.faults.clear(logger, cause)
		}
	}
	a.vetClaims(logger, k, pods, bound)
	a.syncTopology(ctx, a.machine, k, pods, bound)
	a.pinCPUs(ctx, a.machine, k, pods, bound, malformed)
}

// syncTopology publishes the node's topology if it changed.
func (a *Agent) syncTopology(ctx context.Context, m *topology.Machine, k *topology.Kubelet, pods []*corev1.Pod, bound map[types.UID]cpuset.CPUSet) {
	logger := klog.FromContext(ctx)
	node, err := a.nodes.Get(a.opts.NodeName)
	if err != nil {
		a.faults.report(logger, "node", fmt.Errorf("node %s: %w", a.opts.NodeName, err))
		return
	}
	a.faults.clear(logger, "node")
	refs := make([]topology.PodRef, 0, len(pods))
	for _, p := range pods {
		refs = append(refs, topology.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID, CPUs: bound[p.UID]})
	}
	info, err := topology.NUMAInfo(m, k, refs)
	if err != nil {
		a.faults.report(logger, "topology", err)
		return
	}
	current := func() (*corev1.ConfigMap, error) {
		cm, err := a.cms.ConfigMaps(extension.NUMAInfoNamespace).Get(extension.NUMAInfoConfigMapName(a.opts.NodeName))
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return cm, err
	}
	result, err := reporter.PublishNUMAInfo(ctx, a.client, node, info, current)
	if err != nil {
		a.faults.report(logger, "publish", err)
		return
	}
	a.faults.clear(logger, "publish")
	a.metrics.numaInfoSyncs.WithLabelValues(string(result)).Inc()
	if a.opts.NRT != nil {
		if _, err := reporter.PublishNodeResourceTopology(ctx, a.opts.NRT, node, info); err != nil {
			a.faults.report(logger, "noderesourcetopology", err)
		} else {
			a.faults.clear(logger, "noderesourcetopology")
		}
	}
	if result != reporter.Unchanged {
		logger.V(2).Info("Published NUMA info", "configmap", klog.KRef(extension.NUMAInfoNamespace, extension.NUMAInfoConfigMapName(a.opts.NodeName)), "result", result)
	}
}

// optionalSyncTimeout is how long Run waits for the NodeSLO and Reservation
// caches before it carries on without them.
var optionalSyncTimeout = 30 * time.Second
