// Package loadaware implements LoadAwareScheduling: pods avoid nodes that are
// actually busy, as koordlet measures them in NodeMetric, rather than nodes
// whose requests are high. See README.md.
package loadaware

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/config/validation"
	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/client/lenient"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Name is the plugin's registered name.
const Name = "LoadAwareScheduling"

const stateKey fwk.StateKey = Name

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Plugin is LoadAwareScheduling.
type Plugin struct {
	handle    fwk.Handle
	args      *config.LoadAwareSchedulingArgs
	cache     *usageCache
	resources []corev1.ResourceName
	// Thresholds as vectors aligned with resources; 0 means not checked.
	usageThresholds, prodThresholds []int64
	// overReasons and prodOverReasons are Filter's rejection reasons, one
	// per resource (see check).
	overReasons, prodOverReasons []string
	weights                      []int64
	weightSum                    int64
	// cpuFactor and memoryFactor scale what reservations hold as estimates
	// are scaled (resources[0] and [1] are cpu and memory).
	cpuFactor, memoryFactor int64
	expiration              time.Duration
	now                     func() time.Time

	// synced are the event handlers that must have seen every NodeMetric and
	// assigned pod before the first pod is placed: a restarted scheduler
	// must not place pods on nodes it has not yet seen to be busy.
	synced []cache.InformerSynced
	ready  atomic.Bool

	// rejected are the pods Filter turned away, tried again when a node's
	// load may have dropped (a new NodeMetric, a pod gone, a reservation
	// consumed) once the cache has the change.
	rejected frameworkext.Rejected
	logger   klog.Logger
	// rawAllocatable caches each node's parsed raw-allocatable annotation
	// (node name → *rawEntry).
	rawAllocatable sync.Map
	// slowReports are the nodes whose NodeMetric asks for reports further
	// apart than nodeMetricExpirationSeconds, each told once (slowReport).
	slowReports sync.Map
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// New builds the plugin from its typed args and starts watching NodeMetrics
// (the extender's informer) and assigned pods, so that its view is rebuilt
// from the API server on start.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, ext *frameworkext.Extender) (fwk.Plugin, error) {
	args, ok := obj.(*config.LoadAwareSchedulingArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type LoadAwareSchedulingArgs, got %T", obj)
	}
	if err := validation.ValidateLoadAwareSchedulingArgs(nil, args); err != nil {
		return nil, err
	}
	p := newPlugin(args, h, time.Now)
	p.logger = klog.FromContext(ctx).WithName(Name)
	frameworkext.ReportArgsNotActedOn(p.logger, Name, args.NotActedOn())
	factory, err := ext.Informers(h)
	if err != nil {
		return nil, err
	}
	nmInformer := factory.Slo().V1alpha1().NodeMetrics().Informer()
	nmReg, err := nmInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onNodeMetric(obj, false) },
		UpdateFunc: func(_, obj any) { p.onNodeMetric(obj, false) },
		DeleteFunc: func(obj any) { p.onNodeMetric(obj, true) },
	})
	if err != nil {
		return nil, err
	}
	podReg, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.onPod,
		UpdateFunc: func(_, obj any) { p.onPod(obj) },
		DeleteFunc: p.onPodDelete,
	})
	if err != nil {
		return nil, err
	}
	ext.OnHoldsChanged(func() { p.rejected.Activate(p.logger, p.handle) })
	p.synced = []cache.InformerSynced{nmReg.HasSynced, podReg.HasSynced}
	ext.Start(ctx)
	// A deadline, not a wait for ever: the scheduler then exits naming
	// what did not sync, and its Deployment's restarts show it.
	if err := lenient.WaitForSync(ctx, frameworkext.SyncTimeout, Name+": the NodeMetric informer", nmInformer.HasSynced); err != nil {
		return nil, err
	}
	return p, nil
}

func newPlugin(args *config.LoadAwareSchedulingArgs, h fwk.Handle, now func() time.Time) *Plugin {
	// Track every resource any weight or threshold names, cpu and memory first.
	seen := map[corev1.ResourceName]bool{}
	var resources []corev1.ResourceName
	addAll := func(names ...corev1.ResourceName) {
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				resources = append(resources, n)
			}
		}
	}
	addAll(corev1.ResourceCPU, corev1.ResourceMemory)
	for _, m := range []map[corev1.ResourceName]int64{args.ResourceWeights, args.UsageThresholds, args.ProdUsageThresholds} {
		addAll(extension.SortedResourceNames(m)...)
	}
	if args.Aggregated != nil {
		addAll(extension.SortedResourceNames(args.Aggregated.UsageThresholds)...)
	}
	p := &Plugin{
		handle:     h,
		args:       args,
		resources:  resources,
		expiration: time.Duration(args.NodeMetricExpirationSeconds) * time.Second,
		now:        now,
		logger:     klog.Background(),
	}
	thresholds := args.UsageThresholds
	if args.Aggregated != nil && len(args.Aggregated.UsageThresholds) > 0 {
		thresholds = args.Aggregated.UsageThresholds
	}
	p.usageThresholds = p.align(thresholds)
	p.prodThresholds = p.align(args.ProdUsageThresholds)
	for _, r := range resources {
		p.overReasons = append(p.overReasons, fmt.Sprintf(reasonOver, r))
		p.prodOverReasons = append(p.prodOverReasons, fmt.Sprintf(reasonProdOver, r))
	}
	p.weights = p.align(args.ResourceWeights)
	for _, w := range p.weights {
		p.weightSum += w
	}
	p.cpuFactor = scalingFactor(args.EstimatedScalingFactors, corev1.ResourceCPU)
	p.memoryFactor = scalingFactor(args.EstimatedScalingFactors, corev1.ResourceMemory)
	p.cache = newCache(args, resources, now)
	return p
}

func (p *Plugin) align(m map[corev1.ResourceName]int64) []int64 {
	v := make([]int64, len(p.resources))
	for i, name := range p.resources {
		v[i] = m[name]
	}
	return v
}

// podState is computed once per scheduling cycle, in PreFilter. The
// cycle's part is shared by the state's clones; moved is each clone's own
// (see preemption.go).
type podState struct {
	*podCycle
	moved *moved
}

// podCycle is what a cycle works out once for the pod.
type podCycle struct {
	estimate  vector
	prod      bool
	daemonSet bool
	// stale is the update time (Unix nanoseconds) before which a NodeMetric
	// has expired, fixed for the cycle: reading the clock for every node
	// costs more than the rest.
	stale int64
	// holds is the pod's frameworkext.Holds, read once per cycle instead
	// of once per node.
	holds frameworkext.HoldsOnce
	// turnedAway is set when Filter first turns the pod away in this cycle:
	// it is then remembered once, not once per node.
	turnedAway atomic.Bool
}

func (s *podState) Clone() fwk.StateData {
	return &podState{podCycle: s.podCycle, moved: s.moved.clone()}
}

func (p *Plugin) computePodState(pod *corev1.Pod) *podState {
	s := &podState{podCycle: &podCycle{
		estimate: estimatePod(pod, p.resources, podFactors(p.args, pod)),
		prod:     extension.PodPriorityClass(pod.Spec.Priority) == extension.PriorityProd,
		stale:    p.now().Add(-p.expiration).UnixNano(),
	}}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "DaemonSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String() {
			s.daemonSet = true
		}
	}
	return s
}

func (p *Plugin) podState(state fwk.CycleState, pod *corev1.Pod) *podState {
	if d, err := state.Read(stateKey); err == nil {
		if s, ok := d.(*podState); ok {
			return s
		}
	}
	return p.computePodState(pod)
}

// EventsToRegister: a node that comes or changes its allocatable or its
// usage-thresholds annotation, and a pod that leaves, may let pods in. New
// NodeMetrics and reservations that hold less are the plugin's own objects:
// it requeues the pods it turned away itself, once its cache has the change
// (frameworkext.Rejected).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeAnnotation}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}

func asNodeMetric(obj any) *slov1alpha1.NodeMetric {
	switch o := obj.(type) {
	case *slov1alpha1.NodeMetric:
		return o
	case cache.DeletedFinalStateUnknown:
		return asNodeMetric(o.Obj)
	}
	return nil
}

// onNodeMetric records a node's metric; one that carries usage may show the
// node less busy, so the pods turned away try again.
func (p *Plugin) onNodeMetric(obj any, deleted bool) {
	nm := asNodeMetric(obj)
	if nm == nil {
		return
	}
	if deleted {
		// A NodeMetric goes with its node (owner reference): so does the
		// node's parsed raw-allocatable.
		p.cache.setMetric(nm.Name, nil)
		p.rawAllocatable.Delete(nm.Name)
		return
	}
	p.cache.setMetric(nm.Name, nm)
	p.slowReport(nm)
	if nm.Status.NodeMetric != nil && nm.Status.UpdateTime != nil {
		p.rejected.Activate(p.logger, p.handle)
	}
}

// slowReport tells, once per node and interval, that a NodeMetric's report
// interval (koord-manager's metricReportIntervalSeconds) is not shorter
// than nodeMetricExpirationSeconds: every report of that node expires
// before the next comes, and with filterExpiredNodeMetrics the node is
// filtered out for good.
func (p *Plugin) slowReport(nm *slov1alpha1.NodeMetric) {
	interval := nm.Spec.CollectPolicy.ReportInterval()
	if p.expiration <= 0 || interval < p.expiration {
		p.slowReports.Delete(nm.Name)
		return
	}
	if prev, told := p.slowReports.Swap(nm.Name, interval); told && prev == interval {
		return
	}
	msg := fmt.Sprintf("reportIntervalSeconds %d is not shorter than LoadAwareScheduling's nodeMetricExpirationSeconds %d: each report expires before the next one; lower metricReportIntervalSeconds in slo-controller-config or raise nodeMetricExpirationSeconds",
		int64(interval/time.Second), int64(p.expiration/time.Second))
	p.logger.Info("NodeMetric reports too seldom", "nodeMetric", nm.Name, "reason", msg)
	if p.handle == nil {
		return
	}
	if rec := p.handle.EventRecorder(); rec != nil {
		rec.Eventf(nm, nil, corev1.EventTypeWarning, "NodeMetricExpiresBeforeReport", "Scheduling", msg)
	}
}

func (p *Plugin) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	p.rejected.Forget(pod.UID)
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		if p.cache.remove(pod.UID) {
			p.rejected.Activate(p.logger, p.handle)
		}
		return
	}
	p.cache.assign(pod, pod.Spec.NodeName, boundTime(pod, p.now), nil)
}

func (p *Plugin) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.rejected.Forget(pod.UID)
		if p.cache.remove(pod.UID) {
			p.rejected.Activate(p.logger, p.handle)
		}
	}
}

// boundTime is when the pod was scheduled: after a restart this is what tells
// whether the last metric can already include it.
func boundTime(pod *corev1.Pod, now func() time.Time) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return now()
}
