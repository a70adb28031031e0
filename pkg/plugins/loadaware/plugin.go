// Package loadaware implements LoadAwareScheduling: pods avoid nodes that are
// actually busy, as koordlet measures them in NodeMetric, rather than nodes
// whose requests are high. See README.md.
package loadaware

import (
	"context"
	"fmt"
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
	"github.com/koord-project/koord/pkg/reservationutil"
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
	if !cache.WaitForCacheSync(ctx.Done(), nmInformer.HasSynced) {
		return nil, fmt.Errorf("%s: NodeMetric informer did not sync", Name)
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
		addAll(sortedNames(m)...)
	}
	if args.Aggregated != nil {
		addAll(sortedNames(args.Aggregated.UsageThresholds)...)
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

// podState is computed once per scheduling cycle, in PreFilter.
type podState struct {
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

func (s *podState) Clone() fwk.StateData { return s }

func (p *Plugin) computePodState(pod *corev1.Pod) *podState {
	s := &podState{
		estimate: estimatePod(pod, p.resources, p.args.EstimatedScalingFactors),
		prod:     extension.PodPriorityClass(pod.Spec.Priority) == extension.PriorityProd,
		stale:    p.now().Add(-p.expiration).UnixNano(),
	}
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

// PreFilter computes the pod's estimated usage once for all nodes.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	// kube-scheduler waits for its own handlers, not for plugins'.
	if !p.ready.Load() {
		if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
			return nil, fwk.AsStatus(fmt.Errorf("NodeMetrics and pods are not synced yet"))
		}
		p.ready.Store(true)
	}
	state.Write(stateKey, p.computePodState(pod))
	return nil, nil
}

// PreFilterExtensions is nil: the estimate does not depend on other pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter rejects a node whose estimated usage, with this pod, would exceed a threshold.
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s := p.podState(state, pod)
	if s.daemonSet {
		return nil
	}
	st := p.filter(ctx, state, s, nodeInfo)
	if st != nil && s.turnedAway.CompareAndSwap(false, true) {
		p.rejected.Add(pod)
	}
	return st
}

func (p *Plugin) filter(ctx context.Context, state fwk.CycleState, s *podState, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	est := p.cache.estimate(node.Name)
	if est == nil {
		return nil // no NodeMetric yet: nothing to judge by
	}
	if p.expired(s, est) {
		if p.args.FilterExpiredNodeMetrics && !p.args.EnableScheduleWhenNodeMetricsExpired {
			if logger := klog.FromContext(ctx); logger.V(5).Enabled() {
				logger.V(5).Info("Node metric expired", "node", klog.KObj(node), "age", p.now().Sub(est.updateTime()).Round(time.Second))
			}
			return fwk.NewStatus(fwk.Unschedulable, reasonExpired)
		}
		return nil
	}
	usage, prod := p.usageThresholds, p.prodThresholds
	if t := p.customThresholds(ctx, node); t != nil {
		usage, prod = t.usage, t.prod
	}
	alloc := nodeInfo.GetAllocatable()
	var buf [maxResources]int64
	podEst := p.withReservations(s.holds.Get(state), node, s.estimate, buf[:0])
	if st := p.check(ctx, node, est, filterUsage, podEst, usage, alloc, p.overReasons); st != nil {
		return st
	}
	if s.prod && hasAny(prod) {
		if st := p.check(ctx, node, est, prodUsage, podEst, prod, alloc, p.prodOverReasons); st != nil {
			return st
		}
	}
	return nil
}

// maxResources bounds the resources a profile weighs or limits, so that the
// per-node sums fit a buffer on the stack.
const maxResources = 8

// withReservations adds to a pod's estimate what the node's reservations
// hold against it (those it does not consume), estimated as if their owners
// ran there already: their owners are coming, and a node filled up to its
// thresholds meanwhile would turn them away. Nodes without reservations
// cost nothing. The sum goes into buf (allocated only past maxResources).
func (p *Plugin) withReservations(holds frameworkext.Holds, node *corev1.Node, est vector, buf vector) vector {
	if holds == nil {
		return est
	}
	milliCPU, memory := holds.Held(node)
	if milliCPU == 0 && memory == 0 {
		return est
	}
	return p.addHeld(est, milliCPU, memory, buf)
}

// addHeld is est plus reserved CPU and memory, scaled as estimates are, in
// buf. It runs per node beside reservations, so the factors are worked out
// once, in New.
func (p *Plugin) addHeld(est vector, milliCPU, memory int64, buf vector) vector {
	out := append(buf, est...)
	out[0] += milliCPU * p.cpuFactor / 100
	out[1] += memory * p.memoryFactor / 100
	return out
}

func hasAny(v []int64) bool {
	for _, x := range v {
		if x > 0 {
			return true
		}
	}
	return false
}

// Filter's rejection reasons are fixed per resource, as the in-tree plugins'
// are ("Insufficient cpu"): kube-scheduler's FailedScheduling event counts
// the nodes per reason, and figures in the reason made one entry per figure
// (hundreds on a large cluster). Formatting them also cost every rejected
// node two more allocations, and more time than NodeResourcesFit's whole
// rejection. The figures go to the log at verbosity 5. No '%' in a reason:
// kube-scheduler uses it as the format string of the event.
const (
	reasonOver     = "node(s) %s usage over the load threshold"
	reasonProdOver = "node(s) prod %s usage over the load threshold"
	reasonExpired  = "node(s) with an expired node metric"
)

// check compares the node's usage of the given kind plus the pod against
// thresholds, in percent of allocatable; reasons are the rejection reasons
// by resource.
func (p *Plugin) check(ctx context.Context, node *corev1.Node, est *nodeEstimate, usage int, pod vector, thresholds []int64, alloc fwk.Resource, reasons []string) *fwk.Status {
	i := p.over(est, usage, pod, thresholds, alloc)
	if i < 0 {
		return nil
	}
	if logger := klog.FromContext(ctx); logger.V(5).Enabled() {
		a, used := allocatable(alloc, p.resources[i]), est.get(i, usage)+pod[i]
		logger.V(5).Info("Node over its usage threshold with the pod", "node", klog.KObj(node), "resource", p.resources[i],
			"prodOnly", usage == prodUsage, "usagePercent", used*100/a, "thresholdPercent", thresholds[i])
	}
	return fwk.NewStatus(fwk.Unschedulable, reasons[i])
}

// over is the first resource whose usage with the pod would exceed its
// threshold, -1 when none would.
func (p *Plugin) over(est *nodeEstimate, usage int, pod vector, thresholds []int64, alloc fwk.Resource) int {
	for i, t := range thresholds {
		if t <= 0 {
			continue
		}
		a := allocatable(alloc, p.resources[i])
		if a <= 0 {
			continue
		}
		if (est.get(i, usage)+pod[i])*100 > t*a {
			return i
		}
	}
	return -1
}

func allocatable(r fwk.Resource, name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.GetMilliCPU()
	case corev1.ResourceMemory:
		return r.GetMemory()
	case corev1.ResourceEphemeralStorage:
		return r.GetEphemeralStorage()
	}
	return r.GetScalarResources()[name]
}

func (p *Plugin) expired(s *podState, est *nodeEstimate) bool {
	return p.expiration > 0 && est.updated < s.stale
}

// PreScore makes sure the pod state exists when Filter was skipped.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if _, err := state.Read(stateKey); err != nil {
		state.Write(stateKey, p.computePodState(pod))
	}
	return nil
}

// Score is the weighted least-used (or most-used) share of allocatable,
// 0–100, from the same estimate Filter uses. Nodes without a fresh metric score 0.
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s := p.podState(state, pod)
	node := nodeInfo.Node()
	est := p.cache.estimate(node.Name)
	if est == nil || p.expired(s, est) {
		return 0, nil
	}
	var buf [maxResources]int64
	return p.score(s, est, p.withReservations(s.holds.Get(state), node, s.estimate, buf[:0]), nodeInfo.GetAllocatable()), nil
}

// score is Score's value for a node with a fresh estimate, podEst being the
// pod's estimate with what the node's reservations hold against it.
func (p *Plugin) score(s *podState, est *nodeEstimate, podEst vector, alloc fwk.Resource) int64 {
	if p.weightSum == 0 {
		return 0
	}
	usage := scoreUsage
	if s.prod && p.args.ScoreAccordingProdUsage {
		usage = prodUsage
	}
	var total int64
	for i, w := range p.weights {
		if w == 0 {
			continue
		}
		a := allocatable(alloc, p.resources[i])
		if a <= 0 {
			continue
		}
		used := min(est.get(i, usage)+podEst[i], a)
		score := (a - used) * fwk.MaxNodeScore / a
		if p.args.ScoringStrategy == config.MostUsed {
			score = used * fwk.MaxNodeScore / a
		}
		total += score * w
	}
	return total / p.weightSum
}

// ScoreExtensions is nil: scores are already 0–100.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve counts the pod on its node before it is bound, so the next pods in
// a burst see it. A reservation's placeholder is not counted: it is never
// bound, and once its Bind has made the reservation Available, the
// reservation is what is counted (frameworkext.Holds). A record of it would
// count the reservation twice until the placeholder's deletion reached the
// plugin; under load, the integration test saw one outlive the deletion
// (left until a later metric is taken to include it) and turn the
// reservation's owner away by load that was not there.
func (p *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	if reservationutil.PlaceholderOf(pod) != "" {
		return nil
	}
	p.cache.assign(pod, nodeName, p.now(), p.podState(state, pod).estimate)
	return nil
}

// Unreserve forgets a pod whose binding did not happen.
func (p *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) {
	p.cache.remove(pod.UID)
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
		p.cache.setMetric(nm.Name, nil)
		return
	}
	p.cache.setMetric(nm.Name, nm)
	if nm.Status.NodeMetric != nil && nm.Status.UpdateTime != nil {
		p.rejected.Activate(p.logger, p.handle)
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
