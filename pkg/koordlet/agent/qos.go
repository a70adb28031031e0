package agent

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/features"
	"github.com/koord-project/koord/pkg/koordlet/batchresource"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/cpuburst"
	"github.com/koord-project/koord/pkg/koordlet/cpuqos"
	"github.com/koord-project/koord/pkg/koordlet/cpusuppress"
	"github.com/koord-project/koord/pkg/koordlet/evict"
	"github.com/koord-project/koord/pkg/koordlet/memoryqos"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
	"github.com/koord-project/koord/pkg/koordlet/usage"
)

var errNoSharedCPUs = errors.New("BE CPU suppression: no CPU is left in the shared pool for BE pods; their cpuset is left as it is")

// qosState is what the QoS strategies carry between passes; all of it is
// derived again from the node after a restart (see each strategy).
type qosState struct {
	gates    featuregate.FeatureGate
	applier  cgroup.Applier
	mech     cpuqos.Mechanism
	detected bool
	// suppress is the latest BE suppression decision (nil: none yet, so the
	// besteffort cgroup is left as it is); guardSteps the interference
	// guard's.
	suppress   *cpusuppress.Result
	guardSteps int64
	burst      cpuburst.Planner
	// burstSettings are the latest quota and burst decisions (made at each
	// sample, applied at each pass).
	burstSettings []cgroup.Setting
	cpuHistory    evict.CPUHistory
	evictor       *evict.Evictor
	// beTree is the BE cpuset last written to the besteffort cgroup tree.
	beTree string
}

type qosMetrics struct {
	cgroupWrites  prometheus.Counter
	suppressCores *prometheus.GaugeVec
	guardSteps    prometheus.Gauge
	mechanism     *prometheus.GaugeVec
	unsupported   *prometheus.GaugeVec
}

func newQoSMetrics(reg prometheus.Registerer) (*qosMetrics, error) {
	m := &qosMetrics{
		cgroupWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "koordlet_cgroup_writes_total",
			Help: "cgroup files the QoS strategies changed (they write only what differs).",
		}),
		suppressCores: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "koordlet_be_suppress_cpu_cores",
			Help: "CPU BE pods may use now under BE CPU suppression, by policy (cpuset: whole CPUs; cfsQuota: quota in cores).",
		}, []string{"policy"}),
		guardSteps: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "koordlet_interference_guard_steps",
			Help: "Steps the interference guard has taken from BE pods' CPU share because LS pods waited too long for a CPU.",
		}),
		mechanism: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "koordlet_cpu_priority_mechanism",
			Help: "1 for the kernel mechanism BE CPU priority uses: groupIdentity, schedIdle or none.",
		}, []string{"mechanism"}),
		unsupported: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "koordlet_cgroup_knob_unsupported",
			Help: "1 for each cgroup file a strategy asked for that this kernel does not offer (not retried).",
		}, []string{"file"}),
	}
	for _, c := range []prometheus.Collector{m.cgroupWrites, m.suppressCores, m.guardSteps, m.mechanism, m.unsupported} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (a *Agent) gate(f featuregate.Feature) bool { return a.qos.gates.Enabled(f) }

// running lists the node's pods that still run (or are about to).
func (a *Agent) running() []*corev1.Pod {
	all, err := a.pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := all[:0:0]
	for _, p := range all {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// reservationCPUs are the CPUs Available reservations on this node pin.
func (a *Agent) reservationCPUs(logger klog.Logger) []cpuset.CPUSet {
	if a.reservations == nil || !a.resSynced() {
		return nil
	}
	rs, err := a.reservations.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []cpuset.CPUSet
	for _, r := range rs {
		if r.Status.NodeName != a.opts.NodeName || r.Status.Phase != schedulingv1alpha1.ReservationAvailable {
			continue
		}
		cause := "reservation/" + string(r.UID)
		st, err := extension.GetResourceStatus(r.Annotations)
		if err != nil {
			a.faults.report(logger, cause, err)
			continue
		}
		a.faults.clear(logger, cause)
		if cpus := st.CPUs(); !cpus.IsEmpty() {
			out = append(out, cpus)
		}
	}
	return out
}

// sloKnown says whether the NodeSLO cache has synced: until it has, the
// strategies write nothing (acting on the defaults would undo what a
// NodeSLO asked for before a restart).
func (a *Agent) sloKnown(logger klog.Logger) bool {
	if a.sloSynced == nil || a.sloSynced() {
		a.faults.clear(logger, "nodeslo")
		return true
	}
	a.faults.report(logger, "nodeslo", errNodeSLOUnknown)
	return false
}

var errNodeSLOUnknown = errors.New("the NodeSLO cache has not synced (is the NodeSLO CRD installed?): the QoS strategies wait")

// strategy is the node's NodeSLO strategy in force.
func (a *Agent) strategy(logger klog.Logger) nodeslo.Strategy {
	if a.slo == nil {
		return nodeslo.Default()
	}
	return a.slo.Get(logger)
}

// suppressOn says whether BE CPU suppression runs on this node.
func (a *Agent) suppressOn(s nodeslo.Strategy) bool {
	return a.gate(features.BECPUSuppress) && s.Threshold.Enable
}

// beCPUs is where BE pods run: the shared pool, or the CPUs BE suppression
// chose from it. ok is false while suppression has not decided yet (the
// besteffort cgroup and BE pods are then left as they are).
func (a *Agent) beCPUs(s nodeslo.Strategy, shared cpuset.CPUSet) (cpuset.CPUSet, bool) {
	if !a.suppressOn(s) || s.Threshold.CPUSuppressPolicy != slov1alpha1.CPUSetPolicy {
		return shared, true
	}
	if a.qos.suppress == nil || a.qos.suppress.Policy != slov1alpha1.CPUSetPolicy {
		return cpuset.New(), false
	}
	return a.qos.suppress.CPUs.Intersection(shared), true
}

// pinBestEffort writes the BE CPUs to kubelet's besteffort cgroup and
// everything in it, when they changed or on a full pass.
func (a *Agent) pinBestEffort(logger klog.Logger, be cpuset.CPUSet, full bool) {
	if be.IsEmpty() {
		return
	}
	if !full && a.qos.beTree == be.String() {
		return
	}
	dir := a.layout.QoSDir(corev1.PodQOSBestEffort)
	n, err := a.layout.SetCPUSetTree(dir, be)
	a.metrics.cpusetWrites.Add(float64(n))
	if err != nil {
		a.faults.report(logger, "cgroup/besteffort", err)
		a.qos.beTree = ""
		return
	}
	a.faults.clear(logger, "cgroup/besteffort")
	a.qos.beTree = be.String()
}

// applyQoS writes every cgroup knob the strategies ask for (besides
// cpusets): batch resources, CPU priority, CPU burst, memory QoS and the
// besteffort quota of cfsQuota suppression.
// The caller has checked that the NodeSLO is known.
func (a *Agent) applyQoS(ctx context.Context, pods []*corev1.Pod, full bool) {
	logger := klog.FromContext(ctx)
	s := a.strategy(logger)
	l := *a.layout
	a.qos.applier.Layout = l
	if !a.qos.detected {
		a.qos.mech, a.qos.detected = cpuqos.Detect(l), true
		a.qosMetrics.mechanism.WithLabelValues(string(a.qos.mech)).Set(1)
		if a.qos.mech == cpuqos.None {
			logger.Info("This kernel offers neither group identity (cpu.bvt_warp_ns) nor the idle scheduling class (cpu.idle): BE pods cannot be given a lower CPU priority than LS pods")
		} else {
			logger.Info("BE CPU priority", "mechanism", a.qos.mech)
		}
	}
	pcs := l.Pods(pods)
	period := int64(100000)
	var settings []cgroup.Setting
	settings = append(settings, batchresource.Plan(pcs, period, a.gate(features.BatchResource))...)
	settings = append(settings, cpuqos.Plan(l, pcs, s, a.qos.mech, a.gate(features.GroupIdentity))...)
	// Memory QoS is hands-off while its gate is off (alpha): kubelet's own
	// MemoryQoS feature may be the one writing memory.min then.
	if a.gate(features.CgroupReconcile) {
		settings = append(settings, memoryqos.Plan(l, pcs, s, true, a.nodeMemory())...)
	}
	settings = append(settings, a.qos.burstSettings...)
	// BE quotas: cfsQuota suppression's, on the besteffort cgroup and on
	// every BE pod kubelet put elsewhere, else none. Until suppression has
	// decided they are left as they are.
	var decision *cpusuppress.Result
	decided := true
	if sp := a.qos.suppress; a.suppressOn(s) && s.Threshold.CPUSuppressPolicy == slov1alpha1.CPUCfsQuotaPolicy {
		decided = sp != nil && sp.Policy == slov1alpha1.CPUCfsQuotaPolicy
		decision = sp
	}
	if decided {
		settings = replaced(settings, cpusuppress.QuotaSettings(l, pcs, decision, period, settings))
	}
	settings = withoutSharesOfIdle(settings)
	res := a.qos.applier.Apply(settings, full)
	a.qosMetrics.cgroupWrites.Add(float64(res.Writes))
	for k, err := range res.Unsupported {
		a.qosMetrics.unsupported.WithLabelValues(l.File(k)).Set(1)
		logger.Info("This kernel does not offer a cgroup file a QoS strategy asked for; it is not tried again", "file", l.File(k), "err", err)
	}
	owners := map[string]bool{}
	for owner, err := range res.Errors {
		owners[owner] = true
		a.faults.report(logger, "qos/"+owner, err)
	}
	for _, st := range settings {
		if !owners[st.Owner] {
			a.faults.clear(logger, "qos/"+st.Owner)
		}
	}
}

// replaced is settings with every file that by names set as by says.
func replaced(settings, by []cgroup.Setting) []cgroup.Setting {
	type key struct {
		dir  string
		knob cgroup.Knob
	}
	set := make(map[key]bool, len(by))
	for _, s := range by {
		set[key{s.Dir, s.Knob}] = true
	}
	out := slices.DeleteFunc(settings, func(s cgroup.Setting) bool { return set[key{s.Dir, s.Knob}] })
	return append(out, by...)
}

// withoutSharesOfIdle drops CPU weights of cgroups made idle: the kernel
// refuses cpu.shares there, and ignores the weight of an idle cgroup.
func withoutSharesOfIdle(settings []cgroup.Setting) []cgroup.Setting {
	idle := map[string]bool{}
	for _, s := range settings {
		if s.Knob == cgroup.CPUIdle && s.Value == 1 {
			idle[s.Dir] = true
		}
	}
	if len(idle) == 0 {
		return settings
	}
	out := settings[:0:0]
	for _, s := range settings {
		if !(s.Knob == cgroup.CPUShares && idle[s.Dir]) {
			out = append(out, s)
		}
	}
	return out
}

// nodeMemory is the node's memory capacity in bytes (0 unknown).
func (a *Agent) nodeMemory() int64 {
	node, err := a.nodes.Get(a.opts.NodeName)
	if err != nil {
		return 0
	}
	return node.Status.Capacity.Memory().Value()
}

// decide runs the strategies that act on usage, after each sample: BE
// suppression (with the interference guard), CPU burst's quota scaling and
// BE eviction.
func (a *Agent) decide(ctx context.Context, now time.Time, pods []*corev1.Pod) {
	logger := klog.FromContext(ctx)
	if a.layout == nil || a.machine == nil || !a.sloKnown(logger) {
		return
	}
	sample, ok := a.collector.Latest()
	if !ok {
		return
	}
	s := a.strategy(logger)
	node, err := a.nodes.Get(a.opts.NodeName)
	if err != nil {
		return
	}
	capacity := int64(len(a.machine.CPUTopology.Detail)) * 1000
	milli := func(cores float64) int64 { return int64(math.Round(cores * 1000)) }
	var podsUsed, nonBEUsed, beUsed, exclusiveUsed, exclusiveRequest, beRequest int64
	var cands []evict.Candidate
	for _, p := range pods {
		ps := sample.Pods[p.UID]
		q := extension.EnforcedQoSClass(p)
		used := milli(ps.CPU)
		podsUsed += used
		switch q {
		case extension.QoSBE:
			beUsed += used
			r := cgroup.PodResources(p, extension.BatchCPU, extension.BatchMemory)
			beRequest += r.MilliCPURequest
			cands = append(cands, evict.Candidate{Pod: p, MemoryBytes: ps.Memory, CPUMilli: float64(used),
				BatchCPURequestMilli: r.MilliCPURequest, Terminating: p.DeletionTimestamp != nil})
		default:
			nonBEUsed += used
		}
		if q == extension.QoSLSE || q == extension.QoSLSR {
			exclusiveUsed += used
			exclusiveRequest += cgroup.PodResources(p, corev1.ResourceCPU, corev1.ResourceMemory).MilliCPURequest
		}
	}
	nodeUsed := milli(sample.NodeCPU)

	// BE suppression, tightened by the interference guard.
	if a.suppressOn(s) {
		if a.latency != nil {
			p99, waits := a.latency.lsInterval(pods)
			a.qos.guardSteps = cpusuppress.GuardSteps(s.Guard, s.Threshold.CPUSuppressThresholdPercent, a.qos.guardSteps, p99, waits)
		} else {
			a.qos.guardSteps = 0
		}
		reserved := int64(0)
		if alloc, ok := node.Status.Allocatable[corev1.ResourceCPU]; ok {
			if c, ok := node.Status.Capacity[corev1.ResourceCPU]; ok {
				reserved = max(c.MilliValue()-alloc.MilliValue(), 0)
			}
		}
		cpus := make([]cpusuppress.CPU, 0, len(a.machine.CPUTopology.Detail))
		for _, c := range a.machine.CPUTopology.Detail {
			cpus = append(cpus, cpusuppress.CPU{ID: int(c.ID), Core: int(c.Core), Node: int(c.Node)})
		}
		r := cpusuppress.Decide(cpusuppress.Input{
			Policy: s.Threshold.CPUSuppressPolicy, ThresholdPercent: s.Threshold.CPUSuppressThresholdPercent, MinPercent: s.Threshold.CPUSuppressMinPercent,
			GuardSteps: a.qos.guardSteps, GuardStepPercent: s.Guard.StepPercent,
			CapacityMilli: capacity, ReservedMilli: reserved,
			NodeUsedMilli: nodeUsed, PodsUsedMilli: podsUsed, NonBEUsedMilli: nonBEUsed,
			Pool: a.shared, CPUs: cpus, Prev: a.qos.suppress,
		})
		if r.Policy == slov1alpha1.CPUSetPolicy && r.CPUs.IsEmpty() {
			a.faults.report(logger, "suppress", errNoSharedCPUs)
		} else {
			a.faults.clear(logger, "suppress")
			a.qos.suppress = &r
		}
		a.qosMetrics.suppressCores.Reset()
		if r.Policy == slov1alpha1.CPUSetPolicy {
			a.qosMetrics.suppressCores.WithLabelValues(string(r.Policy)).Set(float64(r.CPUs.Size()))
		} else {
			a.qosMetrics.suppressCores.WithLabelValues(string(r.Policy)).Set(float64(r.AllowedMilli) / 1000)
		}
	} else {
		a.qos.suppress, a.qos.guardSteps = nil, 0
		a.qosMetrics.suppressCores.Reset()
	}
	a.qosMetrics.guardSteps.Set(float64(a.qos.guardSteps))

	// CPU burst: quota scaling reads each burstable container's quota and
	// throttling now.
	a.qos.burstSettings = a.planBurst(logger, now, s, pods, capacity, nodeUsed, exclusiveRequest, exclusiveUsed+beUsed)

	// BE eviction.
	threshold := s.Threshold
	if a.gate(features.BEMemoryEvict) && threshold.Enable && a.qos.evictor.Ready(evict.ReasonMemory, now) {
		// Usage is MemTotal − MemAvailable, so it is measured against
		// MemTotal (what kubelet reports as the node's capacity).
		memCap := sample.NodeMemoryTotal
		if memCap <= 0 {
			memCap = float64(node.Status.Capacity.Memory().Value())
		}
		a.qos.evictor.Evict(ctx, now, evict.Memory(threshold, memCap, sample.NodeMemory, cands))
	}
	if a.gate(features.BECPUEvict) && threshold.Enable && threshold.CPUEvictConfigured {
		realLimit := float64(a.shared.Size() * 1000)
		if sp := a.qos.suppress; sp != nil {
			realLimit = float64(sp.AllowedMilli)
			if sp.Policy == slov1alpha1.CPUSetPolicy {
				realLimit = float64(sp.CPUs.Size() * 1000)
			}
		}
		window := threshold.CPUEvictTimeWindow
		a.qos.cpuHistory.Add(evict.CPUSample{At: now, RealLimitMilli: realLimit, RequestMilli: float64(beRequest), UsedMilli: float64(beUsed)},
			max(window, a.opts.CollectInterval))
		if a.qos.evictor.Ready(evict.ReasonCPU, now) {
			if a.qos.evictor.Evict(ctx, now, evict.CPU(threshold, &a.qos.cpuHistory, window, a.opts.CollectInterval, cands)) > 0 {
				a.qos.cpuHistory.Reset()
			}
		}
	} else {
		a.qos.cpuHistory.Reset()
	}
}

// planBurst reads the burstable containers' quotas and throttling and asks
// the CPU burst planner for their settings.
func (a *Agent) planBurst(logger klog.Logger, now time.Time, s nodeslo.Strategy, pods []*corev1.Pod, capacity, nodeUsed, exclusiveRequest, exclusiveAndBEUsed int64) []cgroup.Setting {
	l := *a.layout
	const period = 100000
	usageOf := map[types.UID]map[string]float64{}
	a.collector.Containers(func(uid types.UID, name string, u usage.ContainerUsage) {
		if usageOf[uid] == nil {
			usageOf[uid] = map[string]float64{}
		}
		usageOf[uid][name] = u.CPU
	})
	var cs []cpuburst.Container
	for _, pc := range l.Pods(pods) {
		if !cpuburst.Burstable(pc.Pod) {
			continue
		}
		for _, c := range pc.Containers {
			r := cgroup.ContainerResources(c.Spec, corev1.ResourceCPU, corev1.ResourceMemory)
			if r.MilliCPULimit == cgroup.Unlimited {
				continue
			}
			current, err := l.Read(cgroup.CPUQuota, c.Dir)
			if err != nil {
				continue // not there yet, or gone
			}
			_, throttled, _ := l.Throttled(c.Dir)
			used := int64(-1)
			if u, ok := usageOf[pc.Pod.UID][c.Spec.Name]; ok && u >= 0 {
				used = int64(u * 1000)
			}
			cs = append(cs, cpuburst.Container{Pod: pc.Pod, Name: c.Spec.Name, Dir: c.Dir, PodDir: pc.Dir, LimitMilli: r.MilliCPULimit,
				Base: cgroup.MilliCPUToQuota(r.MilliCPULimit, period), Current: current, Throttled: throttled, UsageMilli: used})
		}
	}
	pool := cpuburst.SharePool(s.Burst.SharePoolThresholdPercent, capacity, nodeUsed, exclusiveRequest, exclusiveAndBEUsed, true)
	cfg := func(p *corev1.Pod) nodeslo.Burst {
		b, err := cpuburst.Config(s.Burst, p)
		cause := "annotation/" + string(p.UID) + "/cpuBurst"
		if err != nil {
			a.faults.report(logger, cause, err)
		} else {
			a.faults.clear(logger, cause)
		}
		return b
	}
	settings, conflicts := a.qos.burst.Plan(now, a.gate(features.CPUBurst), cfg, pool, period, cs)
	for _, c := range conflicts {
		a.recorder.Eventf(c.Pod, corev1.EventTypeWarning, "CPUQuotaConflict",
			"container %s: cpu.cfs_quota_us is %d, neither its limit's %d nor what koordlet set; another writer owns it, so koordlet's CPU burst leaves it alone until it is back at the limit",
			c.Container, c.Have, c.Base)
	}
	return settings
}
