package v1alpha1

import (
	"fmt"
)

// Koordinator's defaults for what a NodeSLO leaves out (its sloconfig).
const (
	DefaultCPUSuppressThresholdPercent int64 = 65
	DefaultMemoryEvictThresholdPercent int64 = 70
	// MemoryEvictBufferPercent: memoryEvictLowerPercent defaults to the
	// threshold less this.
	MemoryEvictBufferPercent               int64 = 2
	DefaultCPUEvictBEUsageThresholdPercent int64 = 90
	// MaxCPUEvictBESatisfactionLowerPercent is the highest lower bound
	// Koordinator accepts.
	MaxCPUEvictBESatisfactionLowerPercent int64 = 60
	DefaultCPUBurstPercent                int64 = 1000
	DefaultCFSQuotaBurstPercent           int64 = 300
	DefaultCFSQuotaBurstPeriodSeconds     int64 = -1
	DefaultSharePoolThresholdPercent      int64 = 50
)

func orDefault(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

// Validate checks what the CRD schema cannot: fields that bound each other,
// taking the defaults of the fields left out, and the extensions Koord
// reads. The error names the field.
func (s *NodeSLOSpec) Validate() error {
	if t := s.ResourceUsedThresholdWithBE; t != nil {
		if err := t.validate(); err != nil {
			return fmt.Errorf("resourceUsedThresholdWithBE.%w", err)
		}
	}
	if q := s.ResourceQOSStrategy; q != nil {
		for name, c := range map[string]*ResourceQOS{"lsrClass": q.LSRClass, "lsClass": q.LSClass, "beClass": q.BEClass, "systemClass": q.SystemClass, "cgroupRoot": q.CgroupRoot} {
			if err := c.validate(); err != nil {
				return fmt.Errorf("resourceQOSStrategy.%s.%w", name, err)
			}
		}
	}
	if b := s.CPUBurstStrategy; b != nil {
		if err := b.validate(); err != nil {
			return fmt.Errorf("cpuBurstStrategy.%w", err)
		}
	}
	_, err := s.GetInterferenceGuard()
	return err
}

func percent(name string, v int64) error {
	if v < 0 || v > 100 {
		return fmt.Errorf("%s: %d is not a percentage (0-100)", name, v)
	}
	return nil
}

func (t *ResourceThresholdStrategy) validate() error {
	threshold := orDefault(t.CPUSuppressThresholdPercent, DefaultCPUSuppressThresholdPercent)
	minimum := orDefault(t.CPUSuppressMinPercent, 0)
	mem := orDefault(t.MemoryEvictThresholdPercent, DefaultMemoryEvictThresholdPercent)
	lower := orDefault(t.MemoryEvictLowerPercent, mem-MemoryEvictBufferPercent)
	for _, f := range []struct {
		name string
		p    *int64
	}{
		{"cpuSuppressThresholdPercent", t.CPUSuppressThresholdPercent}, {"cpuSuppressMinPercent", t.CPUSuppressMinPercent},
		{"memoryEvictThresholdPercent", t.MemoryEvictThresholdPercent}, {"memoryEvictLowerPercent", t.MemoryEvictLowerPercent},
		{"cpuEvictBEUsageThresholdPercent", t.CPUEvictBEUsageThresholdPercent},
		{"cpuEvictBESatisfactionLowerPercent", t.CPUEvictBESatisfactionLowerPercent}, {"cpuEvictBESatisfactionUpperPercent", t.CPUEvictBESatisfactionUpperPercent},
		{"cpuEvictThresholdPercent", t.CPUEvictThresholdPercent}, {"cpuEvictLowerPercent", t.CPUEvictLowerPercent},
	} {
		if f.p != nil {
			if err := percent(f.name, *f.p); err != nil {
				return err
			}
		}
	}
	switch {
	case t.CPUSuppressPolicy != "" && t.CPUSuppressPolicy != CPUSetPolicy && t.CPUSuppressPolicy != CPUCfsQuotaPolicy:
		return fmt.Errorf("cpuSuppressPolicy: %q is not cpuset or cfsQuota", t.CPUSuppressPolicy)
	case lower < 0 || lower >= mem:
		return fmt.Errorf("memoryEvictLowerPercent: %d must be below memoryEvictThresholdPercent %d", lower, mem)
	case minimum > threshold:
		return fmt.Errorf("cpuSuppressMinPercent: %d is above cpuSuppressThresholdPercent %d", minimum, threshold)
	case t.CPUEvictTimeWindowSeconds != nil && *t.CPUEvictTimeWindowSeconds < 1:
		return fmt.Errorf("cpuEvictTimeWindowSeconds: %d must be at least 1", *t.CPUEvictTimeWindowSeconds)
	}
	switch t.CPUEvictPolicy {
	case "", EvictByRealLimitPolicy, EvictByAllocatablePolicy:
	default:
		return fmt.Errorf("cpuEvictPolicy: %q is not evictByRealLimit or evictByAllocatable", t.CPUEvictPolicy)
	}
	if p := t.AllocatableEvictPriorityThreshold; p != nil && (*p < 0 || *p > 7999) {
		return fmt.Errorf("allocatableEvictPriorityThreshold: %d is not within 0-7999", *p)
	}
	// Each upper bound must lie above its lower bound, as in Koordinator.
	for _, pair := range []struct {
		upper, lower         string
		upperVal, lowerValue *int64
	}{
		{"memoryAllocatableEvictThresholdPercent", "memoryAllocatableEvictLowerPercent", t.MemoryAllocatableEvictThresholdPercent, t.MemoryAllocatableEvictLowerPercent},
		{"cpuEvictThresholdPercent", "cpuEvictLowerPercent", t.CPUEvictThresholdPercent, t.CPUEvictLowerPercent},
		{"cpuAllocatableEvictThresholdPercent", "cpuAllocatableEvictLowerPercent", t.CPUAllocatableEvictThresholdPercent, t.CPUAllocatableEvictLowerPercent},
	} {
		for _, f := range []struct {
			name string
			p    *int64
		}{{pair.upper, pair.upperVal}, {pair.lower, pair.lowerValue}} {
			if f.p != nil && *f.p < 0 {
				return fmt.Errorf("%s: %d is negative", f.name, *f.p)
			}
		}
		if pair.upperVal != nil && pair.lowerValue != nil && *pair.lowerValue >= *pair.upperVal {
			return fmt.Errorf("%s: %d must be below %s %d", pair.lower, *pair.lowerValue, pair.upper, *pair.upperVal)
		}
	}
	if lo, up := t.CPUEvictBESatisfactionLowerPercent, t.CPUEvictBESatisfactionUpperPercent; lo != nil && up != nil {
		switch {
		case *lo > MaxCPUEvictBESatisfactionLowerPercent:
			return fmt.Errorf("cpuEvictBESatisfactionLowerPercent: %d is above %d", *lo, MaxCPUEvictBESatisfactionLowerPercent)
		case *lo >= *up:
			return fmt.Errorf("cpuEvictBESatisfactionLowerPercent: %d must be below cpuEvictBESatisfactionUpperPercent %d", *lo, *up)
		}
	}
	return nil
}

func (c *ResourceQOS) validate() error {
	if c == nil {
		return nil
	}
	if cpu := c.CPUQOS; cpu != nil {
		if g := cpu.GroupIdentity; g != nil && (*g < -1 || *g > 2) {
			return fmt.Errorf("cpuQOS.groupIdentity: %d is not within -1-2", *g)
		}
		if i := cpu.SchedIdle; i != nil && (*i < 0 || *i > 1) {
			return fmt.Errorf("cpuQOS.schedIdle: %d is not 0 or 1", *i)
		}
	}
	if m := c.MemoryQOS; m != nil {
		for _, f := range []struct {
			name string
			p    *int64
		}{{"minLimitPercent", m.MinLimitPercent}, {"lowLimitPercent", m.LowLimitPercent}, {"throttlingPercent", m.ThrottlingPercent}} {
			if f.p != nil {
				if err := percent("memoryQOS."+f.name, *f.p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (b *CPUBurstStrategy) validate() error {
	switch b.Policy {
	case "", CPUBurstNone, CPUBurstOnly, CFSQuotaBurstOnly, CPUBurstAuto:
	default:
		return fmt.Errorf("policy: %q is not none, cpuBurstOnly, cfsQuotaBurstOnly or auto", b.Policy)
	}
	switch {
	case b.CPUBurstPercent != nil && *b.CPUBurstPercent < 0:
		return fmt.Errorf("cpuBurstPercent: %d is negative", *b.CPUBurstPercent)
	case b.CFSQuotaBurstPercent != nil && *b.CFSQuotaBurstPercent < 100:
		return fmt.Errorf("cfsQuotaBurstPercent: %d is below 100", *b.CFSQuotaBurstPercent)
	case b.CFSQuotaBurstPeriodSeconds != nil && *b.CFSQuotaBurstPeriodSeconds < -1:
		return fmt.Errorf("cfsQuotaBurstPeriodSeconds: %d is below -1", *b.CFSQuotaBurstPeriodSeconds)
	case b.SharePoolThresholdPercent != nil:
		return percent("sharePoolThresholdPercent", *b.SharePoolThresholdPercent)
	}
	return nil
}
