package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// InterferenceGuardExtensionKey is the key of InterferenceGuardStrategy in
// NodeSLO spec.extensions (Koord's own; Koordinator has no such strategy).
const InterferenceGuardExtensionKey = "koord.sh/interferenceGuard"

// Defaults of InterferenceGuardStrategy.
const (
	DefaultGuardP99Microseconds int64 = 1000
	DefaultGuardStepPercent     int64 = 10
	DefaultGuardMinWaits        int64 = 100
)

// InterferenceGuardStrategy closes BE CPU suppression's loop on measured
// contention: when the p99 run-queue latency of the node's latency-sensitive
// pods (koordlet's eBPF probe) over the last collect interval exceeds the
// target, BE pods lose stepPercent of the node's CPUs more, interval after
// interval, until the p99 is back under the target; once it is under half the
// target they get the CPUs back a step at a time. It acts through BE CPU
// suppression, so resourceUsedThresholdWithBE must be enabled.
type InterferenceGuardStrategy struct {
	// Enable turns the guard on (default false).
	// +optional
	Enable *bool `json:"enable,omitempty"`
	// LSRunQueueLatencyP99Microseconds is the target: the p99 time LS, LSR and
	// LSE pods' runnable tasks may wait for a CPU (default 1000).
	// +optional
	LSRunQueueLatencyP99Microseconds *int64 `json:"lsRunQueueLatencyP99Microseconds,omitempty"`
	// StepPercent is the share of the node's CPUs one step takes from (or
	// gives back to) BE pods (1-100, default 10).
	// +optional
	StepPercent *int64 `json:"stepPercent,omitempty"`
	// MinWaits is how many waits an interval must hold before its p99 counts
	// (default 100): a quiet interval says nothing about contention.
	// +optional
	MinWaits *int64 `json:"minWaits,omitempty"`
}

// Resolved is the strategy with every default filled in.
func (s InterferenceGuardStrategy) Resolved() InterferenceGuardStrategy {
	f := false
	out := InterferenceGuardStrategy{Enable: &f}
	p99, step, waits := DefaultGuardP99Microseconds, DefaultGuardStepPercent, DefaultGuardMinWaits
	out.LSRunQueueLatencyP99Microseconds, out.StepPercent, out.MinWaits = &p99, &step, &waits
	if s.Enable != nil {
		e := *s.Enable
		out.Enable = &e
	}
	for _, f := range []struct{ dst, src **int64 }{
		{&out.LSRunQueueLatencyP99Microseconds, &s.LSRunQueueLatencyP99Microseconds},
		{&out.StepPercent, &s.StepPercent}, {&out.MinWaits, &s.MinWaits},
	} {
		if *f.src != nil {
			v := **f.src
			*f.dst = &v
		}
	}
	return out
}

// Validate names the first field out of range.
func (s InterferenceGuardStrategy) Validate() error {
	r := s.Resolved()
	switch {
	case *r.LSRunQueueLatencyP99Microseconds < 1:
		return fmt.Errorf("lsRunQueueLatencyP99Microseconds %d must be at least 1", *r.LSRunQueueLatencyP99Microseconds)
	case *r.StepPercent < 1 || *r.StepPercent > 100:
		return fmt.Errorf("stepPercent %d is not within 1-100", *r.StepPercent)
	case *r.MinWaits < 1:
		return fmt.Errorf("minWaits %d must be at least 1", *r.MinWaits)
	}
	return nil
}

// GetInterferenceGuard reads the guard from spec.extensions: nil when the
// key is absent. A malformed or out-of-range value is an error naming the key.
func (s *NodeSLOSpec) GetInterferenceGuard() (*InterferenceGuardStrategy, error) {
	if s == nil || s.Extensions == nil || len(s.Extensions.Raw) == 0 {
		return nil, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(s.Extensions.Raw, &all); err != nil {
		return nil, fmt.Errorf("spec.extensions: %w", err)
	}
	raw, ok := all[InterferenceGuardExtensionKey]
	if !ok {
		return nil, nil
	}
	var g InterferenceGuardStrategy
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&g); err != nil {
		return nil, fmt.Errorf("spec.extensions[%s]: %w", InterferenceGuardExtensionKey, err)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("spec.extensions[%s]: %w", InterferenceGuardExtensionKey, err)
	}
	return &g, nil
}

// SetInterferenceGuard puts g under its key in spec.extensions (nil removes
// it), keeping every other key.
func (s *NodeSLOSpec) SetInterferenceGuard(g *InterferenceGuardStrategy) error {
	all := map[string]json.RawMessage{}
	if s.Extensions != nil && len(s.Extensions.Raw) > 0 {
		if err := json.Unmarshal(s.Extensions.Raw, &all); err != nil {
			return fmt.Errorf("spec.extensions: %w", err)
		}
	}
	if g == nil {
		delete(all, InterferenceGuardExtensionKey)
	} else {
		b, err := json.Marshal(g)
		if err != nil {
			return err
		}
		all[InterferenceGuardExtensionKey] = b
	}
	if len(all) == 0 {
		s.Extensions = nil
		return nil
	}
	b, err := json.Marshal(all)
	if err != nil {
		return err
	}
	s.Extensions = &runtime.RawExtension{Raw: b}
	return nil
}
