// Package config reads koord-manager's slo-controller-config ConfigMap, the
// same ConfigMap (name and keys) Koordinator's operators already maintain.
package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/koord-project/koord/apis/extension"
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

// CalculatePolicy is what a high-priority pod counts for in the batch
// formula: its usage, its request, or the larger of the two.
type CalculatePolicy string

const (
	CalculateByPodUsage           CalculatePolicy = "usage"
	CalculateByPodRequest         CalculatePolicy = "request"
	CalculateByPodMaxUsageRequest CalculatePolicy = "maxUsageRequest"
)

// MidReclaimModeStatic offers a fixed share of capacity as mid resources.
const MidReclaimModeStatic = "static"

// Colocation is how much of a node's slack is offered to batch and mid pods:
// Koordinator's colocation-config, field for field, resolved (defaults filled
// in). The formulas are in package noderesource.
type Colocation struct {
	// Enable turns batch and mid resources on; when off they are removed from nodes.
	Enable bool `json:"enable"`
	// MetricAggregateDurationSeconds, MetricReportIntervalSeconds,
	// MetricAggregatePolicy and MetricMemoryCollectPolicy go into every
	// NodeMetric's spec, telling koordlet how to report.
	MetricAggregateDurationSeconds int64                                `json:"metricAggregateDurationSeconds"`
	MetricReportIntervalSeconds    int64                                `json:"metricReportIntervalSeconds"`
	MetricAggregatePolicy          *slov1alpha1.AggregatePolicy         `json:"metricAggregatePolicy,omitempty"`
	MetricMemoryCollectPolicy      *slov1alpha1.NodeMemoryCollectPolicy `json:"metricMemoryCollectPolicy,omitempty"`
	// CPUReclaimThresholdPercent and MemoryReclaimThresholdPercent: the rest
	// of the node's capacity is a safety margin batch pods never get.
	CPUReclaimThresholdPercent    int64 `json:"cpuReclaimThresholdPercent"`
	MemoryReclaimThresholdPercent int64 `json:"memoryReclaimThresholdPercent"`
	// CPUCalculatePolicy (usage or maxUsageRequest; request counts as usage,
	// as in Koordinator) and MemoryCalculatePolicy (usage, request or
	// maxUsageRequest) say what high-priority pods count for.
	CPUCalculatePolicy    CalculatePolicy `json:"cpuCalculatePolicy"`
	MemoryCalculatePolicy CalculatePolicy `json:"memoryCalculatePolicy"`
	// DegradeTimeMinutes: a node whose NodeMetric is older offers no batch
	// resources (its usage is unknown, so its slack is too).
	DegradeTimeMinutes int64 `json:"degradeTimeMinutes"`
	// UpdateTimeThresholdSeconds and ResourceDiffThreshold damp Node writes:
	// a node is rewritten when its batch resources moved by more than the
	// fraction ResourceDiffThreshold of its allocatable, or when its last
	// write is older than UpdateTimeThresholdSeconds.
	UpdateTimeThresholdSeconds int64   `json:"updateTimeThresholdSeconds"`
	ResourceDiffThreshold      float64 `json:"resourceDiffThreshold"`
	// Mid resources (kubernetes.io/mid-cpu, mid-memory): "static" offers
	// midStatic*ReservedPercent of capacity; otherwise what prod pods are
	// predicted not to use (the NodeMetric's prodReclaimableMetric) plus
	// midUnallocatedPercent of what prod pods did not request. Either is
	// capped at mid*ThresholdPercent of capacity.
	MidReclaimMode                 string `json:"midReclaimMode,omitempty"`
	MidCPUThresholdPercent         int64  `json:"midCPUThresholdPercent"`
	MidMemoryThresholdPercent      int64  `json:"midMemoryThresholdPercent"`
	MidUnallocatedPercent          int64  `json:"midUnallocatedPercent"`
	MidStaticCPUReservedPercent    int64  `json:"midStaticCPUReservedPercent"`
	MidStaticMemoryReservedPercent int64  `json:"midStaticMemoryReservedPercent"`
	// BatchCPUThresholdPercent and BatchMemoryThresholdPercent, when set, cap
	// batch resources at that share of capacity.
	BatchCPUThresholdPercent    *int64 `json:"batchCPUThresholdPercent,omitempty"`
	BatchMemoryThresholdPercent *int64 `json:"batchMemoryThresholdPercent,omitempty"`
	// Extensions are third-party fields, kept as given.
	Extensions map[string]any `json:"extensions,omitempty"`
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
		CPUCalculatePolicy:             CalculateByPodUsage,
		MemoryCalculatePolicy:          CalculateByPodUsage,
		DegradeTimeMinutes:             15,
		UpdateTimeThresholdSeconds:     300,
		ResourceDiffThreshold:          0.1,
		MidCPUThresholdPercent:         100,
		MidMemoryThresholdPercent:      100,
	}
}

// clone is a copy that shares nothing with c: decoding a node's fields over
// it must not write through c's pointers into the cluster's strategy.
func (c Colocation) clone() Colocation {
	out := c
	out.MetricAggregatePolicy = c.MetricAggregatePolicy.DeepCopy()
	if c.MetricMemoryCollectPolicy != nil {
		v := *c.MetricMemoryCollectPolicy
		out.MetricMemoryCollectPolicy = &v
	}
	if c.BatchCPUThresholdPercent != nil {
		v := *c.BatchCPUThresholdPercent
		out.BatchCPUThresholdPercent = &v
	}
	if c.BatchMemoryThresholdPercent != nil {
		v := *c.BatchMemoryThresholdPercent
		out.BatchMemoryThresholdPercent = &v
	}
	if c.Extensions != nil {
		out.Extensions = make(map[string]any, len(c.Extensions))
		for k, v := range c.Extensions {
			out.Extensions[k] = v
		}
	}
	return out
}

func (c Colocation) DegradeAfter() time.Duration {
	return time.Duration(c.DegradeTimeMinutes) * time.Minute
}

func (c Colocation) UpdateAfter() time.Duration {
	return time.Duration(c.UpdateTimeThresholdSeconds) * time.Second
}

// nodeColocation is one colocation-config nodeConfigs entry, resolved.
type nodeColocation struct {
	name       string
	selector   labels.Selector
	colocation Colocation
}

// Config is the whole ConfigMap, resolved: defaults filled in, validated.
type Config struct {
	// Colocation is the cluster's colocation strategy; ColocationFor gives a
	// node's.
	Colocation Colocation
	// Warnings name the fields no Koordinator version knows (typos): they
	// are ignored, and reported, but do not refuse the ConfigMap.
	Warnings []string
	// NotActedOn name the Koordinator fields set that Koord keeps but does
	// not act on (compat.Fields).
	NotActedOn []string
	// nodeColocations are colocation-config's nodeConfigs, in order.
	nodeColocations []nodeColocation
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

// ColocationFor is the colocation strategy of a node with the given labels:
// the first nodeConfigs entry whose nodeSelector matches (laid over the
// cluster's), else the cluster's.
func (c Config) ColocationFor(nodeLabels map[string]string) Colocation {
	for _, nc := range c.nodeColocations {
		if nc.selector.Matches(labels.Set(nodeLabels)) {
			return nc.colocation
		}
	}
	return c.Colocation
}

// ColocationForNode is ColocationFor the node's labels, with the node's own
// settings laid over it as Koordinator lays them: the annotation
// node.koordinator.sh/colocation-strategy (colocation-config fields), then
// the ratio labels (cpu-reclaim-ratio, memory-reclaim-ratio,
// mid-static-cpu-reserved-ratio, mid-static-memory-reserved-ratio; "0.7" is
// 70 %). A malformed one, or one that makes the strategy invalid, is left
// out, and the error names it.
func (c Config) ColocationForNode(node *corev1.Node) (Colocation, error) {
	out := c.ColocationFor(node.Labels).clone()
	var errs []error
	if raw, ok := node.Annotations[extension.AnnotationNodeColocationStrategy]; ok {
		next := out.clone()
		unknown, err := decodeOver([]byte(raw), &next)
		if err == nil {
			err = next.validate()
		}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("annotation %s: %w", extension.AnnotationNodeColocationStrategy, err))
		default:
			out = next
			if len(unknown) > 0 {
				errs = append(errs, fmt.Errorf("annotation %s: %s (ignored)", extension.AnnotationNodeColocationStrategy, strings.Join(unknown, ", ")))
			}
		}
	}
	for _, l := range []struct {
		key   string
		field *int64
	}{
		{extension.LabelCPUReclaimRatio, &out.CPUReclaimThresholdPercent},
		{extension.LabelMemoryReclaimRatio, &out.MemoryReclaimThresholdPercent},
		{extension.LabelMidStaticCPUReservedRatio, &out.MidStaticCPUReservedPercent},
		{extension.LabelMidStaticMemoryReservedRatio, &out.MidStaticMemoryReservedPercent},
	} {
		v, ok := node.Labels[l.key]
		if !ok {
			continue
		}
		ratio, err := strconv.ParseFloat(v, 64)
		if err != nil || ratio < 0 {
			errs = append(errs, fmt.Errorf("label %s: %q is not a ratio of 0 or more", l.key, v))
			continue
		}
		prev := *l.field
		*l.field = int64(ratio * 100)
		if err := out.validate(); err != nil {
			*l.field = prev
			errs = append(errs, fmt.Errorf("label %s: %w", l.key, err))
		}
	}
	return out, errors.Join(errs...)
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

func (c Colocation) validate() error {
	nonNegative := func(name string, v int64) error {
		if v < 0 {
			return fmt.Errorf("%s must not be negative, got %d", name, v)
		}
		return nil
	}
	percent := func(name string, v int64) error {
		if v < 0 || v > 100 {
			return fmt.Errorf("%s %d is not a percentage (0-100)", name, v)
		}
		return nil
	}
	switch {
	case c.MetricAggregateDurationSeconds <= 0:
		return fmt.Errorf("metricAggregateDurationSeconds must be positive, got %d", c.MetricAggregateDurationSeconds)
	case c.MetricReportIntervalSeconds <= 0:
		return fmt.Errorf("metricReportIntervalSeconds must be positive, got %d", c.MetricReportIntervalSeconds)
	case c.DegradeTimeMinutes <= 0:
		return fmt.Errorf("degradeTimeMinutes must be positive, got %d", c.DegradeTimeMinutes)
	case c.UpdateTimeThresholdSeconds <= 0:
		return fmt.Errorf("updateTimeThresholdSeconds must be positive, got %d", c.UpdateTimeThresholdSeconds)
	case c.ResourceDiffThreshold <= 0 || c.ResourceDiffThreshold > 1:
		return fmt.Errorf("resourceDiffThreshold %v must be above 0 and at most 1", c.ResourceDiffThreshold)
	}
	switch c.CPUCalculatePolicy {
	case CalculateByPodUsage, CalculateByPodRequest, CalculateByPodMaxUsageRequest:
	default:
		return fmt.Errorf("cpuCalculatePolicy %q is not usage, request or maxUsageRequest", c.CPUCalculatePolicy)
	}
	switch c.MemoryCalculatePolicy {
	case CalculateByPodUsage, CalculateByPodRequest, CalculateByPodMaxUsageRequest:
	default:
		return fmt.Errorf("memoryCalculatePolicy %q is not usage, request or maxUsageRequest", c.MemoryCalculatePolicy)
	}
	if c.MidReclaimMode != "" && c.MidReclaimMode != MidReclaimModeStatic {
		return fmt.Errorf("midReclaimMode %q is not static (or left out)", c.MidReclaimMode)
	}
	if p := c.MetricMemoryCollectPolicy; p != nil {
		switch *p {
		case slov1alpha1.UsageWithoutPageCache, slov1alpha1.UsageWithHotPageCache, slov1alpha1.UsageWithPageCache:
		default:
			return fmt.Errorf("metricMemoryCollectPolicy %q is not usageWithoutPageCache, usageWithHotPageCache or usageWithPageCache", *p)
		}
	}
	if p := c.MetricAggregatePolicy; p != nil {
		for i, d := range p.Durations {
			if d.Duration <= 0 {
				return fmt.Errorf("metricAggregatePolicy.durations[%d] must be positive, got %s", i, d.Duration)
			}
		}
	}
	// Koordinator bounds the reclaim thresholds below only: above 100 the
	// safety margin is negative, an overcommit it allows.
	for _, f := range []struct {
		name string
		v    int64
	}{{"cpuReclaimThresholdPercent", c.CPUReclaimThresholdPercent}, {"memoryReclaimThresholdPercent", c.MemoryReclaimThresholdPercent}} {
		if err := nonNegative(f.name, f.v); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"batchCPUThresholdPercent", c.BatchCPUThresholdPercent}, {"batchMemoryThresholdPercent", c.BatchMemoryThresholdPercent}} {
		if f.v != nil {
			if err := nonNegative(f.name, *f.v); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"midCPUThresholdPercent", c.MidCPUThresholdPercent}, {"midMemoryThresholdPercent", c.MidMemoryThresholdPercent},
		{"midUnallocatedPercent", c.MidUnallocatedPercent},
		{"midStaticCPUReservedPercent", c.MidStaticCPUReservedPercent}, {"midStaticMemoryReservedPercent", c.MidStaticMemoryReservedPercent},
	} {
		if err := percent(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}
