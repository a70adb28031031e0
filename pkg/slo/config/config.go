// Package config reads koord-manager's slo-controller-config ConfigMap, the
// same ConfigMap (name and keys) Koordinator's operators already maintain.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

const (
	// ConfigMapName is the ConfigMap koord-manager reads, in its own namespace.
	ConfigMapName = "slo-controller-config"

	ColocationKey        = "colocation-config"
	ResourceThresholdKey = "resource-threshold-config"
	ResourceQOSKey       = "resource-qos-config"
	CPUBurstKey          = "cpu-burst-config"
	SystemKey            = "system-config"
)

// Colocation is how much of a node's measured slack is offered to batch pods.
// Field names are Koordinator's.
type Colocation struct {
	// Enable turns batch resources on; when off they are removed from nodes.
	Enable bool `json:"enable"`
	// MetricAggregateDurationSeconds and MetricReportIntervalSeconds go into
	// every NodeMetric's spec, telling koordlet how to report.
	MetricAggregateDurationSeconds int64 `json:"metricAggregateDurationSeconds"`
	MetricReportIntervalSeconds    int64 `json:"metricReportIntervalSeconds"`
	// CPUReclaimThresholdPercent and MemoryReclaimThresholdPercent cap what
	// high-priority pods, the system and batch pods together may use.
	CPUReclaimThresholdPercent    int64 `json:"cpuReclaimThresholdPercent"`
	MemoryReclaimThresholdPercent int64 `json:"memoryReclaimThresholdPercent"`
	// DegradeTimeMinutes: a node whose NodeMetric is older offers no batch
	// resources (its usage is unknown, so its slack is too).
	DegradeTimeMinutes int64 `json:"degradeTimeMinutes"`
	// UpdateTimeThresholdSeconds and ResourceDiffThreshold damp Node writes:
	// a node is rewritten when its batch resources moved by more than the
	// fraction ResourceDiffThreshold of its allocatable, or when its last
	// write is older than UpdateTimeThresholdSeconds.
	UpdateTimeThresholdSeconds int64   `json:"updateTimeThresholdSeconds"`
	ResourceDiffThreshold      float64 `json:"resourceDiffThreshold"`
}

// DefaultColocation is Koordinator's default, batch resources off until an
// operator turns them on (the chart's ConfigMap does).
func DefaultColocation() Colocation {
	return Colocation{
		Enable:                         false,
		MetricAggregateDurationSeconds: 300,
		MetricReportIntervalSeconds:    60,
		CPUReclaimThresholdPercent:     60,
		MemoryReclaimThresholdPercent:  65,
		DegradeTimeMinutes:             15,
		UpdateTimeThresholdSeconds:     300,
		ResourceDiffThreshold:          0.1,
	}
}

func (c Colocation) DegradeAfter() time.Duration {
	return time.Duration(c.DegradeTimeMinutes) * time.Minute
}

func (c Colocation) UpdateAfter() time.Duration {
	return time.Duration(c.UpdateTimeThresholdSeconds) * time.Second
}

// Config is the whole ConfigMap, resolved: defaults filled in, validated.
type Config struct {
	Colocation Colocation
	// NodeSLO is the spec every node's NodeSLO gets (the clusterStrategy of
	// each strategy key).
	NodeSLO slov1alpha1.NodeSLOSpec
}

// Default is the configuration when the ConfigMap does not exist.
func Default() Config {
	return Config{Colocation: DefaultColocation(), NodeSLO: DefaultNodeSLO()}
}

// DefaultNodeSLO is Koordinator's default strategy: BE suppression at 65 %
// CPU and eviction at 70 % memory, described but not enabled.
func DefaultNodeSLO() slov1alpha1.NodeSLOSpec {
	f := false
	cpu, mem := int64(65), int64(70)
	return slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable:                      &f,
			CPUSuppressThresholdPercent: &cpu,
			CPUSuppressPolicy:           slov1alpha1.CPUSetPolicy,
			MemoryEvictThresholdPercent: &mem,
		},
	}
}

// Parse resolves a ConfigMap; nil means it does not exist. An error names the
// key and why; callers keep their previous configuration on error.
func Parse(cm *corev1.ConfigMap) (Config, error) {
	cfg := Default()
	if cm == nil {
		return cfg, nil
	}
	where := func(key string, err error) error {
		return fmt.Errorf("configmap %s/%s key %s: %w", cm.Namespace, cm.Name, key, err)
	}
	if raw, ok := cm.Data[ColocationKey]; ok {
		if err := decode(raw, &cfg.Colocation); err != nil {
			return Config{}, where(ColocationKey, err)
		}
		if err := cfg.Colocation.validate(); err != nil {
			return Config{}, where(ColocationKey, err)
		}
	}
	strategies := []struct {
		key string
		dst any
	}{
		{ResourceThresholdKey, &cfg.NodeSLO.ResourceUsedThresholdWithBE},
		{ResourceQOSKey, &cfg.NodeSLO.ResourceQOSStrategy},
		{CPUBurstKey, &cfg.NodeSLO.CPUBurstStrategy},
		{SystemKey, &cfg.NodeSLO.SystemStrategy},
	}
	for _, s := range strategies {
		raw, ok := cm.Data[s.key]
		if !ok {
			continue
		}
		// {"clusterStrategy": {...}}: Koordinator's shape (its per-node
		// overrides, nodeStrategies, are not supported yet and are rejected
		// rather than silently ignored).
		var wrapper struct {
			ClusterStrategy json.RawMessage `json:"clusterStrategy"`
		}
		if err := decode(raw, &wrapper); err != nil {
			return Config{}, where(s.key, err)
		}
		if len(wrapper.ClusterStrategy) == 0 {
			continue
		}
		if err := decode(string(wrapper.ClusterStrategy), s.dst); err != nil {
			return Config{}, where(s.key, fmt.Errorf("clusterStrategy: %w", err))
		}
	}
	if t := cfg.NodeSLO.ResourceUsedThresholdWithBE; t != nil {
		for name, p := range map[string]*int64{
			"cpuSuppressThresholdPercent": t.CPUSuppressThresholdPercent,
			"memoryEvictThresholdPercent": t.MemoryEvictThresholdPercent,
		} {
			if p != nil && (*p < 0 || *p > 100) {
				return Config{}, where(ResourceThresholdKey, fmt.Errorf("clusterStrategy.%s %d is not a percentage (0-100)", name, *p))
			}
		}
	}
	return cfg, nil
}

// decode is strict: an unknown field is a typo an operator wants to hear about.
func decode(raw string, into any) error {
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

func (c Colocation) validate() error {
	switch {
	case c.MetricAggregateDurationSeconds <= 0:
		return fmt.Errorf("metricAggregateDurationSeconds must be positive, got %d", c.MetricAggregateDurationSeconds)
	case c.MetricReportIntervalSeconds <= 0:
		return fmt.Errorf("metricReportIntervalSeconds must be positive, got %d", c.MetricReportIntervalSeconds)
	case c.CPUReclaimThresholdPercent < 0 || c.CPUReclaimThresholdPercent > 100:
		return fmt.Errorf("cpuReclaimThresholdPercent %d is not a percentage (0-100)", c.CPUReclaimThresholdPercent)
	case c.MemoryReclaimThresholdPercent < 0 || c.MemoryReclaimThresholdPercent > 100:
		return fmt.Errorf("memoryReclaimThresholdPercent %d is not a percentage (0-100)", c.MemoryReclaimThresholdPercent)
	case c.DegradeTimeMinutes <= 0:
		return fmt.Errorf("degradeTimeMinutes must be positive, got %d", c.DegradeTimeMinutes)
	case c.UpdateTimeThresholdSeconds <= 0:
		return fmt.Errorf("updateTimeThresholdSeconds must be positive, got %d", c.UpdateTimeThresholdSeconds)
	case c.ResourceDiffThreshold < 0 || c.ResourceDiffThreshold > 1:
		return fmt.Errorf("resourceDiffThreshold %v must be within 0-1", c.ResourceDiffThreshold)
	}
	return nil
}
