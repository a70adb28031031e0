// Package cpuburst lets latency-sensitive containers with a CPU limit run
// past it for short bursts, so that a spike is not throttled while the node
// has room (Koordinator's CPUBurst, NodeSLO cpuBurstStrategy, overridden per
// pod by the koordinator.sh/cpuBurst annotation):
//
//   - cpuBurstOnly / auto: cpu.cfs_burst_us (v2 cpu.max.burst) of each such
//     container is cpuBurstPercent of its limit, capped at its quota (the
//     kernel refuses more); its pod gets the sum.
//   - cfsQuotaBurstOnly / auto: while the node's shared pool is used below
//     sharePoolThresholdPercent, the CFS quota of a container that was
//     throttled is raised by a fifth, up to cfsQuotaBurstPercent of its limit
//     and for at most cfsQuotaBurstPeriodSeconds of over-limit running (-1:
//     no bound); the moment the pool is above the threshold every raised quota
//     is back at the limit.
//
// koordlet owns a container's cpu.cfs_quota_us only while it raises it: a
// quota it finds neither at the limit nor where it left it belongs to
// another writer (for example a controller that resizes CPU limits), and is
// left alone and reported. LSE, LSR and BE pods do not burst.
package cpuburst

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/koordlet/cgroup"
	"github.com/koord-project/koord/pkg/koordlet/nodeslo"
)

// Scaling steps and the cooling band, Koordinator's.
const (
	scaleUp   = 1.2
	scaleDown = 0.8
	// Between coolingRatio × threshold and the threshold the pool is
	// "cooling": raised quotas stay, none rises.
	coolingRatio = 0.9
	// The over-limit budget is spent while a container runs at 100 % of its
	// limit or more, and earned back below 60 %.
	spendAbovePercent = 100
	earnBelowPercent  = 60
)

// PoolState is how busy the node's shared pool is.
type PoolState int

const (
	PoolUnknown PoolState = iota
	PoolIdle
	PoolCooling
	PoolOverload
)

// SharePool classifies the shared pool's usage: the node's usage less LSE,
// LSR and BE pods', over its CPUs less what LSE and LSR pods request.
func SharePool(thresholdPercent int64, capacityMilli, nodeUsedMilli, exclusiveRequestMilli, exclusiveAndBEUsedMilli int64, known bool) PoolState {
	if !known {
		return PoolUnknown
	}
	total := float64(capacityMilli - exclusiveRequestMilli)
	ratio := 1.0
	if total > 0 {
		ratio = float64(nodeUsedMilli-exclusiveAndBEUsedMilli) / total
	}
	t := float64(thresholdPercent) / 100
	switch {
	case ratio >= t:
		return PoolOverload
	case ratio >= t*coolingRatio:
		return PoolCooling
	}
	return PoolIdle
}

// Container is one burstable container's facts for a decision.
type Container struct {
	Pod  *corev1.Pod
	Name string
	// Dir is its cgroup, PodDir its pod's.
	Dir, PodDir string
	// LimitMilli is its CPU limit; Base its quota at that limit (kubelet's);
	// Current the quota its cgroup holds now.
	LimitMilli, Base, Current int64
	// Throttled is its cpu.stat nr_throttled (a counter); UsageMilli its
	// latest CPU usage (-1 unknown).
	Throttled  uint64
	UsageMilli int64
}

// Conflict is a container whose quota another writer changed.
type Conflict struct {
	Pod              *corev1.Pod
	Container        string
	Have, Base, Mine int64
}

// Planner decides quotas and bursts. It remembers, per container cgroup,
// what it last wrote and its over-limit budget; after a restart it starts
// from what the cgroups hold (a quota within its range is taken as its own).
type Planner struct {
	containers map[string]*memory
}

type memory struct {
	wrote     int64 // 0: nothing written (yet)
	throttled uint64
	tokens    float64
	seen      time.Time
	foreign   bool
}

// Burstable says whether a pod may burst: not LSE, LSR or BE (by its label,
// as Koordinator decides).
func Burstable(p *corev1.Pod) bool {
	q, err := extension.ParseQoSClass(p.Labels[extension.LabelPodQoS])
	return err != nil || (q != extension.QoSLSE && q != extension.QoSLSR && q != extension.QoSBE)
}

// Config merges a pod's koordinator.sh/cpuBurst over the node's; a malformed
// annotation leaves the node's in force and is returned.
func Config(node nodeslo.Burst, p *corev1.Pod) (nodeslo.Burst, error) {
	o, err := extension.GetPodCPUBurst(p.Annotations)
	if err != nil || o == nil {
		return node, err
	}
	if o.Policy != "" {
		node.Policy = slov1alpha1.CPUBurstPolicy(o.Policy)
	}
	for _, f := range []struct {
		dst *int64
		src *int64
	}{{&node.CPUBurstPercent, o.CPUBurstPercent}, {&node.CFSQuotaBurstPercent, o.CFSQuotaBurstPercent}, {&node.CFSQuotaBurstPeriodSeconds, o.CFSQuotaBurstPeriodSeconds}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return node, nil
}

// Plan decides the quota and burst of each container and its pod. on is the
// gate; cfg gives each pod's configuration (Config). period is the CFS period.
func (pl *Planner) Plan(now time.Time, on bool, cfg func(*corev1.Pod) nodeslo.Burst, pool PoolState, period int64, containers []Container) ([]cgroup.Setting, []Conflict) {
	if pl.containers == nil {
		pl.containers = map[string]*memory{}
	}
	var out []cgroup.Setting
	var conflicts []Conflict
	type podSum struct {
		dir, owner   string
		quota, burst int64
		limited      bool
		base         int64
	}
	pods := map[string]*podSum{}
	var order []string
	seen := map[string]bool{}
	for _, c := range containers {
		seen[c.Dir] = true
		m := pl.containers[c.Dir]
		if m == nil {
			m = &memory{throttled: c.Throttled, tokens: -1}
			pl.containers[c.Dir] = m
		}
		b := cfg(c.Pod)
		if !on {
			b.Policy = slov1alpha1.CPUBurstNone
		}
		ceil := c.Base * max(b.CFSQuotaBurstPercent, 100) / 100
		quota := c.Base
		mine := c.Current == c.Base || (m.wrote != 0 && c.Current == m.wrote) || (m.wrote == 0 && c.Current > c.Base && c.Current <= ceil)
		switch {
		case !mine:
			if !m.foreign {
				conflicts = append(conflicts, Conflict{Pod: c.Pod, Container: c.Name, Have: c.Current, Base: c.Base, Mine: m.wrote})
			}
			m.foreign = true
			quota = c.Current
		case b.CFSQuotaBurstOn():
			m.foreign = false
			quota = pl.scale(now, m, b, pool, c, ceil)
			out = append(out, cgroup.Setting{Dir: c.Dir, Knob: cgroup.CPUQuota, Value: quota, Owner: cgroup.PodOwner(c.Pod)})
			m.wrote = quota
		default:
			// Off: back to the limit, if it was raised.
			m.foreign = false
			out = append(out, cgroup.Setting{Dir: c.Dir, Knob: cgroup.CPUQuota, Value: c.Base, Owner: cgroup.PodOwner(c.Pod)})
			m.wrote = 0
		}
		m.throttled = c.Throttled
		burst := int64(0)
		if b.CPUBurstOn() {
			burst = min(c.LimitMilli*b.CPUBurstPercent/100*period/1000, quota)
		}
		out = append(out, cgroup.Setting{Dir: c.Dir, Knob: cgroup.CPUBurst, Value: burst, Owner: cgroup.PodOwner(c.Pod)})

		podDir := c.PodDir
		ps := pods[podDir]
		if ps == nil {
			r := cgroup.PodResources(c.Pod, corev1.ResourceCPU, corev1.ResourceMemory)
			ps = &podSum{dir: podDir, owner: cgroup.PodOwner(c.Pod), limited: r.MilliCPULimit != cgroup.Unlimited,
				base: cgroup.MilliCPUToQuota(r.MilliCPULimit, period)}
			pods[podDir] = ps
			order = append(order, podDir)
		}
		ps.quota += quota - c.Base
		ps.burst += burst
	}
	for _, dir := range order {
		ps := pods[dir]
		if !ps.limited {
			continue
		}
		// The pod's quota covers its containers' raised quotas.
		q := ps.base + max(ps.quota, 0)
		out = append(out,
			cgroup.Setting{Dir: dir, Knob: cgroup.CPUQuota, Value: q, Owner: ps.owner},
			cgroup.Setting{Dir: dir, Knob: cgroup.CPUBurst, Value: min(ps.burst, q), Owner: ps.owner})
	}
	for dir := range pl.containers {
		if !seen[dir] {
			delete(pl.containers, dir)
		}
	}
	return out, conflicts
}

// scale is one step of the quota state machine for a container koordlet owns.
func (pl *Planner) scale(now time.Time, m *memory, b nodeslo.Burst, pool PoolState, c Container, ceil int64) int64 {
	dt := 0.0
	if !m.seen.IsZero() {
		dt = now.Sub(m.seen).Seconds()
	}
	m.seen = now
	allowed := true
	if b.CFSQuotaBurstPeriodSeconds >= 0 {
		capacity := float64(b.CFSQuotaBurstPeriodSeconds * (b.CFSQuotaBurstPercent - 100))
		if m.tokens < 0 || m.tokens > capacity {
			m.tokens = capacity
		}
		if c.UsageMilli >= 0 && c.LimitMilli > 0 {
			pct := float64(c.UsageMilli) * 100 / float64(c.LimitMilli)
			switch {
			case pct >= spendAbovePercent:
				m.tokens -= (pct - 100) * dt
			case pct < earnBelowPercent:
				m.tokens = min(m.tokens+(100-pct)*dt, capacity)
			}
		}
		allowed = m.tokens > 0
	}
	current := c.Current
	target := current
	switch {
	case pool == PoolOverload:
		target = c.Base
	case !allowed:
		target = int64(float64(current) * scaleDown)
	case c.Throttled > m.throttled && pool == PoolIdle:
		target = int64(float64(current) * scaleUp)
	}
	return min(max(target, c.Base), ceil)
}
