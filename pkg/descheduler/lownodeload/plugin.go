// Package lownodeload is koord-descheduler's LowNodeLoad balance plugin
// (Koordinator's name and args), on sigs.k8s.io/descheduler's framework: a
// node whose measured usage (NodeMetric) stays over the high thresholds for
// anomalyCondition.consecutiveAbnormalities rounds loses pods, lowest band
// first, until it is under them, each to a node under the low thresholds
// that can take it. The moves are PodMigrationJobs (package migration),
// which reserve the replacement's place before the eviction. The plan is in
// plan.go; this file wires it to the framework.
package lownodeload

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	descnode "sigs.k8s.io/descheduler/pkg/descheduler/node"
	frameworktypes "sigs.k8s.io/descheduler/pkg/framework/types"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// Name is the plugin's name in configurations.
const Name = v1alpha2.LowNodeLoadName

// Deps are what the plugin needs beside the framework's handle.
type Deps struct {
	// NodeMetric returns a node's NodeMetric (nil when there is none).
	NodeMetric func(node string) *slov1alpha1.NodeMetric
	// Migrate starts moving a pod (a PodMigrationJob); DryRun set, it is
	// not called.
	Migrate func(ctx context.Context, m Move) error
	// DryRun only logs and reports the moves (the configuration's dryRun).
	DryRun bool
	// Report receives each round's plan (metrics, dry-run output).
	Report func(pool string, p Plan, dryRun bool)
	// Namespaces says whether the evictor may move a pod of a namespace
	// (MigrationController's namespaces).
	Namespaces func(string) bool
	// Leaving are the pods an unfinished PodMigrationJob is moving (nil:
	// none). A node's NodeMetric still counts them until they are gone and
	// its koordlet reports again, so a round judges the node without them:
	// one move at a time is what brings a node under the mark, not a second
	// pod taken because the first is still measured there.
	// Keys are namespace/name.
	Leaving func(ctx context.Context) (map[string]bool, error)
	Now     func() time.Time
}

// Plugin is LowNodeLoad.
type Plugin struct {
	args   *v1alpha2.LowNodeLoadArgs
	handle frameworktypes.Handle
	deps   Deps
	pools  []pool
	nodes  labels.Selector
	pods   []labels.Selector
}

type pool struct {
	name     string
	selector labels.Selector
	t        Thresholds
	detector *Detector
}

var _ frameworktypes.BalancePlugin = &Plugin{}

// New builds the plugin from validated, defaulted args.
func New(args *v1alpha2.LowNodeLoadArgs, handle frameworktypes.Handle, deps Deps) (*Plugin, error) {
	p := &Plugin{args: args, handle: handle, deps: deps, nodes: labels.Everything()}
	if deps.Now == nil {
		p.deps.Now = time.Now
	}
	if args.NodeSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(args.NodeSelector)
		if err != nil {
			return nil, fmt.Errorf("nodeSelector: %w", err)
		}
		p.nodes = s
	}
	for i, ps := range args.PodSelectors {
		s, err := metav1.LabelSelectorAsSelector(ps.Selector)
		if err != nil {
			return nil, fmt.Errorf("podSelectors[%d]: %w", i, err)
		}
		p.pods = append(p.pods, s)
	}
	forget := args.DetectorCacheTimeout.Duration
	for i, np := range args.NodePools {
		s := labels.Everything()
		if np.NodeSelector != nil {
			var err error
			if s, err = metav1.LabelSelectorAsSelector(np.NodeSelector); err != nil {
				return nil, fmt.Errorf("nodePools[%d].nodeSelector: %w", i, err)
			}
		}
		name := np.Name
		if name == "" {
			name = fmt.Sprintf("nodePools[%d]", i)
		}
		p.pools = append(p.pools, pool{name: name, selector: s, detector: NewDetector(forget), t: Thresholds{
			Low: np.LowThresholds, High: np.HighThresholds, Deviation: np.UseDeviationThresholds || ptr.Deref(args.UseDeviationThresholds, false),
			Weights: np.ResourceWeights, Abnormal: np.AnomalyCondition.ConsecutiveAbnormalities, Normal: np.AnomalyCondition.ConsecutiveNormalities,
		}})
	}
	if len(args.HighThresholds) > 0 {
		// The args' own thresholds are the pool of every other node.
		p.pools = append(p.pools, pool{name: "default", selector: labels.Everything(), detector: NewDetector(forget), t: Thresholds{
			Low: args.LowThresholds, High: args.HighThresholds, Deviation: ptr.Deref(args.UseDeviationThresholds, false),
			Weights: args.ResourceWeights, Abnormal: args.AnomalyCondition.ConsecutiveAbnormalities, Normal: args.AnomalyCondition.ConsecutiveNormalities,
		}})
	}
	return p, nil
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return Name }

// Balance plans one round for each pool and starts its moves.
func (p *Plugin) Balance(ctx context.Context, nodes []*corev1.Node) *frameworktypes.Status {
	if ptr.Deref(p.args.Paused, false) {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	now := p.deps.Now()
	byPool := make([][]NodeLoad, len(p.pools))
	for _, n := range nodes {
		if !p.nodes.Matches(labels.Set(n.Labels)) {
			continue
		}
		i := slices.IndexFunc(p.pools, func(pl pool) bool { return pl.selector.Matches(labels.Set(n.Labels)) })
		if i < 0 {
			continue
		}
		nl, err := p.load(n, now)
		if err != nil {
			return &frameworktypes.Status{Err: err}
		}
		byPool[i] = append(byPool[i], nl)
	}
	dryRun := p.deps.DryRun || ptr.Deref(p.args.DryRun, false)
	if p.deps.Leaving != nil {
		leaving, err := p.deps.Leaving(ctx)
		if err != nil {
			return &frameworktypes.Status{Err: err}
		}
		for i := range byPool {
			for j := range byPool[i] {
				byPool[i][j] = withoutLeaving(byPool[i][j], leaving)
			}
		}
	}
	for i, pl := range p.pools {
		plan := pl.detector.plan(byPool[i], Options{
			Thresholds: pl.t, NodeFit: ptr.Deref(p.args.NodeFit, true), NumberOfNodes: ptr.Deref(p.args.NumberOfNodes, 0),
			Movable: p.movable, Fits: p.fits(ctx), Now: now,
		})
		if p.deps.Report != nil {
			p.deps.Report(pl.name, plan, dryRun)
		}
		for node, why := range plan.Stuck {
			logger.V(2).Info("Hot node keeps its pods", "pool", pl.name, "node", node, "reason", why)
		}
		for _, m := range plan.Moves {
			if dryRun {
				logger.Info("Dry run: would move pod", "pool", pl.name, "pod", klog.KObj(m.Pod), "from", m.From, "to", m.To, "reason", m.Reason)
				continue
			}
			if err := p.deps.Migrate(ctx, m); err != nil {
				logger.Error(err, "Starting the move of a pod", "pod", klog.KObj(m.Pod))
			}
		}
	}
	return nil
}

// withoutLeaving is nl without the pods leaving it: they are not moved
// again, and their usage is taken off the node's.
func withoutLeaving(nl NodeLoad, leaving map[string]bool) NodeLoad {
	if len(leaving) == 0 {
		return nl
	}
	var staying []*corev1.Pod
	var gone corev1.ResourceList
	for _, p := range nl.Pods {
		if !leaving[p.Namespace+"/"+p.Name] {
			staying = append(staying, p)
			continue
		}
		if nl.Usage != nil {
			if gone == nil {
				gone = corev1.ResourceList{}
			}
			for r, q := range podUsage(nl, p) {
				sum := gone[r]
				sum.Add(q)
				gone[r] = sum
			}
		}
	}
	if len(staying) == len(nl.Pods) {
		return nl
	}
	nl.Pods = staying
	if gone != nil {
		usage := nl.Usage.DeepCopy()
		for r, q := range gone {
			u := usage[r]
			u.Sub(q)
			if u.Sign() < 0 {
				u.Set(0)
			}
			usage[r] = u
		}
		nl.Usage = usage
	}
	return nl
}

// load gathers a node's NodeMetric and pods; an expired or missing
// NodeMetric leaves Usage nil.
func (p *Plugin) load(n *corev1.Node, now time.Time) (NodeLoad, error) {
	pods, err := p.handle.GetPodsAssignedToNodeFunc()(n.Name, nil)
	if err != nil {
		return NodeLoad{}, err
	}
	nl := NodeLoad{Node: n, Pods: pods}
	nm := p.deps.NodeMetric(n.Name)
	if nm == nil || nm.Status.UpdateTime == nil || nm.Status.NodeMetric == nil ||
		now.Sub(nm.Status.UpdateTime.Time) > time.Duration(*p.args.NodeMetricExpirationSeconds)*time.Second {
		return nl, nil
	}
	nl.Usage = nm.Status.NodeMetric.NodeUsage.ResourceList
	nl.PodUsage = make(map[string]corev1.ResourceList, len(nm.Status.PodsMetric))
	for _, pm := range nm.Status.PodsMetric {
		nl.PodUsage[pm.Namespace+"/"+pm.Name] = pm.PodUsage.ResourceList
	}
	return nl, nil
}

// movable: the profile's evictor (DaemonSet, mirror, static, local-storage
// and system-critical pods are not), evictableNamespaces, podSelectors.
func (p *Plugin) movable(pod *corev1.Pod) bool {
	if p.deps.Namespaces != nil && !p.deps.Namespaces(pod.Namespace) {
		return false
	}
	if ns := p.args.EvictableNamespaces; ns != nil {
		if len(ns.Include) > 0 && !slices.Contains(ns.Include, pod.Namespace) {
			return false
		}
		if slices.Contains(ns.Exclude, pod.Namespace) {
			return false
		}
	}
	if len(p.pods) > 0 && !slices.ContainsFunc(p.pods, func(s labels.Selector) bool { return s.Matches(labels.Set(pod.Labels)) }) {
		return false
	}
	ev := p.handle.Evictor()
	return ev.Filter(pod) && ev.PreEvictionFilter(pod)
}

// fits is the framework's node fit: node selector and affinity, taints,
// requests against what the node's pods request, unschedulable nodes.
func (p *Plugin) fits(ctx context.Context) Fits {
	return func(pod *corev1.Pod, node *corev1.Node) error {
		return descnode.NodeFit(ctx, p.handle.GetPodsAssignedToNodeFunc(), pod, node)
	}
}
