// Package config reads koord-manager's slo-controller-config ConfigMap, the
// same ConfigMap (name and keys) Koordinator's operators already maintain.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

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
	// InterferenceGuardKey is Koord's own key: the interference guard
	// (NodeSLO spec.extensions["koord.sh/interferenceGuard"]).
	InterferenceGuardKey = "interference-guard-config"
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
		MetricAggregateDurationSeconds: slov1alpha1.DefaultAggregateDurationSeconds,
		MetricReportIntervalSeconds:    slov1alpha1.DefaultReportIntervalSeconds,
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
	// NodeSLO is the cluster strategy: every key's clusterStrategy.
	NodeSLO slov1alpha1.NodeSLOSpec
	// nodeStrategies are each key's nodeStrategies, in order.
	nodeStrategies []nodeStrategy
}

// nodeStrategy is one nodeStrategies entry: the strategy of one key for the
// nodes its selector matches, laid over the cluster strategy.
type nodeStrategy struct {
	key      string
	name     string
	selector labels.Selector
	// spec is the cluster strategy with the entry laid over it (only the
	// key's own part is taken from it).
	spec slov1alpha1.NodeSLOSpec
}

// NodeSLOFor is the NodeSLO spec of a node with the given labels: for each
// key, the first nodeStrategies entry whose nodeSelector matches (laid over
// the clusterStrategy), else the clusterStrategy. A nil nodeSelector
// matches no node, as in Koordinator.
func (c Config) NodeSLOFor(nodeLabels map[string]string) slov1alpha1.NodeSLOSpec {
	out := *c.NodeSLO.DeepCopy()
	done := map[string]bool{}
	for _, ns := range c.nodeStrategies {
		if done[ns.key] || !ns.selector.Matches(labels.Set(nodeLabels)) {
			continue
		}
		done[ns.key] = true
		strategyKeys[ns.key].copy(&out, &ns.spec)
	}
	return out
}

// Default is the configuration when the ConfigMap does not exist.
func Default() Config {
	return Config{Colocation: DefaultColocation(), NodeSLO: DefaultNodeSLO()}
}

// DefaultNodeSLO is Koordinator's default strategy: BE suppression at 65 %
// CPU and eviction at 70 % memory, described but not enabled.
func DefaultNodeSLO() slov1alpha1.NodeSLOSpec {
	f := false
	cpu, mem := slov1alpha1.DefaultCPUSuppressThresholdPercent, slov1alpha1.DefaultMemoryEvictThresholdPercent
	return slov1alpha1.NodeSLOSpec{
		ResourceUsedThresholdWithBE: &slov1alpha1.ResourceThresholdStrategy{
			Enable:                      &f,
			CPUSuppressThresholdPercent: &cpu,
			CPUSuppressPolicy:           slov1alpha1.CPUSetPolicy,
			MemoryEvictThresholdPercent: &mem,
		},
	}
}

// strategyKey is how one strategy key of the ConfigMap maps to the NodeSLO
// spec: overlay decodes a strategy (strictly) over the spec's current one,
// copy takes that part from one spec into another.
type strategyKey struct {
	overlay func(spec *slov1alpha1.NodeSLOSpec, raw []byte) error
	copy    func(dst, src *slov1alpha1.NodeSLOSpec)
}

// field makes the strategyKey of a plain spec field.
func field[T any](get func(*slov1alpha1.NodeSLOSpec) **T) strategyKey {
	return strategyKey{
		overlay: func(spec *slov1alpha1.NodeSLOSpec, raw []byte) error { return decodeOver(raw, get(spec)) },
		copy:    func(dst, src *slov1alpha1.NodeSLOSpec) { *get(dst) = *get(src) },
	}
}

var strategyKeys = map[string]strategyKey{
	ResourceThresholdKey: field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.ResourceThresholdStrategy {
		return &s.ResourceUsedThresholdWithBE
	}),
	ResourceQOSKey: field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.ResourceQOSStrategy { return &s.ResourceQOSStrategy }),
	CPUBurstKey:    field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.CPUBurstStrategy { return &s.CPUBurstStrategy }),
	SystemKey:      field(func(s *slov1alpha1.NodeSLOSpec) **slov1alpha1.SystemStrategy { return &s.SystemStrategy }),
	InterferenceGuardKey: {
		overlay: func(spec *slov1alpha1.NodeSLOSpec, raw []byte) error {
			g, err := spec.GetInterferenceGuard()
			if err != nil {
				return err
			}
			if g == nil {
				g = &slov1alpha1.InterferenceGuardStrategy{}
			}
			if err := decodeOver(raw, &g); err != nil {
				return err
			}
			return spec.SetInterferenceGuard(g)
		},
		copy: func(dst, src *slov1alpha1.NodeSLOSpec) {
			g, _ := src.GetInterferenceGuard()
			_ = dst.SetInterferenceGuard(g)
		},
	},
}

// strategyOrder is the order keys are read in (errors name the first bad one).
var strategyOrder = []string{ResourceThresholdKey, ResourceQOSKey, CPUBurstKey, SystemKey, InterferenceGuardKey}

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
	// Each strategy key is Koordinator's {"clusterStrategy": {...},
	// "nodeStrategies": [{"name": ..., "nodeSelector": {...}, <fields>}]}.
	var entries []struct {
		key string
		raw []json.RawMessage
	}
	for _, key := range strategyOrder {
		raw, ok := cm.Data[key]
		if !ok {
			continue
		}
		var wrapper struct {
			ClusterStrategy json.RawMessage   `json:"clusterStrategy"`
			NodeStrategies  []json.RawMessage `json:"nodeStrategies"`
		}
		if err := decode(raw, &wrapper); err != nil {
			return Config{}, where(key, err)
		}
		if len(wrapper.ClusterStrategy) > 0 && string(wrapper.ClusterStrategy) != "null" {
			if err := strategyKeys[key].overlay(&cfg.NodeSLO, wrapper.ClusterStrategy); err != nil {
				return Config{}, where(key, fmt.Errorf("clusterStrategy: %w", err))
			}
			// The keys before this one passed: an error is this key's.
			if err := cfg.NodeSLO.Validate(); err != nil {
				return Config{}, where(key, fmt.Errorf("clusterStrategy: %w", err))
			}
		}
		entries = append(entries, struct {
			key string
			raw []json.RawMessage
		}{key, wrapper.NodeStrategies})
	}
	for _, e := range entries {
		for i, raw := range e.raw {
			ns, err := parseNodeStrategy(e.key, raw, cfg.NodeSLO)
			if err != nil {
				return Config{}, where(e.key, fmt.Errorf("nodeStrategies[%d]: %w", i, err))
			}
			cfg.nodeStrategies = append(cfg.nodeStrategies, ns)
		}
	}
	return cfg, nil
}

// parseNodeStrategy reads one nodeStrategies entry: its profile (name,
// nodeSelector) and, inline, the key's strategy fields laid over the
// cluster strategy.
func parseNodeStrategy(key string, raw json.RawMessage, cluster slov1alpha1.NodeSLOSpec) (nodeStrategy, error) {
	var fields map[string]json.RawMessage
	if err := decode(string(raw), &fields); err != nil {
		return nodeStrategy{}, err
	}
	ns := nodeStrategy{key: key, selector: labels.Nothing(), spec: *cluster.DeepCopy()}
	if v, ok := fields["name"]; ok {
		if err := json.Unmarshal(v, &ns.name); err != nil {
			return nodeStrategy{}, fmt.Errorf("name: %w", err)
		}
		delete(fields, "name")
	}
	if v, ok := fields["nodeSelector"]; ok {
		var sel *metav1.LabelSelector
		if err := decode(string(v), &sel); err != nil {
			return nodeStrategy{}, fmt.Errorf("nodeSelector: %w", err)
		}
		if sel != nil {
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				return nodeStrategy{}, fmt.Errorf("nodeSelector: %w", err)
			}
			ns.selector = s
		}
		delete(fields, "nodeSelector")
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return nodeStrategy{}, err
	}
	if err := strategyKeys[key].overlay(&ns.spec, rest); err != nil {
		return nodeStrategy{}, err
	}
	if err := ns.spec.Validate(); err != nil {
		return nodeStrategy{}, err
	}
	return ns, nil
}

// decodeOver decodes raw strictly over what into already holds (fields it
// leaves out keep their value).
func decodeOver(raw []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// decode is strict: an unknown field is a typo an operator wants to hear about.
func decode(raw string, into any) error { return decodeOver([]byte(raw), into) }

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
