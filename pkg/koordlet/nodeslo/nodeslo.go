// Package nodeslo gives koordlet its node's QoS strategy: the NodeSLO named
// after the node, with Koordinator's defaults filled in where it is silent
// (or absent), checked across fields. A NodeSLO that does not check out is
// reported once and the last valid strategy stays in force.
package nodeslo

import (
	"fmt"
	"time"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// Strategy is a node's resolved NodeSLO: every field set.
type Strategy struct {
	Threshold Threshold
	// QOS is per Koordinator QoS class: LSR, LS, BE (LSE follows LSR).
	LSR, LS, BE ClassQOS
	Burst       Burst
	Guard       Guard
}

// Threshold is resourceUsedThresholdWithBE.
type Threshold struct {
	// Enable switches BE suppression and BE eviction on for the node.
	Enable                      bool
	CPUSuppressThresholdPercent int64
	// CPUSuppressMinPercent is the share of the node BE pods keep however
	// busy the rest is (0 when unset: koordlet's own floor applies).
	CPUSuppressMinPercent int64
	CPUSuppressPolicy     slov1alpha1.CPUSuppressPolicy
	MemoryEvictThresholdPercent,
	MemoryEvictLowerPercent int64
	// CPU eviction is configured only when both satisfaction bounds are.
	CPUEvictConfigured bool
	CPUEvictBESatisfactionLowerPercent,
	CPUEvictBESatisfactionUpperPercent,
	CPUEvictBEUsageThresholdPercent int64
	// CPUEvictTimeWindow is 0 when unset: one collect interval.
	CPUEvictTimeWindow time.Duration
}

// ClassQOS is resourceQOSStrategy.<class>.
type ClassQOS struct {
	CPUEnable     bool
	GroupIdentity int64
	SchedIdle     int64
	MemoryEnable  bool
	MinLimitPercent, LowLimitPercent,
	ThrottlingPercent int64
}

// Burst is cpuBurstStrategy.
type Burst struct {
	Policy                     slov1alpha1.CPUBurstPolicy
	CPUBurstPercent            int64
	CFSQuotaBurstPercent       int64
	CFSQuotaBurstPeriodSeconds int64
	SharePoolThresholdPercent  int64
}

// Guard is Koord's interference guard (spec.extensions).
type Guard struct {
	Enable      bool
	TargetP99   time.Duration
	StepPercent int64
	MinWaits    uint64
}

// Koordinator's defaults (its sloconfig package), where Koord keeps them.
const (
	defaultCPUSuppressThresholdPercent = 65
	defaultMemoryEvictThresholdPercent = 70
	// memoryEvictLowerPercent defaults to the threshold less this.
	memoryReleaseBufferPercent       = 2
	defaultCPUEvictBEUsagePercent    = 90
	maxCPUEvictSatisfactionLower     = 60
	defaultCPUBurstPercent           = 1000
	defaultCFSQuotaBurstPercent      = 300
	defaultCFSQuotaBurstPeriod       = -1
	defaultSharePoolThresholdPercent = 50
)

// Default is the strategy of a node without a NodeSLO: everything off.
func Default() Strategy {
	s, err := Resolve(nil)
	if err != nil {
		panic(err) // the defaults are constants; failing here is a programming error
	}
	return s
}

// Resolve fills in Koordinator's defaults and checks what the CRD schema
// cannot (fields that bound each other). The error names the field.
func Resolve(spec *slov1alpha1.NodeSLOSpec) (Strategy, error) {
	if spec == nil {
		spec = &slov1alpha1.NodeSLOSpec{}
	}
	var s Strategy
	var err error
	if s.Threshold, err = resolveThreshold(spec.ResourceUsedThresholdWithBE); err != nil {
		return Strategy{}, fmt.Errorf("resourceUsedThresholdWithBE.%w", err)
	}
	q := spec.ResourceQOSStrategy
	if q == nil {
		q = &slov1alpha1.ResourceQOSStrategy{}
	}
	for _, c := range []struct {
		name string
		cfg  *slov1alpha1.ResourceQOS
		dst  *ClassQOS
		gi   int64
	}{{"lsrClass", q.LSRClass, &s.LSR, 2}, {"lsClass", q.LSClass, &s.LS, 2}, {"beClass", q.BEClass, &s.BE, -1}} {
		if *c.dst, err = resolveClass(c.cfg, c.gi); err != nil {
			return Strategy{}, fmt.Errorf("resourceQOSStrategy.%s.%w", c.name, err)
		}
	}
	if s.Burst, err = resolveBurst(spec.CPUBurstStrategy); err != nil {
		return Strategy{}, fmt.Errorf("cpuBurstStrategy.%w", err)
	}
	g, err := spec.GetInterferenceGuard()
	if err != nil {
		return Strategy{}, err
	}
	if g == nil {
		g = &slov1alpha1.InterferenceGuardStrategy{}
	}
	r := g.Resolved()
	s.Guard = Guard{Enable: *r.Enable, TargetP99: time.Duration(*r.LSRunQueueLatencyP99Microseconds) * time.Microsecond,
		StepPercent: *r.StepPercent, MinWaits: uint64(*r.MinWaits)}
	return s, nil
}

func or(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

func resolveThreshold(t *slov1alpha1.ResourceThresholdStrategy) (Threshold, error) {
	if t == nil {
		t = &slov1alpha1.ResourceThresholdStrategy{}
	}
	out := Threshold{
		Enable:                             t.Enable != nil && *t.Enable,
		CPUSuppressThresholdPercent:        or(t.CPUSuppressThresholdPercent, defaultCPUSuppressThresholdPercent),
		CPUSuppressMinPercent:              or(t.CPUSuppressMinPercent, 0),
		CPUSuppressPolicy:                  t.CPUSuppressPolicy,
		MemoryEvictThresholdPercent:        or(t.MemoryEvictThresholdPercent, defaultMemoryEvictThresholdPercent),
		CPUEvictBEUsageThresholdPercent:    or(t.CPUEvictBEUsageThresholdPercent, defaultCPUEvictBEUsagePercent),
		CPUEvictConfigured:                 t.CPUEvictBESatisfactionLowerPercent != nil && t.CPUEvictBESatisfactionUpperPercent != nil,
		CPUEvictBESatisfactionLowerPercent: or(t.CPUEvictBESatisfactionLowerPercent, 0),
		CPUEvictBESatisfactionUpperPercent: or(t.CPUEvictBESatisfactionUpperPercent, 0),
		CPUEvictTimeWindow:                 time.Duration(or(t.CPUEvictTimeWindowSeconds, 0)) * time.Second,
	}
	if out.CPUSuppressPolicy == "" {
		out.CPUSuppressPolicy = slov1alpha1.CPUSetPolicy
	}
	out.MemoryEvictLowerPercent = or(t.MemoryEvictLowerPercent, out.MemoryEvictThresholdPercent-memoryReleaseBufferPercent)
	for name, v := range map[string]int64{
		"cpuSuppressThresholdPercent": out.CPUSuppressThresholdPercent, "cpuSuppressMinPercent": out.CPUSuppressMinPercent,
		"memoryEvictThresholdPercent": out.MemoryEvictThresholdPercent, "cpuEvictBEUsageThresholdPercent": out.CPUEvictBEUsageThresholdPercent,
		"cpuEvictBESatisfactionLowerPercent": out.CPUEvictBESatisfactionLowerPercent, "cpuEvictBESatisfactionUpperPercent": out.CPUEvictBESatisfactionUpperPercent,
	} {
		if v < 0 || v > 100 {
			return Threshold{}, fmt.Errorf("%s: %d is not a percentage (0-100)", name, v)
		}
	}
	switch {
	case out.CPUSuppressPolicy != slov1alpha1.CPUSetPolicy && out.CPUSuppressPolicy != slov1alpha1.CPUCfsQuotaPolicy:
		return Threshold{}, fmt.Errorf("cpuSuppressPolicy: %q is not cpuset or cfsQuota", out.CPUSuppressPolicy)
	case out.MemoryEvictLowerPercent < 0 || out.MemoryEvictLowerPercent >= out.MemoryEvictThresholdPercent:
		return Threshold{}, fmt.Errorf("memoryEvictLowerPercent: %d must be below memoryEvictThresholdPercent %d", out.MemoryEvictLowerPercent, out.MemoryEvictThresholdPercent)
	case out.CPUSuppressMinPercent > out.CPUSuppressThresholdPercent:
		return Threshold{}, fmt.Errorf("cpuSuppressMinPercent: %d is above cpuSuppressThresholdPercent %d", out.CPUSuppressMinPercent, out.CPUSuppressThresholdPercent)
	case out.CPUEvictTimeWindow < 0:
		return Threshold{}, fmt.Errorf("cpuEvictTimeWindowSeconds: %d is negative", *t.CPUEvictTimeWindowSeconds)
	}
	if out.CPUEvictConfigured {
		switch {
		case out.CPUEvictBESatisfactionLowerPercent > maxCPUEvictSatisfactionLower:
			return Threshold{}, fmt.Errorf("cpuEvictBESatisfactionLowerPercent: %d is above %d", out.CPUEvictBESatisfactionLowerPercent, maxCPUEvictSatisfactionLower)
		case out.CPUEvictBESatisfactionLowerPercent >= out.CPUEvictBESatisfactionUpperPercent:
			return Threshold{}, fmt.Errorf("cpuEvictBESatisfactionLowerPercent: %d must be below cpuEvictBESatisfactionUpperPercent %d",
				out.CPUEvictBESatisfactionLowerPercent, out.CPUEvictBESatisfactionUpperPercent)
		}
	}
	return out, nil
}

func resolveClass(c *slov1alpha1.ResourceQOS, groupIdentity int64) (ClassQOS, error) {
	out := ClassQOS{GroupIdentity: groupIdentity}
	if c == nil {
		return out, nil
	}
	if cpu := c.CPUQOS; cpu != nil {
		out.CPUEnable = cpu.Enable != nil && *cpu.Enable
		out.GroupIdentity = or(cpu.GroupIdentity, groupIdentity)
		out.SchedIdle = or(cpu.SchedIdle, 0)
		if out.GroupIdentity < -1 || out.GroupIdentity > 2 {
			return ClassQOS{}, fmt.Errorf("cpuQOS.groupIdentity: %d is not within -1-2", out.GroupIdentity)
		}
		if out.SchedIdle < 0 || out.SchedIdle > 1 {
			return ClassQOS{}, fmt.Errorf("cpuQOS.schedIdle: %d is not 0 or 1", out.SchedIdle)
		}
	}
	if m := c.MemoryQOS; m != nil {
		out.MemoryEnable = m.Enable != nil && *m.Enable
		out.MinLimitPercent, out.LowLimitPercent, out.ThrottlingPercent = or(m.MinLimitPercent, 0), or(m.LowLimitPercent, 0), or(m.ThrottlingPercent, 0)
		for name, v := range map[string]int64{"minLimitPercent": out.MinLimitPercent, "lowLimitPercent": out.LowLimitPercent, "throttlingPercent": out.ThrottlingPercent} {
			if v < 0 || v > 100 {
				return ClassQOS{}, fmt.Errorf("memoryQOS.%s: %d is not a percentage (0-100)", name, v)
			}
		}
	}
	return out, nil
}

func resolveBurst(b *slov1alpha1.CPUBurstStrategy) (Burst, error) {
	if b == nil {
		b = &slov1alpha1.CPUBurstStrategy{}
	}
	out := Burst{
		Policy:                     b.Policy,
		CPUBurstPercent:            or(b.CPUBurstPercent, defaultCPUBurstPercent),
		CFSQuotaBurstPercent:       or(b.CFSQuotaBurstPercent, defaultCFSQuotaBurstPercent),
		CFSQuotaBurstPeriodSeconds: or(b.CFSQuotaBurstPeriodSeconds, defaultCFSQuotaBurstPeriod),
		SharePoolThresholdPercent:  or(b.SharePoolThresholdPercent, defaultSharePoolThresholdPercent),
	}
	switch out.Policy {
	case "":
		out.Policy = slov1alpha1.CPUBurstNone
	case slov1alpha1.CPUBurstNone, slov1alpha1.CPUBurstOnly, slov1alpha1.CFSQuotaBurstOnly, slov1alpha1.CPUBurstAuto:
	default:
		return Burst{}, fmt.Errorf("policy: %q is not none, cpuBurstOnly, cfsQuotaBurstOnly or auto", out.Policy)
	}
	switch {
	case out.CPUBurstPercent < 0:
		return Burst{}, fmt.Errorf("cpuBurstPercent: %d is negative", out.CPUBurstPercent)
	case out.CFSQuotaBurstPercent < 100:
		return Burst{}, fmt.Errorf("cfsQuotaBurstPercent: %d is below 100", out.CFSQuotaBurstPercent)
	case out.CFSQuotaBurstPeriodSeconds < -1:
		return Burst{}, fmt.Errorf("cfsQuotaBurstPeriodSeconds: %d is below -1", out.CFSQuotaBurstPeriodSeconds)
	case out.SharePoolThresholdPercent < 0 || out.SharePoolThresholdPercent > 100:
		return Burst{}, fmt.Errorf("sharePoolThresholdPercent: %d is not a percentage (0-100)", out.SharePoolThresholdPercent)
	}
	return out, nil
}

// CPUBurstOn and CFSQuotaBurstOn say which halves of the burst policy are on.
func (b Burst) CPUBurstOn() bool {
	return b.Policy == slov1alpha1.CPUBurstOnly || b.Policy == slov1alpha1.CPUBurstAuto
}

func (b Burst) CFSQuotaBurstOn() bool {
	return b.Policy == slov1alpha1.CFSQuotaBurstOnly || b.Policy == slov1alpha1.CPUBurstAuto
}

// Class is the QoS configuration of a Koordinator class (LSE follows LSR;
// SYSTEM and unknown classes get nothing).
func (s Strategy) Class(q extension.QoSClass) ClassQOS {
	switch q {
	case extension.QoSLSE, extension.QoSLSR:
		return s.LSR
	case extension.QoSLS:
		return s.LS
	case extension.QoSBE:
		return s.BE
	}
	return ClassQOS{}
}
