// Package numaresource implements NodeNUMAResource: latency-critical pods get
// exclusive, topology-aligned CPUs chosen by the scheduler from each node's
// CPU topology (koordlet's kube-system/<node>-numa-info ConfigMap), recorded
// on the pod as scheduling.koordinator.sh/resource-status for koordlet to pin.
// See README.md.
package numaresource

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/config/validation"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Name is the plugin's registered name.
const Name = "NodeNUMAResource"

const (
	podStateKey  fwk.StateKey = Name + "/pod"
	reservedKey  fwk.StateKey = Name + "/reserved"
	maxNodeScore              = fwk.MaxNodeScore
)

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PreBindPlugin     = &Plugin{}
	_ fwk.PostBindPlugin    = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Plugin is NodeNUMAResource.
type Plugin struct {
	handle fwk.Handle
	ext    *frameworkext.Extender
	args   *config.NodeNUMAResourceArgs
	state  *State

	// synced are the event handlers that must have seen every existing pod
	// and topology before the first pod is placed, or a restarted scheduler
	// could hand out CPUs a running pod holds.
	synced []cache.InformerSynced
	ready  atomic.Bool

	// rejected are pods this plugin turned away somewhere; they are retried
	// as soon as a topology arrives or CPUs are freed. The scheduler
	// requeues them on pod deletion by itself, but its handler may run
	// before ours has released the deleted pod's CPUs.
	rejected frameworkext.Rejected
	// ignored are pods whose CPU claim was ignored and said so (ignoreClaim).
	ignored sync.Map
	logger  klog.Logger

	nodeScore, numaScore scorer

	// binding says whether the profile binds with frameworkext.Bind (the
	// chosen CPUs ride on the Binding) or needs the PreBind patch.
	binding frameworkext.CarriedOnce
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// New builds the plugin from its typed args and starts watching topologies
// and pods, so that its view of every node is rebuilt from the API server.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, ext *frameworkext.Extender) (fwk.Plugin, error) {
	args, ok := obj.(*config.NodeNUMAResourceArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type NodeNUMAResourceArgs, got %T", obj)
	}
	if err := validation.ValidateNodeNUMAResourceArgs(nil, args); err != nil {
		return nil, err
	}
	p := newPlugin(args, h, ext)
	p.logger = klog.FromContext(ctx).WithName(Name)
	// A reservation that ends or is consumed releases the CPUs it pinned.
	ext.OnHoldsChanged(p.retryRejected)
	topologySynced, err := p.watchTopology(ctx, h)
	if err != nil {
		return nil, err
	}
	reg, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onPod(ctx, obj) },
		UpdateFunc: func(_, obj any) { p.onPod(ctx, obj) },
		DeleteFunc: p.onPodDelete,
	})
	if err != nil {
		return nil, err
	}
	nodeReg, err := h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.onNode,
		UpdateFunc: func(_, obj any) { p.onNode(obj) },
		DeleteFunc: p.onNodeDelete,
	})
	if err != nil {
		return nil, err
	}
	p.synced = append(p.synced, topologySynced, reg.HasSynced, nodeReg.HasSynced)
	return p, nil
}

// onNode records the node's policy labels for its view.
func (p *Plugin) onNode(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		p.state.SetNodePolicies(node.Name, policiesOf(node.Labels))
	}
}

func (p *Plugin) onNodeDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		p.state.RemoveNodePolicies(node.Name)
	}
}

// newPlugin is the plugin before it watches anything (tests start here).
func newPlugin(args *config.NodeNUMAResourceArgs, h fwk.Handle, ext *frameworkext.Extender) *Plugin {
	ext.RegisterBinder(Name)
	return &Plugin{
		handle:    h,
		ext:       ext,
		args:      args,
		state:     NewState(),
		logger:    klog.Background(),
		nodeScore: newScorer(args.ScoringStrategy),
		numaScore: newScorer(args.NUMAScoringStrategy),
	}
}

func (p *Plugin) onPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		p.rejected.Forget(pod.UID)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		if p.state.Forget(pod.UID) {
			p.retryRejected()
		}
		return
	}
	if !p.ext.BoundHere(pod) {
		p.ignoreClaim(ctx, pod)
		return
	}
	if err := p.state.ObservePod(pod); err != nil {
		// The pod keeps what it held; an operator must fix the annotation.
		klog.FromContext(ctx).Error(err, "Cannot account a pod's CPUs", "pod", klog.KObj(pod))
		if rec := p.handle.EventRecorder(); rec != nil {
			rec.Eventf(pod, nil, corev1.EventTypeWarning, "InvalidResourceStatus", "Scheduling", err.Error())
		}
	}
}

// ignoreClaim tells, once per pod, that the CPUs a pod this scheduler did
// not bind claims in its resource-status are not counted: anyone who may
// create pods can write that annotation (the admission policy in
// manifests/policies refuses it; this is the defence behind it).
func (p *Plugin) ignoreClaim(ctx context.Context, pod *corev1.Pod) {
	if _, claims := pod.Annotations[extension.AnnotationResourceStatus]; !claims || pod.Spec.NodeName == "" {
		return
	}
	if _, told := p.ignored.LoadOrStore(pod.UID, true); told {
		return
	}
	msg := fmt.Sprintf("annotation %s ignored: pod has schedulerName %q, not one of koord-scheduler's profiles, so no Koord scheduler chose these CPUs", extension.AnnotationResourceStatus, pod.Spec.SchedulerName)
	klog.FromContext(ctx).Info("Ignoring a CPU claim", "pod", klog.KObj(pod), "reason", msg)
	if rec := p.handle.EventRecorder(); rec != nil {
		rec.Eventf(pod, nil, corev1.EventTypeWarning, "UntrustedResourceStatus", "Scheduling", msg)
	}
}

func (p *Plugin) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.ignored.Delete(pod.UID)
		p.rejected.Forget(pod.UID)
		if p.state.Forget(pod.UID) {
			p.retryRejected()
		}
	}
}

// retryRejected moves the pods this plugin turned away back to the active queue.
func (p *Plugin) retryRejected() { p.rejected.Activate(p.logger, p.handle) }

// EventsToRegister: CPUs free up when a pod leaves, and a node's labels decide
// its bind and NUMA policies. Topology changes, freed CPUs and reservations
// that release theirs re-activate the pods this plugin turned away directly
// (frameworkext.Rejected), once its state has the change.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}

type podState struct {
	req *podRequest
	// turnedAway is set when Filter first rejects a node for want of
	// topology or CPUs: the pod is then remembered once per cycle, not once
	// per node (Filter runs on many nodes in parallel).
	turnedAway atomic.Bool
	// holds is the pod's frameworkext.Holds, read once per cycle.
	holds frameworkext.HoldsOnce
}

func (s *podState) Clone() fwk.StateData { return s }

// PreFilter reads the pod once; pods that can bind CPUs nowhere skip the plugin.
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.ready.Load() {
		if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
			return nil, fwk.AsStatus(errors.New("pods and node topologies are not synced yet"))
		}
		p.ready.Store(true)
	}
	req, err := newPodRequest(pod, p.args.DefaultCPUBindPolicy)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if !req.mayBind() && req.numaPolicy == extension.NUMATopologyPolicyNone {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cs.Write(podStateKey, &podState{req: req})
	return nil, nil
}

// PreFilterExtensions: the plugin does not track other pods' requests per cycle.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *Plugin) readPodState(cs fwk.CycleState) (*podState, *fwk.Status) {
	d, err := cs.Read(podStateKey)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("reading %q from cycle state: %w", podStateKey, err))
	}
	st, ok := d.(*podState)
	if !ok {
		return nil, fwk.AsStatus(fmt.Errorf("%q in cycle state is a %T", podStateKey, d))
	}
	return st, nil
}
