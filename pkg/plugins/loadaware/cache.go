package loadaware

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// podRecord is a pod assigned to a node, by a binding the scheduler saw or by
// its own Reserve.
type podRecord struct {
	namespace, name string
	prod            bool
	estimate        vector
	// generation is the pod's metadata.generation when estimate was worked
	// out: the API server bumps it on every change to the spec (an in-place
	// resize included), so an update that leaves it alone cannot change the
	// record. 0 (a client that never set it) always re-estimates.
	generation int64
	// since is when the pod was bound (or assumed): a metric reported less
	// than one report interval after it cannot reflect the pod yet.
	since time.Time
	// forcedUntil: until then the pod counts at its estimate even when the
	// metric reports it (estimatedSecondsAfter*).
	forcedUntil time.Time
}

// The three usage figures of a node, per resource.
const (
	// filterUsage is the measured usage (latest or the chosen aggregation)
	// plus the estimates of pods the metric cannot reflect yet.
	filterUsage = iota
	// scoreUsage is the same with the score aggregation.
	scoreUsage
	// prodUsage is the same for prod pods only.
	prodUsage
)

// nodeEstimate is what Filter and Score read: everything is summed up front
// when an event arrives, so that the per-node calls only compare numbers.
// Never changed once published (a change publishes a new one).
type nodeEstimate struct {
	updated int64 // the NodeMetric's update time, Unix nanoseconds
	// unreported: the NodeMetric exists but koordlet never reported (no
	// update time). It counts as expired, as in Koordinator: a node whose
	// koordlet is not running is not judged by an empty status.
	unreported bool
	// usage is each resource's figures, by kind (filterUsage, scoreUsage,
	// prodUsage); in inline for profiles of up to two resources (cpu and
	// memory, the usual), so that Filter reads one object per node, not two:
	// each is a cache miss by the time the next pod gets to the node.
	usage  [][3]int64
	inline [2][3]int64
}

func newEstimate(updated int64, resources int) *nodeEstimate {
	e := &nodeEstimate{updated: updated}
	if resources <= len(e.inline) {
		e.usage = e.inline[:resources]
	} else {
		e.usage = make([][3]int64, resources)
	}
	return e
}

// get is resource i's figure of the given kind.
func (e *nodeEstimate) get(i, kind int) int64 { return e.usage[i][kind] }

func (e *nodeEstimate) updateTime() time.Time { return time.Unix(0, e.updated) }

// nodeState is everything known about one node.
type nodeState struct {
	metric *slov1alpha1.NodeMetric
	pods   map[types.UID]*podRecord
	name   string
	// thresholdsParsed caches the usage-thresholds annotation by its raw
	// value. Its aggregation, when it names one, is the node's filter usage.
	thresholdsRaw    string
	thresholdsParsed *nodeThresholds
}

// usageCache holds the per-node state, fed by NodeMetric and pod events and by
// Reserve/Unreserve, under its lock. What Filter and Score read, each node's
// estimate, is published in estimates (node name → *nodeEstimate, never
// changed once published) under a lock of its own, held only to read or
// replace one entry: Filter and Score run for every pod on every node, from
// many goroutines at once, and must not wait for a NodeMetric to be worked
// in.
//
// A plain map under a read lock, not a sync.Map: the lookup is most of
// Filter's time, every node's entry is cold by the time the next pod gets
// to it, and sync.Map's trie and boxed keys cost several more cache misses
// a lookup. In BenchmarkPaired (realistic mix, 1000 nodes) sync.Map's Load
// was 720 of Filter's 1110 ms of CPU and LoadAwareScheduling's own Filter
// time 0.47 ms a pod; see docs/benchmarks.md for the figures with this map.
type usageCache struct {
	mu        sync.RWMutex
	nodes     map[string]*nodeState
	podNode   map[types.UID]string
	resources []corev1.ResourceName
	args      *config.LoadAwareSchedulingArgs
	now       func() time.Time

	estMu     sync.RWMutex
	estimates map[string]*nodeEstimate
}

func newCache(args *config.LoadAwareSchedulingArgs, resources []corev1.ResourceName, now func() time.Time) *usageCache {
	return &usageCache{nodes: map[string]*nodeState{}, podNode: map[types.UID]string{}, resources: resources, args: args, now: now,
		estimates: map[string]*nodeEstimate{}}
}

// publish makes est node's estimate (nil: none).
func (c *usageCache) publish(node string, est *nodeEstimate) {
	c.estMu.Lock()
	defer c.estMu.Unlock()
	if est == nil {
		delete(c.estimates, node)
	} else {
		c.estimates[node] = est
	}
}

func (c *usageCache) node(name string) *nodeState {
	n := c.nodes[name]
	if n == nil {
		n = &nodeState{name: name, pods: map[types.UID]*podRecord{}}
		c.nodes[name] = n
	}
	return n
}

// setMetric records a node's NodeMetric (nil when deleted).
func (c *usageCache) setMetric(nodeName string, m *slov1alpha1.NodeMetric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.node(nodeName)
	n.metric = m
	c.refresh(n)
	c.forgetIfUnused(n)
}

// assign records a pod on a node. since is kept from an earlier record of the
// same pod on the same node, so that an update does not make it "new" again.
// est is the pod's estimate where the caller has worked it out (Reserve has
// PreFilter's), nil otherwise.
//
// Most calls are informer updates of a pod already recorded: its binding,
// then every status change for as long as it runs. Those leave the spec,
// and so the record, as it was, and return before estimating the pod again
// or recomputing the node.
func (c *usageCache) assign(pod *corev1.Pod, nodeName string, since time.Time, est vector) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.podNode[pod.UID]; ok && prev != nodeName {
		c.removeLocked(pod.UID)
	}
	n := c.node(nodeName)
	if rec, ok := n.pods[pod.UID]; ok {
		if pod.Generation != 0 && rec.generation == pod.Generation {
			return
		}
		since = rec.since
	}
	if est == nil {
		est = estimatePod(pod, c.resources, podFactors(c.args, pod))
	}
	n.pods[pod.UID] = &podRecord{
		namespace:   pod.Namespace,
		name:        pod.Name,
		prod:        extension.PodPriorityClass(pod.Spec.Priority) == extension.PriorityProd,
		estimate:    est,
		generation:  pod.Generation,
		since:       since,
		forcedUntil: forcedUntil(c.args, pod, since),
	}
	c.podNode[pod.UID] = nodeName
	c.refresh(n)
}

// remove forgets a pod (deleted, finished, or unreserved), and says whether
// it was counted.
func (c *usageCache) remove(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.removeLocked(uid)
}

func (c *usageCache) removeLocked(uid types.UID) bool {
	nodeName, ok := c.podNode[uid]
	if !ok {
		return false
	}
	delete(c.podNode, uid)
	if n := c.nodes[nodeName]; n != nil {
		delete(n.pods, uid)
		c.refresh(n)
		c.forgetIfUnused(n)
	}
	return true
}

// forgetIfUnused drops a node the cache holds nothing for any more (no
// metric, no pods).
func (c *usageCache) forgetIfUnused(n *nodeState) {
	if n.metric != nil || len(n.pods) > 0 {
		return
	}
	delete(c.nodes, n.name)
	c.publish(n.name, nil)
}

// refresh recomputes a node's estimate; the caller holds the write lock.
func (c *usageCache) refresh(n *nodeState) {
	m := n.metric
	if m != nil && m.Status.UpdateTime == nil {
		est := newEstimate(0, len(c.resources))
		est.unreported = true
		c.publish(n.name, est)
		return
	}
	if m == nil || m.Status.NodeMetric == nil {
		c.publish(n.name, nil)
		return
	}
	latest := c.vectorOf(m.Status.NodeMetric.NodeUsage)
	filter, score := latest, latest
	// The node's own aggregation (its usage-thresholds annotation) comes
	// before the args'.
	var aggType slov1alpha1.AggregationType
	var aggDuration metav1.Duration
	if a := c.args.Aggregated; a != nil {
		aggType, aggDuration = a.UsageAggregationType, a.UsageAggregatedDuration
	}
	if t := n.thresholdsParsed; t != nil && t.aggType != "" {
		aggType, aggDuration = t.aggType, t.aggDuration
	}
	if aggType != "" {
		if usage, ok := aggregated(m, aggType, aggDuration); ok {
			filter = c.vectorOf(usage)
		}
	}
	if a := c.args.Aggregated; a != nil {
		if a.ScoreAggregationType != "" {
			if usage, ok := aggregated(m, a.ScoreAggregationType, a.ScoreAggregatedDuration); ok {
				score = c.vectorOf(usage)
			}
		}
	}
	// Copy before adding: filter and score may share latest.
	filter = append(vector(nil), filter...)
	score = append(vector(nil), score...)
	prod := make(vector, len(c.resources))
	if c.args.ProdUsageIncludeSys {
		// The system runs beside prod pods and takes from the same share.
		prod.add(c.vectorOf(m.Status.NodeMetric.SystemUsage))
	}

	reported := make(map[types.NamespacedName]vector, len(m.Status.PodsMetric))
	for _, pm := range m.Status.PodsMetric {
		if pm == nil {
			continue
		}
		v := c.vectorOf(pm.PodUsage)
		reported[types.NamespacedName{Namespace: pm.Namespace, Name: pm.Name}] = v
		if pm.Priority == extension.PriorityProd {
			prod.add(v)
		}
	}

	horizon, now := reportHorizon(m), c.now()
	extra := make(vector, len(c.resources))
	for _, rec := range n.pods {
		seen := reported[types.NamespacedName{Namespace: rec.namespace, Name: rec.name}]
		if !rec.unseen(seen, horizon, now) {
			continue
		}
		for i := range extra {
			if d := rec.beyond(seen, i); d > 0 {
				extra[i] += d
				if rec.prod {
					prod[i] += d
				}
			}
		}
	}
	filter.add(extra)
	score.add(extra)
	est := newEstimate(m.Status.UpdateTime.UnixNano(), len(c.resources))
	for i := range c.resources {
		est.usage[i] = [3]int64{filter[i], score[i], prod[i]}
	}
	c.publish(n.name, est)
}

func (c *usageCache) vectorOf(m slov1alpha1.ResourceMap) vector {
	v := make(vector, len(c.resources))
	for i, name := range c.resources {
		if q, ok := m.ResourceList[name]; ok {
			v[i] = amount(name, q)
		}
	}
	return v
}

// aggregated picks a statistic from the aggregation window of the given
// length, or from the longest window when the length is zero.
func aggregated(m *slov1alpha1.NodeMetric, t slov1alpha1.AggregationType, d metav1.Duration) (slov1alpha1.ResourceMap, bool) {
	var best *slov1alpha1.AggregatedUsage
	for i := range m.Status.NodeMetric.AggregatedNodeUsages {
		a := &m.Status.NodeMetric.AggregatedNodeUsages[i]
		if d.Duration > 0 {
			if a.Duration.Duration == d.Duration {
				best = a
				break
			}
			continue
		}
		if best == nil || a.Duration.Duration > best.Duration.Duration {
			best = a
		}
	}
	if best == nil {
		return slov1alpha1.ResourceMap{}, false
	}
	usage, ok := best.Usage[t]
	return usage, ok
}

// estimate is the node's estimate, nil without a usable NodeMetric.
func (c *usageCache) estimate(node string) *nodeEstimate {
	c.estMu.RLock()
	defer c.estMu.RUnlock()
	return c.estimates[node]
}

// part is what a pod the cache counts on node adds to the node's figures,
// by resource and kind, as refresh adds it: what the metric reports for it,
// and its estimate beyond that while the metric cannot reflect it yet. The
// report is the pod's latest usage, also where the node's filter figure is
// an aggregation (a percentile): the closest the metric has. ok is false
// for a pod the cache does not count there.
func (c *usageCache) part(node string, uid types.UID) (out [][3]int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.nodes[node]
	if c.podNode[uid] != node || n == nil {
		return nil, false
	}
	rec, m := n.pods[uid], n.metric
	if rec == nil || m == nil || m.Status.NodeMetric == nil || m.Status.UpdateTime == nil {
		return nil, false
	}
	var seen vector
	seenProd := false
	for _, pm := range m.Status.PodsMetric {
		if pm != nil && pm.Namespace == rec.namespace && pm.Name == rec.name {
			seen, seenProd = c.vectorOf(pm.PodUsage), pm.Priority == extension.PriorityProd
			break
		}
	}
	unseen := rec.unseen(seen, reportHorizon(m), c.now())
	out = make([][3]int64, len(c.resources))
	for i := range out {
		var usage, prod int64
		if seen != nil {
			usage = seen[i]
			if seenProd {
				prod = seen[i]
			}
		}
		if d := rec.beyond(seen, i); unseen && d > 0 {
			usage += d
			if rec.prod {
				prod += d
			}
		}
		out[i] = [3]int64{usage, usage, prod}
	}
	return out, true
}

// reportHorizon is the binding time after which a pod may have started
// after koordlet sampled for the metric.
func reportHorizon(m *slov1alpha1.NodeMetric) time.Time {
	return m.Status.UpdateTime.Add(-m.Spec.CollectPolicy.ReportInterval())
}

// unseen says whether the metric may not reflect the pod yet (seen is what
// it reports for the pod, nil when nothing): not in it, bound after the
// horizon, or held at its estimate (forcedUntil). Then the pod counts at
// its estimate where that is more than reported (beyond).
func (rec *podRecord) unseen(seen vector, horizon, now time.Time) bool {
	return seen == nil || rec.since.After(horizon) || rec.forcedUntil.After(now)
}

// beyond is how much resource i's estimate passes what the metric reports
// for the pod (all of it when nothing is reported).
func (rec *podRecord) beyond(seen vector, i int) int64 {
	if seen == nil {
		return rec.estimate[i]
	}
	return rec.estimate[i] - seen[i]
}
