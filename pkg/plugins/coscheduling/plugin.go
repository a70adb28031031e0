// Package coscheduling is the Coscheduling plugin: gang scheduling. A gang
// is a PodGroup (scheduling.sigs.k8s.io, by the pod's label) or the pods
// Koordinator's gang annotations name; its members are placed all together
// or not at all. Each member waits at Permit, holding its node's resources
// (other pods' Filter sees them), until minMember members are placed, and
// then all bind. When the wait times out, or in Strict mode a member finds
// no node, every waiting member is rejected at once: nothing stays held,
// and the members go back to the queue together.
package coscheduling

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/config/validation"
	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/client/lenient"
	sigslisters "github.com/koord-project/koord/pkg/client/listers/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Name is the plugin's name in KubeSchedulerConfiguration (Koordinator's).
const Name = "Coscheduling"

// Plugin is the Coscheduling plugin.
type Plugin struct {
	h    fwk.Handle
	args config.CoschedulingArgs
	pods corelisters.PodLister
	// byGang indexes the pod informer's pods by gang ("namespace/name"):
	// a gang's members are read several times a cycle, and listing the
	// namespace's pods each time made a cycle cost grow with the namespace
	// (0.46× stock's throughput on 1,500 pods in one namespace; see
	// docs/benchmarks.md for the figure with it).
	byGang    cache.Indexer
	podGroups sigslisters.PodGroupLister // nil when the PodGroup CRD is not served
	logger    klog.Logger

	mu sync.Mutex
	// satisfied are the gangs (by key and the PodGroup's UID) that reached
	// minMember once: later members (replacements) bind on their own under
	// the once-satisfied policy.
	satisfied map[string]bool
	// failed is, per Strict gang, the member that last found no node:
	// while it is still pending, the others are not let wait and hold
	// resources for a gang that cannot complete.
	failed map[string]*corev1.Pod
	// shortSaid is when each gang short of members was last reported (one
	// Event a minute for the gang, rather than a status write per member).
	shortSaid map[string]time.Time
	// whole are the gangs that had minMember pods when their latest
	// member arrived: only then are the members waiting in PreEnqueue
	// worth letting in (trying them on every arrival cost O(gang²)).
	whole map[string]bool
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
)

// New decodes the args and starts the PodGroup informer (when the CRD is
// served: annotation gangs work without it).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, ext *frameworkext.Extender) (fwk.Plugin, error) {
	args, ok := obj.(*config.CoschedulingArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type CoschedulingArgs, got %T", obj)
	}
	if err := validation.ValidateCoschedulingArgs(nil, args); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithName(Name)
	frameworkext.ReportArgsNotActedOn(logger, Name, args.NotActedOn())
	podInformer := h.SharedInformerFactory().Core().V1().Pods().Informer()
	if err := podInformer.AddIndexers(cache.Indexers{gangIndex: indexByGang}); err != nil {
		return nil, err
	}
	p := &Plugin{h: h, args: *args, pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), byGang: podInformer.GetIndexer(),
		logger: logger, satisfied: map[string]bool{}, failed: map[string]*corev1.Pod{}, shortSaid: map[string]time.Time{}, whole: map[string]bool{}}
	if frameworkext.Served(h, schedulingsigsv1alpha1.SchemeGroupVersion.String(), "podgroups") {
		factory, err := ext.Informers(h)
		if err != nil {
			return nil, err
		}
		inf := factory.SchedulingSigs().V1alpha1().PodGroups()
		p.podGroups = inf.Lister()
		ext.Start(ctx)
		if err := lenient.WaitForSync(ctx, frameworkext.SyncTimeout, Name+": the PodGroup informer", inf.Informer().HasSynced); err != nil {
			return nil, err
		}
	} else {
		logger.Info("The PodGroup CRD (scheduling.sigs.k8s.io/v1alpha1) is not served: gangs are declared by annotations only")
	}
	// A new member may complete its gang: the members turned away are
	// activated (kube-scheduler requeues unscheduled pods on another
	// pending pod's arrival only with its GenericWorkload gate). A gang is
	// forgotten when its last member goes, so that a new gang of the same
	// name starts afresh and the maps stay as large as the live gangs.
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: p.onPodAdd, DeleteFunc: p.onPodDelete,
	}); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plugin) onPodAdd(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != "" {
		return
	}
	g, st := p.gangOf(pod)
	if st != nil || g == nil {
		return
	}
	members, err := p.members(g.key)
	if err != nil || int32(len(members)) < g.minMember {
		return // the members stay waiting in PreEnqueue: no use waking them
	}
	p.mu.Lock()
	p.whole[g.key] = true
	p.mu.Unlock()
	p.activateSiblings(pod)
}

// activateSiblings moves the gang's other pending members back to the
// active queue.
func (p *Plugin) activateSiblings(pod *corev1.Pod) {
	name := extension.GangName(pod.Labels, pod.Annotations)
	if name == "" {
		return
	}
	members, err := p.members(pod.Namespace + "/" + name)
	if err != nil {
		return
	}
	pending := map[string]*corev1.Pod{}
	for _, m := range members {
		if m.Spec.NodeName == "" && m.UID != pod.UID {
			pending[m.Namespace+"/"+m.Name] = m
		}
	}
	if len(pending) > 0 {
		p.h.Activate(p.logger, pending)
	}
}

func (p *Plugin) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	name := extension.GangName(pod.Labels, pod.Annotations)
	if name == "" {
		return
	}
	key := pod.Namespace + "/" + name
	p.mu.Lock()
	if f := p.failed[key]; f != nil && f.UID == pod.UID {
		delete(p.failed, key)
	}
	p.mu.Unlock()
	if members, err := p.members(key); err != nil || len(members) > 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.failed, key)
	delete(p.shortSaid, key)
	delete(p.whole, key)
	for k := range p.satisfied {
		if strings.HasPrefix(k, key+"/") {
			delete(p.satisfied, k)
		}
	}
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// PreEnqueue keeps a member out of the queue while its gang has fewer
// than minMember pods: its members usually arrive one by one, and trying
// (and failing, and writing the pod's status for) each early one cost the
// gang mix half its throughput. The gang's shortage is reported once a
// minute as a FailedScheduling Event on the member that found it; the
// next member's arrival lets the members in (EventsToRegister).
func (p *Plugin) PreEnqueue(_ context.Context, pod *corev1.Pod) *fwk.Status {
	g, st := p.gangOf(pod)
	if st != nil || g == nil || p.isSatisfied(g) {
		return nil // PreFilter reports a gang that cannot be read
	}
	members, err := p.members(g.key)
	if err != nil || int32(len(members)) >= g.minMember {
		return nil
	}
	msg := shortMessage(g, len(members))
	p.mu.Lock()
	say := time.Since(p.shortSaid[g.key]) > time.Minute
	if say {
		p.shortSaid[g.key] = time.Now()
	}
	p.mu.Unlock()
	if say {
		if rec := p.h.EventRecorder(); rec != nil {
			rec.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", msg)
		}
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
}

func shortMessage(g *gang, have int) string {
	return fmt.Sprintf("gang %s has %d of the %d pods minMember needs", g.key, have, g.minMember)
}

// PreFilter turns a member away while its gang cannot be placed at all:
// its annotations do not parse, or fewer than minMember of its pods exist.
func (p *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	pre, st := p.preFilter(pod)
	if !st.IsSuccess() {
		// PostFilter then knows the member was turned away here, not by
		// the nodes.
		cs.Write(stateKey, turnedAway{})
	}
	return pre, st
}

const stateKey fwk.StateKey = Name

// turnedAway marks, in a cycle's state, a member PreFilter turned away.
type turnedAway struct{}

func (turnedAway) Clone() fwk.StateData { return turnedAway{} }

func (p *Plugin) preFilter(pod *corev1.Pod) (*fwk.PreFilterResult, *fwk.Status) {
	g, st := p.gangOf(pod)
	if st != nil || g == nil {
		return nil, st
	}
	if p.isSatisfied(g) {
		return nil, nil
	}
	members, err := p.members(g.key)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if int32(len(members)) < g.minMember {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, shortMessage(g, len(members)))
	}
	return nil, nil
}

// PreFilterExtensions: none.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter runs when a member found no node. In Strict mode the gang
// cannot complete this round: every member waiting at Permit is rejected,
// releasing what it holds. In NonStrict mode they keep waiting for the
// others until the timeout.
func (p *Plugin) PostFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if _, err := cs.Read(stateKey); err == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	g, st := p.gangOf(pod)
	if st != nil || g == nil || p.isSatisfied(g) || g.mode != extension.GangModeStrict {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	p.mu.Lock()
	p.failed[g.key] = pod
	p.mu.Unlock()
	if n := p.rejectWaiting(g, strictMessage(g, pod)); n > 0 {
		p.logger.V(2).Info("Released a gang's waiting members", "gang", g.key, "members", n, "failed", klog.KObj(pod))
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, strictMessage(g, pod))
}

func strictMessage(g *gang, failed *corev1.Pod) string {
	return fmt.Sprintf("gang %s (Strict): member %s found no node", g.key, failed.Name)
}

// strictFailure is the member whose failure keeps a Strict gang from
// completing, while it is still pending; nil otherwise.
func (p *Plugin) strictFailure(g *gang, self *corev1.Pod) *corev1.Pod {
	if g.mode != extension.GangModeStrict {
		return nil
	}
	p.mu.Lock()
	f := p.failed[g.key]
	p.mu.Unlock()
	if f == nil || f.UID == self.UID {
		return nil
	}
	cur, err := p.pods.Pods(f.Namespace).Get(f.Name)
	if err != nil || cur.UID != f.UID || cur.Spec.NodeName != "" {
		p.mu.Lock()
		if p.failed[g.key] == f {
			delete(p.failed, g.key)
		}
		p.mu.Unlock()
		return nil
	}
	return f
}

// rejectWaiting rejects every waiting member of the gang's group; it
// returns how many.
func (p *Plugin) rejectWaiting(g *gang, msg string) int {
	n := 0
	p.h.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		wpod := wp.GetPod()
		if slices.Contains(g.groups, wpod.Namespace+"/"+extension.GangName(wpod.Labels, wpod.Annotations)) {
			wp.Reject(Name, msg)
			n++
		}
	})
	return n
}

// Reserve: the member's resources are held by the scheduler's cache from
// here (assumed) until it binds or is rejected.
func (p *Plugin) Reserve(context.Context, fwk.CycleState, *corev1.Pod, string) *fwk.Status {
	return nil
}

// Unreserve runs when a member is rejected at Permit (its timeout, or
// another member's failure) or fails later: unless the gang already
// completed, every other waiting member is rejected with it, so that the
// gang gives back all it holds at once.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	g, st := p.gangOf(pod)
	if st != nil || g == nil || p.isSatisfied(g) {
		return
	}
	p.rejectWaiting(g, fmt.Sprintf("gang %s: member %s was released", g.key, pod.Name))
}

// EventsToRegister: a member turned away comes back when a sibling is
// created (the gang may now have minMember pods), when its PodGroup
// changes, or when room may have appeared (a pod deleted, a node added or
// grown).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	events := []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: p.siblingAdded},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
	}
	if p.podGroups != nil {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.EventResource("podgroups.v1alpha1." + schedulingsigsv1alpha1.GroupName), ActionType: fwk.Add | fwk.Update}})
	}
	return events, nil
}

func (p *Plugin) siblingAdded(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	name := extension.GangName(pod.Labels, pod.Annotations)
	if name == "" || added.Namespace != pod.Namespace || extension.GangName(added.Labels, added.Annotations) != name {
		return fwk.QueueSkip, nil
	}
	// A sibling of a gang still short leaves the members waiting; the one
	// that makes it whole lets them in (onPodAdd activates them too, for
	// when this hint runs first).
	p.mu.Lock()
	whole := p.whole[pod.Namespace+"/"+name]
	p.mu.Unlock()
	if whole {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
