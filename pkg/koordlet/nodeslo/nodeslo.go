// Package nodeslo gives koordlet its node's QoS strategy: the NodeSLO named
// after the node, with Koordinator's defaults filled in where it is silent
// (or absent), checked across fields. A NodeSLO that does not check out is
// reported once and the last valid strategy stays in force.
package nodeslo

import (
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

// Default is the strategy of a node without a NodeSLO: everything off.
func Default() Strategy {
	s, err := Resolve(nil)
	if err != nil {
		panic(err) // the defaults are constants; failing here is a programming error
	}
	return s
}

// Resolve checks a NodeSLO (NodeSLOSpec.Validate: what the CRD schema
// cannot check) and fills in Koordinator's defaults. The error names the field.
func Resolve(spec *slov1alpha1.NodeSLOSpec) (Strategy, error) {
	if spec == nil {
		spec = &slov1alpha1.NodeSLOSpec{}
	}
	if err := spec.Validate(); err != nil {
		return Strategy{}, err
	}
	s := Strategy{Threshold: resolveThreshold(spec.ResourceUsedThresholdWithBE), Burst: resolveBurst(spec.CPUBurstStrategy)}
	q := spec.ResourceQOSStrategy
	if q == nil {
		q = &slov1alpha1.ResourceQOSStrategy{}
	}
	s.LSR, s.LS, s.BE = resolveClass(q.LSRClass, 2), resolveClass(q.LSClass, 2), resolveClass(q.BEClass, -1)
	g, _ := spec.GetInterferenceGuard() // checked by Validate
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

func resolveThreshold(t *slov1alpha1.ResourceThresholdStrategy) Threshold {
	if t == nil {
		t = &slov1alpha1.ResourceThresholdStrategy{}
	}
	out := Threshold{
		Enable:                             t.Enable != nil && *t.Enable,
		CPUSuppressThresholdPercent:        or(t.CPUSuppressThresholdPercent, slov1alpha1.DefaultCPUSuppressThresholdPercent),
		CPUSuppressMinPercent:              or(t.CPUSuppressMinPercent, 0),
		CPUSuppressPolicy:                  t.CPUSuppressPolicy,
		MemoryEvictThresholdPercent:        or(t.MemoryEvictThresholdPercent, slov1alpha1.DefaultMemoryEvictThresholdPercent),
		CPUEvictBEUsageThresholdPercent:    or(t.CPUEvictBEUsageThresholdPercent, slov1alpha1.DefaultCPUEvictBEUsageThresholdPercent),
		CPUEvictConfigured:                 t.CPUEvictBESatisfactionLowerPercent != nil && t.CPUEvictBESatisfactionUpperPercent != nil,
		CPUEvictBESatisfactionLowerPercent: or(t.CPUEvictBESatisfactionLowerPercent, 0),
		CPUEvictBESatisfactionUpperPercent: or(t.CPUEvictBESatisfactionUpperPercent, 0),
		CPUEvictTimeWindow:                 time.Duration(or(t.CPUEvictTimeWindowSeconds, 0)) * time.Second,
	}
	if out.CPUSuppressPolicy == "" {
		out.CPUSuppressPolicy = slov1alpha1.CPUSetPolicy
	}
	out.MemoryEvictLowerPercent = or(t.MemoryEvictLowerPercent, out.MemoryEvictThresholdPercent-slov1alpha1.MemoryEvictBufferPercent)
	return out
}

func resolveClass(c *slov1alpha1.ResourceQOS, groupIdentity int64) ClassQOS {
	out := ClassQOS{GroupIdentity: groupIdentity}
	if c == nil {
		return out
	}
	if cpu := c.CPUQOS; cpu != nil {
		out.CPUEnable = cpu.Enable != nil && *cpu.Enable
		out.GroupIdentity = or(cpu.GroupIdentity, groupIdentity)
		out.SchedIdle = or(cpu.SchedIdle, 0)
	}
	if m := c.MemoryQOS; m != nil {
		out.MemoryEnable = m.Enable != nil && *m.Enable
		out.MinLimitPercent, out.LowLimitPercent, out.ThrottlingPercent = or(m.MinLimitPercent, 0), or(m.LowLimitPercent, 0), or(m.ThrottlingPercent, 0)
	}
	return out
}

func resolveBurst(b *slov1alpha1.CPUBurstStrategy) Burst {
	if b == nil {
		b = &slov1alpha1.CPUBurstStrategy{}
	}
	out := Burst{
		Policy:                     b.Policy,
		CPUBurstPercent:            or(b.CPUBurstPercent, slov1alpha1.DefaultCPUBurstPercent),
		CFSQuotaBurstPercent:       or(b.CFSQuotaBurstPercent, slov1alpha1.DefaultCFSQuotaBurstPercent),
		CFSQuotaBurstPeriodSeconds: or(b.CFSQuotaBurstPeriodSeconds, slov1alpha1.DefaultCFSQuotaBurstPeriodSeconds),
		SharePoolThresholdPercent:  or(b.SharePoolThresholdPercent, slov1alpha1.DefaultSharePoolThresholdPercent),
	}
	if out.Policy == "" {
		out.Policy = slov1alpha1.CPUBurstNone
	}
	return out
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
