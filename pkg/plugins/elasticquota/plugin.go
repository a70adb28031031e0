// Package elasticquota is the ElasticQuota plugin: elastic quotas on the
// scheduling.sigs.k8s.io ElasticQuota tree (Koordinator's keys). A pod is
// charged to a quota (package quota says which); PreFilter refuses it when
// the quota's used plus the pod would pass the quota's runtime (its min
// plus its share of what the others leave idle, capped by max). PostFilter
// preempts: when a quota asks back capacity within its min that others
// borrowed, their pods beyond their own mins go, lowest priority first and
// no more than the pod needs; otherwise pods of lower priority in the same
// quota, or in no quota, as kube-scheduler's DefaultPreemption does. A pod
// of another quota within that quota's min is never a victim.
package elasticquota

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/config/validation"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/client/lenient"
	schedlisters "github.com/koord-project/koord/pkg/client/listers/scheduling/v1alpha1"
	sigslisters "github.com/koord-project/koord/pkg/client/listers/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/quota"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
)

// Name is the plugin's name in KubeSchedulerConfiguration (Koordinator's).
const Name = "ElasticQuota"

// Plugin is the ElasticQuota plugin.
type Plugin struct {
	h      fwk.Handle
	args   config.ElasticQuotaArgs
	pods   corelisters.PodLister
	quotas sigslisters.ElasticQuotaLister // nil when the CRD is not served
	// reservations: Available ones hold their remainder for their quota
	// (nil when the Reservation CRD is not served).
	reservations schedlisters.ReservationLister
	logger       klog.Logger

	ledger *quota.Ledger

	mu   sync.RWMutex
	tree *quota.Tree
	// assumed are the pods the scheduler placed that are not yet seen
	// bound: they hold their quota's resources from Reserve.
	assumed map[types.UID]bool
	// capacity is what the nodes have to allocate, per node and in all.
	capacity map[string]quota.Vec
	total    quota.Vec
	// computed are the runtimes last worked out, with what they were
	// worked out from: they hold until the tree, the nodes or the ledger's
	// version change, which a pod being placed does not (a recomputation
	// of 20 quotas over 8,000 pods costs 40 µs: BenchmarkCompute).
	computed struct {
		tree          *quota.Tree
		totalVersion  uint64
		ledgerVersion uint64
		shares        *quota.Shares
	}
	totalVersion uint64
	// refused are the pods PreFilter turned away, woken (activated) when
	// a quota may have room again: this plugin's informers run apart from
	// the queue's, so the queue's own retry on the same event may come
	// before the ledger has changed.
	refused map[types.UID]*corev1.Pod
	// preempted are victims chosen but maybe not yet seen deleted: they
	// count as leaving at once, so that the next preemptor's choice does
	// not take their quota below its min as well.
	preempted map[types.UID]bool
	// held are, per quota, the Available reservations charged to it, for
	// an owner's credit (listing every reservation per pod cost more than
	// half the scheduling cycle with 850 reservations in test/perf).
	held map[string]map[types.UID]*schedulingv1alpha1.Reservation
	// dryRuns are, per preemptor and node, the victims SelectVictimsOnNode
	// chose, until PostFilter learns which node won.
	dryRuns map[types.UID]map[string][]*corev1.Pod

	dp        *defaultpreemption.DefaultPreemption
	evaluator *preemption.Evaluator
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PreEnqueuePlugin  = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ preemption.Interface  = &victims{}
)

// New decodes the args, starts the ElasticQuota informer (when the CRD is
// served: without it no pod has a quota) and builds the preemption
// evaluator on kube-scheduler's own.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, ext *frameworkext.Extender) (fwk.Plugin, error) {
	args, ok := obj.(*config.ElasticQuotaArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type ElasticQuotaArgs, got %T", obj)
	}
	if err := validation.ValidateElasticQuotaArgs(nil, args); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithName(Name)
	frameworkext.ReportArgsNotActedOn(logger, Name, args.NotActedOn())
	p := &Plugin{h: h, args: *args, pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), logger: logger,
		ledger: quota.NewLedger(), tree: quota.NewTree(nil), assumed: map[types.UID]bool{}, refused: map[types.UID]*corev1.Pod{}, preempted: map[types.UID]bool{}, dryRuns: map[types.UID]map[string][]*corev1.Pod{}, held: map[string]map[types.UID]*schedulingv1alpha1.Reservation{}, capacity: map[string]quota.Vec{}, total: quota.Vec{}}

	// Preemption is kube-scheduler's evaluator and executor (candidates,
	// nomination, deleting victims, asynchronously where its gate says)
	// with this plugin's choice of victims.
	fts := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	dp, err := defaultpreemption.New(ctx, &schedconfig.DefaultPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}, h, fts)
	if err != nil {
		return nil, err
	}
	p.dp = dp
	p.evaluator = preemption.NewEvaluator(Name, h, &victims{DefaultPreemption: dp, p: p}, dp.Executor)

	if frameworkext.Served(h, schedulingsigsv1alpha1.SchemeGroupVersion.String(), "elasticquotas") {
		factory, err := ext.Informers(h)
		if err != nil {
			return nil, err
		}
		inf := factory.SchedulingSigs().V1alpha1().ElasticQuotas()
		p.quotas = inf.Lister()
		if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { p.rebuild() },
			UpdateFunc: func(oldObj, newObj any) {
				if treeChanged(oldObj, newObj) {
					p.rebuild()
				}
			},
			DeleteFunc: func(any) { p.rebuild() },
		}); err != nil {
			return nil, err
		}
		synced := []cache.InformerSynced{inf.Informer().HasSynced}
		if frameworkext.Served(h, schedulingv1alpha1.SchemeGroupVersion.String(), "reservations") {
			rinf := factory.Scheduling().V1alpha1().Reservations()
			p.reservations = rinf.Lister()
			if _, err := rinf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    p.onReservation,
				UpdateFunc: func(_, obj any) { p.onReservation(obj) },
				DeleteFunc: p.onReservationDelete,
			}); err != nil {
				return nil, err
			}
			synced = append(synced, rinf.Informer().HasSynced)
		}
		ext.Start(ctx)
		if err := lenient.WaitForSync(ctx, frameworkext.SyncTimeout, Name+": the ElasticQuota and Reservation informers", synced...); err != nil {
			return nil, err
		}
	} else {
		logger.Info("The ElasticQuota CRD (scheduling.sigs.k8s.io/v1alpha1) is not served: no pod is charged to a quota")
	}
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.onPod,
		UpdateFunc: func(_, obj any) { p.onPod(obj) },
		DeleteFunc: p.onPodDelete,
	}); err != nil {
		return nil, err
	}
	if _, err := h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.onNode,
		UpdateFunc: func(_, obj any) { p.onNode(obj) },
		DeleteFunc: p.onNodeDelete,
	}); err != nil {
		return nil, err
	}
	p.rebuild()
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return Name }

// treeChanged says whether an ElasticQuota update changes the tree: not
// when only its status or the figures koord-manager writes moved (they
// change with every pod, and a rebuild charges every pod again).
func treeChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*schedulingsigsv1alpha1.ElasticQuota)
	n, ok2 := newObj.(*schedulingsigsv1alpha1.ElasticQuota)
	if !ok1 || !ok2 {
		return true
	}
	figures := func(m map[string]string) map[string]string {
		out := maps.Clone(m)
		delete(out, extension.AnnotationRuntime)
		delete(out, extension.AnnotationRequest)
		return out
	}
	return !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !maps.Equal(o.Labels, n.Labels) ||
		!maps.Equal(figures(o.Annotations), figures(n.Annotations))
}

// rebuild reads the quotas anew and charges every pod again: a quota
// created, deleted or re-parented changes which quota pods belong to.
func (p *Plugin) rebuild() {
	var list []*quota.Quota
	if p.quotas != nil {
		eqs, err := p.quotas.List(labels.Everything())
		if err != nil {
			p.logger.Error(err, "Listing ElasticQuotas")
			return
		}
		for _, eq := range eqs {
			q := quota.QuotaOf(eq)
			list = append(list, q)
		}
	}
	tree := quota.NewTree(list)
	for _, q := range tree.Quotas() {
		if q.Err != nil {
			p.logger.Info("An ElasticQuota cannot be used; its pods stay pending", "err", q.Err)
		}
	}
	p.mu.Lock()
	p.tree = tree
	p.mu.Unlock()
	pods, err := p.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		p.onPod(pod)
	}
	if p.reservations != nil {
		if rs, err := p.reservations.List(labels.Everything()); err == nil {
			for _, r := range rs {
				p.onReservation(r)
			}
		}
	}
	p.wake()
}

func (p *Plugin) onReservation(obj any) {
	r, ok := obj.(*schedulingv1alpha1.Reservation)
	if !ok {
		return
	}
	p.mu.Lock()
	e, holds := p.tree.ReservationEntry(r)
	p.unhold(r.UID)
	if holds && e.Quota != "" {
		if p.held[e.Quota] == nil {
			p.held[e.Quota] = map[types.UID]*schedulingv1alpha1.Reservation{}
		}
		p.held[e.Quota][r.UID] = r
	}
	p.mu.Unlock()
	if !holds {
		p.forget(r.UID)
		return
	}
	p.ledger.Set(r.UID, e)
}

func (p *Plugin) onReservationDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if r, ok := obj.(*schedulingv1alpha1.Reservation); ok {
		p.mu.Lock()
		p.unhold(r.UID)
		p.mu.Unlock()
		p.forget(r.UID)
	}
}

// unhold drops a reservation from the per-quota index; p.mu is held.
func (p *Plugin) unhold(uid types.UID) {
	for name, rs := range p.held {
		delete(rs, uid)
		if len(rs) == 0 {
			delete(p.held, name)
		}
	}
}

// credit is what an Available reservation of the pod's quota already
// holds for it: an owner placed into it takes nothing more from the quota.
func (p *Plugin) credit(quotaName string, pod *corev1.Pod, req quota.Vec) quota.Vec {
	if reservationutil.PlaceholderOf(pod) != "" {
		return nil
	}
	p.mu.RLock()
	rs := make([]*schedulingv1alpha1.Reservation, 0, len(p.held[quotaName]))
	for _, r := range p.held[quotaName] {
		rs = append(rs, r)
	}
	p.mu.RUnlock()
	for _, r := range rs {
		e, ok := p.ledger.Get(r.UID)
		if !ok || e.Quota != quotaName || !reservationutil.IsOwner(r, pod) {
			continue
		}
		covers := true
		for name, v := range req {
			if e.Requests[name] < v {
				covers = false
			}
		}
		if covers {
			return req
		}
	}
	return nil
}

// wake sends the pods the quotas refused back to the active queue.
func (p *Plugin) wake() {
	p.mu.Lock()
	if len(p.refused) == 0 {
		p.mu.Unlock()
		return
	}
	pods := make(map[string]*corev1.Pod, len(p.refused))
	for _, pod := range p.refused {
		pods[pod.Namespace+"/"+pod.Name] = pod
	}
	p.mu.Unlock()
	p.h.Activate(p.logger, pods)
}

// onPod charges a pod as the informer shows it.
func (p *Plugin) onPod(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		p.charge(pod, true)
	}
}

// charge records a pod's part. seen says the object is the informer's:
// its nodeName then means bound, and the assumption is over. (The object
// Reserve is given carries the chosen node already, and the informer may
// still deliver an older copy without it.)
func (p *Plugin) charge(pod *corev1.Pod, seen bool) {
	if !quota.Counts(pod) {
		p.forget(pod.UID)
		return
	}
	p.mu.Lock()
	if seen && pod.Spec.NodeName != "" {
		delete(p.assumed, pod.UID)
	}
	placed := pod.Spec.NodeName != "" || p.assumed[pod.UID]
	leaving := pod.DeletionTimestamp != nil || p.preempted[pod.UID]
	name, _ := p.tree.Resolve(pod) // a pod that names a quota wrongly is in none (PreFilter says why)
	if placed {
		delete(p.refused, pod.UID)
	}
	p.mu.Unlock()
	_, known := p.ledger.Get(pod.UID)
	p.ledger.Set(pod.UID, quota.Entry{Quota: name, Requests: quota.PodRequests(pod), Placed: placed, Leaving: leaving, NonPreemptible: !quota.Preemptible(pod)})
	if !known && name != "" {
		p.wake() // its quota asks more: its runtime may grow
	}
}

func (p *Plugin) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.forget(pod.UID)
	}
}

func (p *Plugin) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.assumed, uid)
	delete(p.refused, uid)
	delete(p.preempted, uid)
	p.mu.Unlock()
	if _, ok := p.ledger.Get(uid); ok {
		p.ledger.Remove(uid)
		p.wake()
	}
}

func (p *Plugin) onNode(obj any) {
	if node, ok := obj.(*corev1.Node); ok {
		p.setCapacity(node.Name, quota.VecOf(node.Status.Allocatable))
	}
}

func (p *Plugin) onNodeDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		p.setCapacity(node.Name, nil)
	}
}

func (p *Plugin) setCapacity(node string, v quota.Vec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.capacity[node]; ok && v != nil && old.Equal(v) {
		return // a node's status moved, not what it has to allocate
	}
	if old, ok := p.capacity[node]; ok {
		p.total.Sub(old)
		delete(p.capacity, node)
	}
	if v != nil {
		p.capacity[node] = v
		p.total.Add(v)
	}
	p.totalVersion++
	if len(p.refused) > 0 {
		go p.wake()
	}
}

// cycle is what PreFilter found, for PostFilter's choice of victims.
type cycle struct {
	quota    string // "" for none
	requests quota.Vec
	// reclaiming: the pod fits within its quota's min, so it may take
	// back what other quotas borrowed.
	reclaiming bool
	tree       *quota.Tree
	// used is every quota's, read when PostFilter runs (nil until then).
	used map[string]quota.Vec
}

func (c *cycle) Clone() fwk.StateData { return c }

const stateKey fwk.StateKey = Name

// shares are the tree's runtimes now: the last computed, unless what they
// depend on changed since.
func (p *Plugin) shares() (*quota.Tree, *quota.Shares) {
	version := p.ledger.Version()
	p.mu.RLock()
	tree, c := p.tree, p.computed
	fresh := c.shares != nil && c.tree == tree && c.totalVersion == p.totalVersion && c.ledgerVersion == version
	total, totalVersion := p.total.Clone(), p.totalVersion
	p.mu.RUnlock()
	if fresh {
		return tree, c.shares
	}
	used, request, outside := p.ledger.Totals()
	// The quotas share what the nodes have less what pods outside any
	// quota hold.
	total.Sub(outside)
	shares := tree.Compute(used, request, total)
	p.mu.Lock()
	p.computed.tree, p.computed.totalVersion, p.computed.ledgerVersion, p.computed.shares = tree, totalVersion, version, shares
	p.mu.Unlock()
	return tree, shares
}

// PreFilter refuses a pod its quota cannot take now, naming the quota and
// the figures; the pod waits (unresolvable by preemption: freeing a node
// does not raise a quota) until a pod of the tree goes or a quota changes.
func (p *Plugin) PreFilter(_ context.Context, cs fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.mu.RLock()
	tree := p.tree
	p.mu.RUnlock()
	name, err := tree.Resolve(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if tree.Empty() { // no copy of the quotas per cycle
		return nil, nil
	}
	// The queue may hand the pod over before this plugin's informer
	// handler has seen it: its request counts towards its quota's runtime.
	if _, ok := p.ledger.Get(pod.UID); !ok {
		p.onPod(pod)
	}
	tree, shares := p.shares()
	c := &cycle{quota: name, requests: quota.PodRequests(pod), tree: tree}
	cs.Write(stateKey, c)
	if name == "" {
		return nil, nil
	}
	q := tree.Get(name)
	used := p.ledger.UsedBy(name)
	c.reclaiming = within(used, c.requests, q.Min)
	// What a reservation of the quota holds for this owner is charged
	// already: only the rest of its request is new.
	asked := c.requests.Clone()
	asked.Sub(p.credit(name, pod, c.requests))
	msg := p.check(q, shares.Runtime[name], used, asked)
	if msg == "" && !quota.Preemptible(pod) {
		msg = pinnedCheck(q, p.ledger.NonPreemptibleUsedBy(name), c.requests)
	}
	if msg == "" && p.args.EnableCheckParentQuota {
		// A parent's used is its children's: worked out whole (the option
		// is off by default, and the runtimes bound a child anyway).
		all, request, outside := p.ledger.Totals()
		p.mu.RLock()
		total := p.total.Clone()
		p.mu.RUnlock()
		total.Sub(outside)
		parents := tree.Compute(all, request, total)
		for _, a := range tree.Ancestors(name) {
			if m := p.check(a, parents.Runtime[a.Name], parents.Used[a.Name], asked); m != "" {
				msg = fmt.Sprintf("parent of quota %s: %s", name, m)
				break
			}
		}
	}
	p.mu.Lock()
	if msg != "" {
		p.refused[pod.UID] = pod
	} else {
		delete(p.refused, pod.UID)
	}
	p.mu.Unlock()
	if msg != "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	}
	return nil, nil
}

// within says whether used plus requests stays within min for every
// resource min names.
func within(used, requests, min quota.Vec) bool {
	if len(min) == 0 {
		return false
	}
	for r, m := range min {
		if requests[r] > 0 && used[r]+requests[r] > m {
			return false
		}
	}
	return true
}

// pinnedCheck is "" when a non-preemptible pod fits in its quota's min
// beside the quota's other non-preemptible pods, else why not. Preemption
// never takes such a pod, so beyond the min it would hold borrowed
// capacity its lender could never get back: the label is the tenant's to
// write, the min is the operator's. Every resource the quota limits (its
// max names) or guarantees (its min names) is checked; a min that does not
// name a resource the max limits guarantees none of it.
func pinnedCheck(q *quota.Quota, pinned, req quota.Vec) string {
	var over []string
	for _, r := range resourceNames(q.Max, q.Min) {
		if req[r] > 0 && pinned[r]+req[r] > q.Min[r] {
			over = append(over, fmt.Sprintf("%s: non-preemptible pods hold %s + %s asked > min %s", r,
				quota.Show(r, pinned[r]), quota.Show(r, req[r]), quota.Show(r, q.Min[r])))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("quota %s: a pod labelled %s=false must fit in the quota's min: %s", q.Name, extension.LabelPreemptible, strings.Join(over, "; "))
}

// check is "" when the quota takes the pod, else why not: every resource
// the quota's max names is checked against its runtime (or, with
// enableRuntimeQuota off, its max).
func (p *Plugin) check(q *quota.Quota, runtime, used, req quota.Vec) string {
	var over []string
	for _, r := range resourceNames(q.Max) {
		if req[r] == 0 {
			continue
		}
		limit, what := runtime[r], "runtime"
		if !p.args.EnableRuntimeQuota {
			limit, what = q.Max[r], "max"
		}
		if used[r]+req[r] > limit {
			over = append(over, fmt.Sprintf("%s: used %s + %s asked > %s %s (min %s, max %s)", r,
				quota.Show(r, used[r]), quota.Show(r, req[r]), what, quota.Show(r, limit), quota.Show(r, q.Min[r]), quota.Show(r, q.Max[r])))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("quota %s is full: %s", q.Name, strings.Join(over, "; "))
}

// resourceNames are the resources the vectors name, sorted, so that a
// refusal names them in the same order each time.
func resourceNames(vs ...quota.Vec) []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, v := range vs {
		for r := range v {
			if !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	slices.Sort(names)
	return names
}

// PreFilterExtensions: none (the quota check does not depend on the node).
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Reserve charges the placed pod to its quota at once, before it binds:
// the next pod's PreFilter sees it.
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	p.mu.Lock()
	p.assumed[pod.UID] = true
	p.mu.Unlock()
	p.charge(pod, false)
	return nil
}

// Unreserve gives back what Reserve charged.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	p.mu.Lock()
	delete(p.assumed, pod.UID)
	p.mu.Unlock()
	if cur, err := p.pods.Pods(pod.Namespace).Get(pod.Name); err == nil && cur.UID == pod.UID {
		p.onPod(cur)
	} else {
		p.forget(pod.UID)
	}
}

// PreEnqueue holds back a pod whose preemption is still under way, as
// DefaultPreemption does (this plugin takes its place).
func (p *Plugin) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	return p.dp.PreEnqueue(ctx, pod)
}

// PostFilter preempts, with the victims chosen by quota (see victims).
func (p *Plugin) PostFilter(ctx context.Context, cs fwk.CycleState, pod *corev1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if d, err := cs.Read(stateKey); err == nil {
		if c, ok := d.(*cycle); ok {
			c.used, _, _ = p.ledger.Totals() // read once, before the dry runs
		}
	}
	result, st := p.evaluator.Preempt(ctx, cs, pod, m)
	p.mu.Lock()
	runs := p.dryRuns[pod.UID]
	delete(p.dryRuns, pod.UID)
	var victims []*corev1.Pod
	if st.IsSuccess() && result != nil && result.NominatingInfo != nil {
		victims = runs[result.NominatedNodeName]
		for _, v := range victims {
			p.preempted[v.UID] = true
		}
	}
	p.mu.Unlock()
	if len(victims) > 0 {
		p.logger.V(2).Info("Preempting for a quota", "pod", klog.KObj(pod), "node", result.NominatedNodeName, "victims", klog.KObjSlice(victims))
	}
	for _, v := range victims {
		if e, ok := p.ledger.Get(v.UID); ok {
			e.Leaving = true
			p.ledger.Set(v.UID, e)
		}
	}
	if msg := st.Message(); msg != "" {
		return result, fwk.NewStatus(st.Code(), "preemption: "+msg)
	}
	return result, st
}

// EventsToRegister: a pod the quota refused comes back when a pod goes
// (its quota's, or a borrower's), its quota gets a pod, a quota changes,
// or a node comes or grows; and DefaultPreemption's events for pods
// waiting on preemption.
func (p *Plugin) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	events, err := p.dp.EventsToRegister(ctx)
	if err != nil {
		return nil, err
	}
	events = append(events,
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}},
		// A quota's new pod raises what it asks, and so maybe its runtime.
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: p.sameQuota},
		fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable}},
	)
	if p.quotas != nil {
		events = append(events, fwk.ClusterEventWithHint{Event: fwk.ClusterEvent{Resource: fwk.EventResource("elasticquotas.v1alpha1." + schedulingsigsv1alpha1.GroupName), ActionType: fwk.All}})
	}
	return events, nil
}

func (p *Plugin) sameQuota(_ klog.Logger, pod *corev1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*corev1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	p.mu.RLock()
	tree := p.tree
	p.mu.RUnlock()
	mine, err := tree.Resolve(pod)
	if err != nil || mine == "" {
		return fwk.QueueSkip, nil
	}
	if theirs, _ := tree.Resolve(added); theirs == mine {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
