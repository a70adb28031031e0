package lownodeload

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/apis/extension"
)

// NodeLoad is what a round knows of one node: its measured usage
// (NodeMetric) and the pods on it with theirs.
type NodeLoad struct {
	Node *corev1.Node
	// Usage is the node's measured usage; nil when its NodeMetric is
	// missing or expired (the node is then neither a source nor a
	// destination).
	Usage corev1.ResourceList
	Pods  []*corev1.Pod
	// PodUsage is each pod's measured usage by namespace/name; a pod
	// without one counts at its requests.
	PodUsage map[string]corev1.ResourceList
}

// Thresholds are one pool's rules.
type Thresholds struct {
	Low, High v1alpha2.ResourceThresholds
	Deviation bool
	Weights   map[corev1.ResourceName]int64
	Abnormal  uint32 // rounds over High before a node is hot
	Normal    uint32 // rounds under High before it is normal again
}

// Move is one pod to move and why.
type Move struct {
	Pod    *corev1.Pod
	From   string
	To     string // the destination the plan counted it on (the scheduler decides)
	Reason string
}

// Plan is one round's result for one pool.
type Plan struct {
	// Hot are nodes over the high thresholds for enough rounds; Rising are
	// over them but not yet for enough rounds.
	Hot, Rising, Low []string
	Moves            []Move
	// Stuck says why a hot node keeps pods it should lose.
	Stuck map[string]string
}

// Detector counts each node's consecutive rounds over and under the high
// thresholds (Koordinator's anomalyCondition). It is the only state kept
// between rounds; after a restart a node is hot again only after N new
// rounds, which moves nothing early.
type Detector struct {
	nodes map[string]*count
	// Forget drops a node unseen for this long (detectorCacheTimeout).
	Forget time.Duration
}

type count struct {
	over, under uint32
	seen        time.Time
}

// NewDetector makes a detector.
func NewDetector(forget time.Duration) *Detector {
	return &Detector{nodes: map[string]*count{}, Forget: forget}
}

// observe records a round and says whether the node is hot now.
func (d *Detector) observe(node string, over bool, t Thresholds, now time.Time) bool {
	c := d.nodes[node]
	if c == nil || (d.Forget > 0 && now.Sub(c.seen) > d.Forget) {
		c = &count{}
		d.nodes[node] = c
	}
	c.seen = now
	if over {
		c.over++
		c.under = 0
	} else {
		c.under++
		if c.under >= t.Normal {
			c.over = 0
		}
	}
	return over && c.over >= t.Abnormal
}

// reset starts a node's count again once pods were moved off it: its
// usage must be measured anew before it is judged again.
func (d *Detector) reset(node string) { delete(d.nodes, node) }

// gc forgets nodes not seen for Forget.
func (d *Detector) gc(now time.Time) {
	for n, c := range d.nodes {
		if d.Forget > 0 && now.Sub(c.seen) > d.Forget {
			delete(d.nodes, n)
		}
	}
}

// percent is usage as a share of allocatable, by resource.
func percent(usage, allocatable corev1.ResourceList, r corev1.ResourceName) float64 {
	a := allocatable[r]
	if a.IsZero() {
		return 0
	}
	u := usage[r]
	return float64(u.MilliValue()) * 100 / float64(a.MilliValue())
}

// thresholdsFor resolves deviation thresholds against the mean usage of
// the nodes that have one.
func thresholdsFor(t Thresholds, nodes []NodeLoad) (low, high v1alpha2.ResourceThresholds) {
	if !t.Deviation {
		return t.Low, t.High
	}
	low, high = v1alpha2.ResourceThresholds{}, v1alpha2.ResourceThresholds{}
	for r := range t.High {
		sum, n := 0.0, 0
		for _, nl := range nodes {
			if nl.Usage != nil {
				sum += percent(nl.Usage, nl.Node.Status.Allocatable, r)
				n++
			}
		}
		mean := 0.0
		if n > 0 {
			mean = sum / float64(n)
		}
		low[r] = v1alpha2.Percentage(max(0, mean-float64(t.Low[r])))
		high[r] = v1alpha2.Percentage(min(100, mean+float64(t.High[r])))
	}
	return low, high
}

// over lists the resources whose usage is above the high threshold.
func over(nl NodeLoad, high v1alpha2.ResourceThresholds) []corev1.ResourceName {
	var out []corev1.ResourceName
	for r, h := range high {
		if percent(nl.Usage, nl.Node.Status.Allocatable, r) > float64(h) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// under: every thresholded resource is below its low threshold.
func under(nl NodeLoad, low v1alpha2.ResourceThresholds) bool {
	for r, l := range low {
		if percent(nl.Usage, nl.Node.Status.Allocatable, r) >= float64(l) {
			return false
		}
	}
	return true
}

// score weighs a node's or a pod's usage for ranking.
func score(usage, allocatable corev1.ResourceList, weights map[corev1.ResourceName]int64) float64 {
	s := 0.0
	for r, w := range weights {
		s += float64(w) * percent(usage, allocatable, r)
	}
	return s
}

// Fits says whether a pod may go to a node (node selector and affinity,
// taints, requests against allocatable); the plan adds the load check.
type Fits func(pod *corev1.Pod, node *corev1.Node) error

// Options of one planning pass.
type Options struct {
	Thresholds
	// NodeFit moves a pod only when a node under the low thresholds can
	// take it.
	NodeFit bool
	// NumberOfNodes: act only when more nodes than this are under the low thresholds.
	NumberOfNodes int32
	// Movable says whether a pod may be moved at all (the evictor's filter,
	// namespaces, pod selectors).
	Movable func(*corev1.Pod) bool
	Fits    Fits
	Now     time.Time
}

// plan decides one round for one pool of nodes.
func (d *Detector) plan(nodes []NodeLoad, o Options) Plan {
	low, high := thresholdsFor(o.Thresholds, nodes)
	p := Plan{Stuck: map[string]string{}}
	var sources []NodeLoad
	var dests []*dest
	for _, nl := range nodes {
		if nl.Usage == nil {
			continue
		}
		res := over(nl, high)
		if d.observe(nl.Node.Name, len(res) > 0, o.Thresholds, o.Now) {
			p.Hot = append(p.Hot, nl.Node.Name)
			sources = append(sources, nl)
		} else if len(res) > 0 {
			p.Rising = append(p.Rising, nl.Node.Name)
		}
		if under(nl, low) && !nl.Node.Spec.Unschedulable {
			p.Low = append(p.Low, nl.Node.Name)
			dests = append(dests, &dest{NodeLoad: nl, usage: nl.Usage.DeepCopy()})
		}
	}
	d.gc(o.Now)
	if len(sources) == 0 {
		return p
	}
	if len(dests) == 0 || int32(len(dests)) <= o.NumberOfNodes {
		for _, s := range sources {
			p.Stuck[s.Node.Name] = fmt.Sprintf("%d node(s) under the low thresholds %v, need more than %d", len(dests), fmtThresholds(low), o.NumberOfNodes)
		}
		return p
	}
	// The hottest node first.
	slices.SortStableFunc(sources, func(a, b NodeLoad) int {
		return cmp.Compare(score(b.Usage, b.Node.Status.Allocatable, o.Weights), score(a.Usage, a.Node.Status.Allocatable, o.Weights))
	})
	for _, src := range sources {
		moved := d.drain(src, dests, high, o, &p)
		if moved > 0 {
			d.reset(src.Node.Name)
		}
	}
	return p
}

type dest struct {
	NodeLoad
	usage corev1.ResourceList // as the plan fills it
}

// drain picks pods off one hot node until it is under the high
// thresholds, each onto a destination that stays under them.
func (d *Detector) drain(src NodeLoad, dests []*dest, high v1alpha2.ResourceThresholds, o Options, p *Plan) int {
	usage := src.Usage.DeepCopy()
	alloc := src.Node.Status.Allocatable
	pods := candidates(src, o)
	moved := 0
	for _, pod := range pods {
		res := over(NodeLoad{Node: src.Node, Usage: usage}, high)
		if len(res) == 0 {
			break
		}
		pu := podUsage(src, pod)
		// A pod that uses none of what is over does not help.
		helps := false
		for _, r := range res {
			if q := pu[r]; !q.IsZero() {
				helps = true
			}
		}
		if !helps {
			continue
		}
		to, why := pickDest(pod, pu, dests, high, o)
		if to == nil {
			p.Stuck[src.Node.Name] = fmt.Sprintf("pod %s/%s: %s", pod.Namespace, pod.Name, why)
			continue
		}
		for r, q := range pu {
			u := usage[r]
			u.Sub(q)
			usage[r] = u
			du := to.usage[r]
			du.Add(q)
			to.usage[r] = du
		}
		p.Moves = append(p.Moves, Move{Pod: pod, From: src.Node.Name, To: to.Node.Name,
			Reason: fmt.Sprintf("node %s over the high thresholds (%s) for %d rounds", src.Node.Name, fmtUsage(usage, pu, alloc, res), o.Abnormal)})
		moved++
	}
	if res := over(NodeLoad{Node: src.Node, Usage: usage}, high); len(res) > 0 && p.Stuck[src.Node.Name] == "" && moved == 0 {
		p.Stuck[src.Node.Name] = "no movable pod on it uses what is over (" + joinNames(res) + ")"
	}
	return moved
}

// pickDest is the destination with the most room that the pod fits and
// that stays under the high thresholds with the pod's usage added.
func pickDest(pod *corev1.Pod, pu corev1.ResourceList, dests []*dest, high v1alpha2.ResourceThresholds, o Options) (*dest, string) {
	var best *dest
	bestScore := 0.0
	why := "no node under the low thresholds can take it"
	for _, d := range dests {
		if d.Node.Name == pod.Spec.NodeName {
			continue
		}
		after := d.usage.DeepCopy()
		for r, q := range pu {
			u := after[r]
			u.Add(q)
			after[r] = u
		}
		if len(over(NodeLoad{Node: d.Node, Usage: after}, high)) > 0 {
			why = fmt.Sprintf("every node under the low thresholds would pass the high ones with it (e.g. %s)", d.Node.Name)
			continue
		}
		if o.NodeFit && o.Fits != nil {
			if err := o.Fits(pod, d.Node); err != nil {
				why = fmt.Sprintf("it fits no node under the low thresholds (%s: %v)", d.Node.Name, err)
				continue
			}
		}
		s := score(d.usage, d.Node.Status.Allocatable, o.Weights)
		if best == nil || s < bestScore {
			best, bestScore = d, s
		}
	}
	return best, why
}

// candidates are the node's movable pods (never one whose eviction cost
// is math.MaxInt32), in the order they go: the lowest band first (free,
// batch, mid, then prod and pods in no band), then the lowest priority,
// then the lowest eviction cost, then BE before the other QoS classes, then
// the most used.
func candidates(src NodeLoad, o Options) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range src.Pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if extension.NeverEvict(p.Annotations) {
			continue
		}
		if o.Movable == nil || o.Movable(p) {
			out = append(out, p)
		}
	}
	alloc := src.Node.Status.Allocatable
	scores := make(map[*corev1.Pod]float64, len(out))
	for _, p := range out {
		scores[p] = score(podUsage(src, p), alloc, o.Weights)
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		if c := cmp.Compare(bandRank(a), bandRank(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(priority(a), priority(b)); c != 0 {
			return c
		}
		// Koordinator's eviction cost: the cheapest first among equals.
		ca, _ := extension.GetEvictionCost(a.Annotations)
		cb, _ := extension.GetEvictionCost(b.Annotations)
		if c := cmp.Compare(ca, cb); c != 0 {
			return c
		}
		if c := cmp.Compare(qosRank(a), qosRank(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

func bandRank(p *corev1.Pod) int {
	switch extension.PodPriorityClassWithDefault(p) {
	case extension.PriorityFree:
		return 0
	case extension.PriorityBatch:
		return 1
	case extension.PriorityMid:
		return 2
	}
	return 3
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

func qosRank(p *corev1.Pod) int {
	switch q, _ := extension.GetPodQoSClass(p); q {
	case extension.QoSBE:
		return 0
	case extension.QoSLS:
		return 1
	}
	return 2
}

// podUsage is the pod's measured usage, or its requests when not measured.
func podUsage(nl NodeLoad, p *corev1.Pod) corev1.ResourceList {
	if u, ok := nl.PodUsage[p.Namespace+"/"+p.Name]; ok {
		return u
	}
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	out := corev1.ResourceList{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := req[r]; ok {
			out[r] = q
		}
	}
	return out
}

func fmtThresholds(t v1alpha2.ResourceThresholds) string {
	var parts []string
	for r, v := range t {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", r, float64(v)))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func fmtUsage(after, pod, alloc corev1.ResourceList, res []corev1.ResourceName) string {
	var parts []string
	for _, r := range res {
		before := after[r].DeepCopy()
		before.Add(pod[r])
		parts = append(parts, fmt.Sprintf("%s %.0f%%", r, percent(corev1.ResourceList{r: before}, alloc, r)))
	}
	return strings.Join(parts, ", ")
}

func joinNames(rs []corev1.ResourceName) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
