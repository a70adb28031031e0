package reservation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Name is the plugin's name in profiles.
const Name = "Reservation"

// stateKey is shared: the pod's state is also its frameworkext.Holds, which
// NodeNUMAResource and LoadAwareScheduling read.
const stateKey = frameworkext.HoldsStateKey

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PreBindPlugin     = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// Plugin holds Available reservations' resources for their owners, lets
// owners consume them, and turns placeholder pods into Available
// reservations (see reservationutil.PlaceholderAnnotation).
type Plugin struct {
	handle fwk.Handle
	ext    *frameworkext.Extender
	koord  koordclientset.Interface
	cache  *Cache
	logger klog.Logger

	synced []cache.InformerSynced
	ready  atomic.Bool

	// rejected are the pods Filter turned away, tried again when a
	// reservation or a consumer changes.
	rejected frameworkext.Rejected

	// binding says whether the profile binds with frameworkext.Bind
	// (reservation-allocated rides on the Binding) or needs the PreBind patch.
	binding frameworkext.CarriedOnce
}

func (p *Plugin) Name() string { return Name }

// New watches Reservations (the extender's informer) and the scheduler's
// pods, and feeds the cache from them, so that a restarted scheduler
// rebuilds it from the API server.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle, ext *frameworkext.Extender) (fwk.Plugin, error) {
	client, err := ext.Koord(h)
	if err != nil {
		return nil, err
	}
	factory, err := ext.Informers(h)
	if err != nil {
		return nil, err
	}
	p := newPlugin(h, ext, client, klog.FromContext(ctx).WithName(Name))
	rInformer := factory.Scheduling().V1alpha1().Reservations().Informer()
	rReg, err := rInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onReservation(obj) },
		UpdateFunc: func(_, obj any) { p.onReservation(obj) },
		DeleteFunc: p.onReservationDelete,
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
	p.synced = []cache.InformerSynced{rReg.HasSynced, podReg.HasSynced}
	ext.Start(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), rInformer.HasSynced) {
		return nil, fmt.Errorf("%s: Reservation informer did not sync", Name)
	}
	return p, nil
}

// newPlugin is the plugin before it watches anything (tests start here).
func newPlugin(h fwk.Handle, ext *frameworkext.Extender, client koordclientset.Interface, logger klog.Logger) *Plugin {
	ext.RegisterBinder(Name)
	return &Plugin{handle: h, ext: ext, koord: client, cache: NewCache(), logger: logger}
}

func (p *Plugin) onReservation(obj any) {
	if r := asReservation(obj); r != nil {
		p.setReservation(p.logger, r)
		p.changed()
	}
}

func (p *Plugin) setReservation(logger klog.Logger, r *schedulingv1alpha1.Reservation) {
	if err := p.cache.SetReservation(r); err != nil {
		logger.Error(err, "Keeping the CPUs the reservation pinned before", "reservation", r.Name)
	}
}

func (p *Plugin) onReservationDelete(obj any) {
	if r := asReservation(obj); r != nil {
		p.cache.DeleteReservation(r.UID)
		p.changed()
	}
}

// changed lets the pods that were turned away try again, this plugin's and
// (through the extender) those other plugins turned away for what
// reservations held.
func (p *Plugin) changed() {
	p.rejected.Activate(p.logger, p.handle)
	p.ext.HoldsChanged()
}

func asReservation(obj any) *schedulingv1alpha1.Reservation {
	switch o := obj.(type) {
	case *schedulingv1alpha1.Reservation:
		return o
	case cache.DeletedFinalStateUnknown:
		return asReservation(o.Obj)
	}
	return nil
}

// EventsToRegister: a pod that leaves can make room beside reservations.
// Reservations themselves are watched by the plugin, which requeues the
// pods it turned away once its cache has the change (see changed).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}

func (p *Plugin) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		p.rejected.Forget(pod.UID)
	}
	if p.cache.ObservePod(pod) {
		p.changed()
	}
}

func (p *Plugin) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.rejected.Forget(pod.UID)
		if p.cache.ForgetPod(pod.UID) {
			p.changed()
		}
	}
}

// podState is what PreFilter learns once per pod.
type podState struct {
	pod         *corev1.Pod
	cache       *Cache
	affinity    *extension.ReservationAffinity
	required    bool
	placeholder bool
	// owned is where the pod owns reservations and which owners specs it
	// matches (Cache.Owned), nil when it owns none anywhere or is a
	// placeholder: every node's reservations are then simply held against
	// it.
	owned       *ownership
	req         corev1.ResourceList
	reqMilliCPU int64
	reqMemory   int64
	// reserved is the reservation Reserve took for the pod, on reservedNode.
	reserved     *schedulingv1alpha1.Reservation
	reservedNode string
	// annotated is set once PreBind wrote reservation-allocated.
	annotated bool
	// turnedAway is set when Filter first turns the pod away in this cycle
	// (shared by clones): it is then remembered once, not once per node.
	turnedAway *atomic.Bool
	// memo holds the pod's relation to each node's reservations: this
	// plugin's Filter and Score and the other plugins' Holds.On all need
	// it, for every node, in one cycle. Shared by clones: it depends on the
	// pod and the reservations only.
	memo *choices
}

// choices is the memo, by node name (a plain map under a lock: string keys
// cost no allocation to look up, as sync.Map's boxed keys would). The first
// node worked out sits in place: an owner usually owns reservations on one
// node, which then costs no allocation; the map is made for a second.
type choices struct {
	mu        sync.RWMutex
	firstNode string
	first     nodeChoice
	nodes     map[string]*nodeChoice
}

// get is node's choice, nil when not worked out yet; the caller holds mu.
func (m *choices) get(node string) *nodeChoice {
	if m.firstNode == node && node != "" {
		return &m.first
	}
	return m.nodes[node]
}

// put records node's choice; the caller holds mu for writing.
func (m *choices) put(node string, views []View, c choice) *nodeChoice {
	if m.firstNode == "" {
		m.firstNode, m.first.views, m.first.c = node, views, c
		return &m.first
	}
	if m.nodes == nil {
		m.nodes = map[string]*nodeChoice{}
	}
	n := &nodeChoice{views: views, c: c}
	m.nodes[node] = n
	return n
}

func (s *podState) Clone() fwk.StateData { c := *s; return &c }

// nodeChoice is how the pod relates to one node's reservations.
type nodeChoice struct {
	views []View
	c     choice
	// use and held are c as the other plugins see it (read-only), made
	// when one first asks.
	once sync.Once
	use  *frameworkext.Hold
	held []frameworkext.Hold
}

// on is the pod's choice on node, nil when the node holds no reservation.
// A pod that owns none of the node's reservations shares the cache's
// summary (no work, no allocation); an owner's choice is worked out once per
// cycle and node.
func (s *podState) on(node *corev1.Node) *nodeChoice {
	sum := s.cache.summary(node.Name)
	if sum == nil {
		return nil
	}
	if s.owned == nil {
		return sum.stranger
	}
	m := s.matcher()
	if !s.owns(sum, m) {
		return sum.stranger
	}
	s.memo.mu.RLock()
	n := s.memo.get(node.Name)
	s.memo.mu.RUnlock()
	if n != nil {
		return n
	}
	c := choose(sum.views, s.pod, s.req, s.reqMilliCPU, s.reqMemory, s.affinity, s.placeholder, m)
	s.memo.mu.Lock()
	defer s.memo.mu.Unlock()
	if prev := s.memo.get(node.Name); prev != nil {
		return prev // another goroutine of this cycle got there first
	}
	return s.memo.put(node.Name, sum.views, c)
}

// matcher is an owner matcher with PreFilter's answers. Made after the
// summary it is used on was read: a writer counts a change before it
// replaces a summary, so a summary newer than the answers is never taken
// for one they cover.
func (s *podState) matcher() ownerMatcher {
	if s.owned == nil {
		return ownerMatcher{}
	}
	return ownerMatcher{known: s.owned, current: s.cache.changes.Load() == s.owned.at}
}

// owns says whether the pod owns one of sum's reservations: by PreFilter's
// list while no summary has changed since, else by matching.
func (s *podState) owns(sum *nodeSummary, m ownerMatcher) bool {
	if m.current {
		return slices.Contains(s.owned.nodes, sum)
	}
	return sum.owns(s.pod, m)
}

// holdsOf splits views into the one the pod consumes (use, may be nil) and the others.
func holdsOf(views []View, use *View) (*frameworkext.Hold, []frameworkext.Hold) {
	var taken *frameworkext.Hold
	held := make([]frameworkext.Hold, 0, len(views))
	for i := range views {
		if use != nil && views[i].Reservation.UID == use.Reservation.UID {
			taken = views[i].hold
		} else {
			held = append(held, *views[i].hold)
		}
	}
	return taken, held
}

var _ frameworkext.Holds = &podState{}

// On tells the other plugins which of node's reservations the pod consumes
// (the one Reserve took, or the one it would take) and which it may not touch.
func (s *podState) On(node *corev1.Node) (*frameworkext.Hold, []frameworkext.Hold) {
	if s.reserved != nil && s.reservedNode == node.Name {
		// After Reserve (one node, once): the reservation taken, as it is
		// now, with the pod among its consumers.
		views := s.cache.OnNode(node.Name)
		for i := range views {
			if views[i].Reservation.UID == s.reserved.UID {
				return holdsOf(views, &views[i])
			}
		}
		return holdsOf(views, nil)
	}
	n := s.on(node)
	if n == nil {
		return nil, nil
	}
	n.once.Do(func() { n.use, n.held = holdsOf(n.views, n.c.use) })
	return n.use, n.held
}

// Held sums what On holds against the pod; before Reserve it is the choice's
// running total, made when the choice was.
func (s *podState) Held(node *corev1.Node) (milliCPU, memory int64) {
	if s.reserved == nil || s.reservedNode != node.Name {
		if s.owned == nil {
			if sum := s.cache.summary(node.Name); sum != nil {
				return sum.heldMilliCPU, sum.heldMemory
			}
			return 0, 0
		}
		if n := s.on(node); n != nil {
			return n.c.heldMilliCPU, n.c.heldMemory
		}
		return 0, 0
	}
	_, held := s.On(node)
	for _, h := range held {
		milliCPU += h.MilliCPU
		memory += h.Memory
	}
	return milliCPU, memory
}

// Most reads the cache's bound, which covers every node and any pod.
func (s *podState) Most() (milliCPU, memory int64, pinned bool) {
	m := s.cache.most.Load()
	return m.milliCPU, m.memory, m.pinned
}

// fitsBesideMost says whether the pod's request fits in a node's free CPU and
// memory even beside the most any node's reservations hold.
func (s *podState) fitsBesideMost(freeMilliCPU, freeMemory int64) bool {
	m := s.cache.most.Load()
	return (m.milliCPU == 0 || s.reqMilliCPU <= freeMilliCPU-m.milliCPU) &&
		(m.memory == 0 || s.reqMemory <= freeMemory-m.memory)
}

func (p *Plugin) getState(cs fwk.CycleState) *podState {
	v, err := cs.Read(stateKey)
	if err != nil {
		return nil
	}
	s, _ := v.(*podState)
	return s
}

// PreFilter reads the pod's reservation-affinity once; a malformed one makes
// the pod unschedulable until it is fixed, naming the key. While no
// reservation holds anything, Filter has nothing to refuse a pod that does
// not require one: it is skipped (the framework then calls it on no node).
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.ready.Load() {
		// kube-scheduler waits for its own informers, not for our handlers:
		// a pod scheduled before they ran would not see reservations.
		if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
			return nil, fwk.AsStatus(ctx.Err())
		}
		p.ready.Store(true)
	}
	affinity, err := extension.GetReservationAffinity(pod.Annotations)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	req := podRequests(pod)
	s := &podState{
		pod:         pod,
		cache:       p.cache,
		memo:        &choices{},
		turnedAway:  &atomic.Bool{},
		affinity:    affinity,
		required:    reservationutil.RequiresReservation(affinity),
		placeholder: reservationutil.PlaceholderOf(pod) != "",
		req:         req,
		reqMilliCPU: req.Cpu().MilliValue(),
		reqMemory:   req.Memory().Value(),
	}
	if !s.placeholder {
		s.owned = p.cache.Owned(pod)
	}
	// Written even when Filter is skipped: Score, Reserve and the other
	// plugins' Holds read it.
	cs.Write(stateKey, s)
	if milliCPU, memory, _ := s.Most(); !s.required && milliCPU == 0 && memory == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter lets an owner onto a node with a reservation it may use and that has
// room for it, and keeps every other pod within what the node's reservations
// leave free.
func (p *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s := p.getState(cs)
	if s == nil {
		return fwk.AsStatus(fmt.Errorf("%s: no PreFilter state", Name))
	}
	st := p.filter(s, ni)
	if st != nil && s.turnedAway.CompareAndSwap(false, true) {
		p.rejected.Add(pod)
	}
	return st
}

func (p *Plugin) filter(s *podState, ni fwk.NodeInfo) *fwk.Status {
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	freeMilliCPU, freeMemory := alloc.GetMilliCPU()-used.GetMilliCPU(), alloc.GetMemory()-used.GetMemory()
	if !s.required && s.fitsBesideMost(freeMilliCPU, freeMemory) {
		// No node holds more against the pod than the most any holds, and
		// an owner needs at most its request from the node: the node's own
		// reservations need not be looked up.
		return nil
	}
	n := s.on(ni.Node())
	if n == nil {
		if s.required {
			return fwk.NewStatus(fwk.Unschedulable, requiredReason(choice{}))
		}
		return nil
	}
	c := n.c
	if c.use != nil && c.excessMilliCPU == 0 && c.excessMemory == 0 {
		return nil
	}
	if c.use == nil && s.required {
		return fwk.NewStatus(fwk.Unschedulable, requiredReason(c))
	}
	// A stranger, or an owner of an Aligned reservation that covers only
	// part of it: what the node gives must fit beside the other reservations.
	reqMilliCPU, reqMemory := s.reqMilliCPU, s.reqMemory
	if c.use != nil {
		reqMilliCPU, reqMemory = c.excessMilliCPU, c.excessMemory
	}
	if ok, why := fitsBeside(freeMilliCPU, freeMemory, c, reqMilliCPU, reqMemory); !ok {
		return fwk.NewStatus(fwk.Unschedulable, why)
	}
	return nil
}

// PreScore skips Score for pods that can consume no reservation (placeholders
// and pods owning none): they would score 0 on every node.
func (p *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if s := p.getState(cs); s == nil || s.owned == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score prefers nodes where the pod consumes a reservation.
func (p *Plugin) Score(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	s := p.getState(cs)
	if s == nil || s.placeholder {
		return 0, nil
	}
	if n := s.on(ni.Node()); n != nil && n.c.use != nil {
		return fwk.MaxNodeScore, nil
	}
	return 0, nil
}

func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve takes the pod's share of the fullest reservation that fits it on
// the chosen node; the check and the record are one step in the cache.
func (p *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	s := p.getState(cs)
	if s == nil || s.placeholder {
		return nil
	}
	views := p.cache.OnNode(nodeName)
	if len(views) == 0 {
		return nil
	}
	// The views are read afresh here, so the answers are taken but not
	// their word on the specs they lack.
	c := choose(views, pod, s.req, s.reqMilliCPU, s.reqMemory, s.affinity, false, ownerMatcher{known: s.owned})
	if c.use == nil {
		return nil
	}
	if err := p.cache.Assume(c.use.Reservation.UID, pod); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	s.reserved, s.reservedNode = c.use.Reservation, nodeName
	if p.binding.Carried(p.ext, p.handle) {
		v, err := (&extension.ReservationAllocated{Name: s.reserved.Name, UID: s.reserved.UID}).Marshal()
		if err != nil {
			return fwk.AsStatus(err)
		}
		frameworkext.Add(cs, extension.AnnotationReservationAllocated, v, nil)
	}
	return nil
}

// Unreserve gives the share back: the pod did not bind. If PreBind already
// wrote reservation-allocated, it is taken off again, or the pod would claim
// the reservation to koord-manager and to a restarted scheduler without
// using it (the leak Koordinator users hit after failed bindings).
func (p *Plugin) Unreserve(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) {
	s := p.getState(cs)
	if s == nil || s.reserved == nil {
		return
	}
	p.cache.Unassume(pod.UID)
	s.reserved, s.reservedNode = nil, ""
	if s.annotated {
		s.annotated = false
		if err := p.setAllocated(ctx, pod, nil); err != nil {
			klog.FromContext(ctx).Error(err, "Taking the reservation off a pod that did not bind; its next scheduling attempt will", "pod", klog.KObj(pod))
		}
	}
}

// PreBind writes reservation-allocated on an owner: the record koord-manager
// derives the reservation's status from, and a restarted scheduler its cache.
// Where this plugin binds (see Bind) the Binding carries it instead. A pod
// that consumes none this time loses the one a failed attempt left (a
// Binding can add annotations, not remove them).
func (p *Plugin) PreBind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	s := p.getState(cs)
	if s == nil || (s.reserved != nil && p.binding.Carried(p.ext, p.handle)) {
		return nil
	}
	if s.reserved == nil {
		if _, stale := pod.Annotations[extension.AnnotationReservationAllocated]; stale {
			if err := p.setAllocated(ctx, pod, nil); err != nil {
				return fwk.AsStatus(fmt.Errorf("removing %s: %w", extension.AnnotationReservationAllocated, err))
			}
		}
		return nil
	}
	if err := p.setAllocated(ctx, pod, &extension.ReservationAllocated{Name: s.reserved.Name, UID: s.reserved.UID}); err != nil {
		return fwk.AsStatus(fmt.Errorf("writing %s: %w", extension.AnnotationReservationAllocated, err))
	}
	s.annotated = true
	return nil
}

// setAllocated writes (or, with nil, removes) the pod's reservation-allocated annotation.
func (p *Plugin) setAllocated(ctx context.Context, pod *corev1.Pod, a *extension.ReservationAllocated) error {
	var value any // JSON null removes the key in a merge patch
	if a != nil {
		v, err := a.Marshal()
		if err != nil {
			return err
		}
		value = v
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{extension.AnnotationReservationAllocated: value}}})
	_, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// PreBindPreFlight skips PreBind for pods whose reservation-allocated rides
// on the Binding, and for pods that consume no reservation and carry no
// annotation of an earlier, failed attempt.
func (p *Plugin) PreBindPreFlight(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if s := p.getState(cs); s != nil && s.reserved != nil {
		if p.binding.Carried(p.ext, p.handle) {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
	}
	if _, stale := pod.Annotations[extension.AnnotationReservationAllocated]; stale {
		return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
	}
	return nil, fwk.NewStatus(fwk.Skip)
}

// Bind turns a placeholder into an Available reservation on nodeName and
// deletes the placeholder instead of binding it. Other pods are bound with
// the annotations Koord plugins recorded for them (frameworkext.Bind), or, with
// none, by the next binder.
func (p *Plugin) Bind(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	name := reservationutil.PlaceholderOf(pod)
	if name == "" {
		return frameworkext.Bind(ctx, p.handle, cs, pod, nodeName)
	}
	logger := klog.FromContext(ctx)
	r, err := p.koord.SchedulingV1alpha1().Reservations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("placeholder %s/%s: reservation %s: %w", pod.Namespace, pod.Name, name, err))
	}
	if !ownedBy(pod, r) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("placeholder %s/%s is not owned by reservation %s (uid %s)", pod.Namespace, pod.Name, name, r.UID))
	}
	if reservationutil.IsAvailable(r) || reservationutil.IsTerminal(r) {
		// Placed already (a second placeholder raced the first): it holds
		// nothing more; dropping it frees what this cycle assumed.
		err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fwk.AsStatus(err)
		}
		return nil
	}
	// The CPUs NodeNUMAResource chose for the placeholder: recorded for the
	// Binding, or (profiles where its PreBind patches) on the placeholder in
	// the API, not on this copy.
	status, ok := frameworkext.Pending(cs, extension.AnnotationResourceStatus)
	if !ok {
		current, err := p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("placeholder %s/%s: %w", pod.Namespace, pod.Name, err))
		}
		status, ok = current.Annotations[extension.AnnotationResourceStatus]
	}
	if ok {
		// CPUs NodeNUMAResource chose for the placeholder are the reservation's.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{extension.AnnotationResourceStatus: status}}})
		if r, err = p.koord.SchedulingV1alpha1().Reservations().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fwk.AsStatus(err)
		}
	}
	now := metav1.Now()
	r.Status.Phase = schedulingv1alpha1.ReservationAvailable
	r.Status.NodeName = nodeName
	r.Status.Allocatable = reservationutil.Requests(r)
	r.Status.Conditions = []schedulingv1alpha1.ReservationCondition{
		{Type: schedulingv1alpha1.ReservationConditionScheduled, Status: corev1.ConditionTrue, Reason: schedulingv1alpha1.ReasonReservationScheduled,
			Message: "scheduled on " + nodeName, LastProbeTime: now, LastTransitionTime: now},
		{Type: schedulingv1alpha1.ReservationConditionReady, Status: corev1.ConditionTrue, Reason: schedulingv1alpha1.ReasonReservationAvailable,
			LastProbeTime: now, LastTransitionTime: now},
	}
	updated, err := p.koord.SchedulingV1alpha1().Reservations().UpdateStatus(ctx, r, metav1.UpdateOptions{})
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("reservation %s: %w", name, err))
	}
	// Held from this moment, before the informer brings the update: the
	// placeholder's resources leave the scheduler's cache when it is deleted.
	p.setReservation(logger, updated)
	err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "deleting the placeholder of an Available reservation; koord-manager will", "pod", klog.KObj(pod), "reservation", name)
	}
	logger.V(2).Info("reservation available", "reservation", name, "node", nodeName)
	return nil
}

func ownedBy(pod *corev1.Pod, r *schedulingv1alpha1.Reservation) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.UID == r.UID {
			return true
		}
	}
	return false
}

func podRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}
