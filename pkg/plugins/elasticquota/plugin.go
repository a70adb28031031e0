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
	"sync"

	corev1 "k8s.io/api/core/v1"
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
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/client/lenient"
	schedlisters "github.com/koord-project/koord/pkg/client/listers/scheduling/v1alpha1"
	sigslisters "github.com/koord-project/koord/pkg/client/listers/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/pkg/quota"
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
