// Package validation checks Koord plugin args. Errors name the field path as
// written in the KubeSchedulerConfiguration, e.g. usageThresholds[cpu].
package validation

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
)

// ValidateLoadAwareSchedulingArgs checks LoadAwareSchedulingArgs.
func ValidateLoadAwareSchedulingArgs(path *field.Path, args *config.LoadAwareSchedulingArgs) error {
	var errs field.ErrorList
	if args.NodeMetricExpirationSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("nodeMetricExpirationSeconds"), args.NodeMetricExpirationSeconds, "must be greater than 0"))
	}
	errs = append(errs, validateRange(path.Child("resourceWeights"), args.ResourceWeights, 1, 100)...)
	errs = append(errs, validateRange(path.Child("usageThresholds"), args.UsageThresholds, 0, 100)...)
	errs = append(errs, validateRange(path.Child("prodUsageThresholds"), args.ProdUsageThresholds, 0, 100)...)
	errs = append(errs, validateRange(path.Child("estimatedScalingFactors"), args.EstimatedScalingFactors, 1, 100)...)
	switch args.ScoringStrategy {
	case config.LeastUsed, config.MostUsed:
	default:
		errs = append(errs, field.NotSupported(path.Child("scoringStrategy"), args.ScoringStrategy, []string{string(config.LeastUsed), string(config.MostUsed)}))
	}
	if args.DominantResourceWeight < 0 || args.DominantResourceWeight > 100 {
		errs = append(errs, field.Invalid(path.Child("dominantResourceWeight"), args.DominantResourceWeight, "must be in the range [0, 100]"))
	}
	if args.Estimator != "" && args.Estimator != config.DefaultEstimator {
		errs = append(errs, field.NotSupported(path.Child("estimator"), args.Estimator, []string{config.DefaultEstimator}))
	}
	for name, v := range map[string]*int64{"estimatedSecondsAfterPodScheduled": args.EstimatedSecondsAfterPodScheduled, "estimatedSecondsAfterInitialized": args.EstimatedSecondsAfterInitialized} {
		if v != nil && *v < 0 {
			errs = append(errs, field.Invalid(path.Child(name), *v, "must not be negative"))
		}
	}
	if a := args.Aggregated; a != nil {
		p := path.Child("aggregated")
		errs = append(errs, validateRange(p.Child("usageThresholds"), a.UsageThresholds, 0, 100)...)
		errs = append(errs, validateAggregationType(p.Child("usageAggregationType"), a.UsageAggregationType)...)
		errs = append(errs, validateAggregationType(p.Child("scoreAggregationType"), a.ScoreAggregationType)...)
		if a.UsageAggregatedDuration.Duration < 0 {
			errs = append(errs, field.Invalid(p.Child("usageAggregatedDuration"), a.UsageAggregatedDuration.String(), "must not be negative"))
		}
		if a.ScoreAggregatedDuration.Duration < 0 {
			errs = append(errs, field.Invalid(p.Child("scoreAggregatedDuration"), a.ScoreAggregatedDuration.String(), "must not be negative"))
		}
	}
	return errs.ToAggregate()
}

// validateRange checks each value of a per-resource map lies in [lo, hi], in
// a stable order so the same config always reports the same first error.
func validateRange(path *field.Path, m map[corev1.ResourceName]int64, lo, hi int64) field.ErrorList {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var errs field.ErrorList
	for _, name := range names {
		if v := m[corev1.ResourceName(name)]; v < lo || v > hi {
			errs = append(errs, field.Invalid(path.Key(name), v, rangeMessage(lo, hi)))
		}
	}
	return errs
}

func rangeMessage(lo, hi int64) string {
	return fmt.Sprintf("must be in the range [%d, %d]", lo, hi)
}

func validateAggregationType(path *field.Path, t slov1alpha1.AggregationType) field.ErrorList {
	if t == "" {
		return nil
	}
	supported := make([]string, 0, len(slov1alpha1.AggregationTypes))
	for _, s := range slov1alpha1.AggregationTypes {
		if s == t {
			return nil
		}
		supported = append(supported, string(s))
	}
	return field.ErrorList{field.NotSupported(path, t, supported)}
}

// ValidateNodeNUMAResourceArgs checks NodeNUMAResourceArgs.
func ValidateNodeNUMAResourceArgs(path *field.Path, args *config.NodeNUMAResourceArgs) error {
	var errs field.ErrorList
	switch args.DefaultCPUBindPolicy {
	case extension.CPUBindPolicyFullPCPUs, extension.CPUBindPolicySpreadByPCPUs:
	default:
		errs = append(errs, field.NotSupported(path.Child("defaultCPUBindPolicy"), args.DefaultCPUBindPolicy,
			[]string{string(extension.CPUBindPolicyFullPCPUs), string(extension.CPUBindPolicySpreadByPCPUs)}))
	}
	errs = append(errs, validateScoringStrategy(path.Child("scoringStrategy"), args.ScoringStrategy)...)
	errs = append(errs, validateScoringStrategy(path.Child("numaScoringStrategy"), args.NUMAScoringStrategy)...)
	switch args.TopologySource {
	case config.TopologySourceConfigMap, config.TopologySourceNodeResourceTopology:
	default:
		errs = append(errs, field.NotSupported(path.Child("topologySource"), args.TopologySource,
			[]string{string(config.TopologySourceConfigMap), string(config.TopologySourceNodeResourceTopology)}))
	}
	return errs.ToAggregate()
}

func validateScoringStrategy(path *field.Path, s *config.ResourceScoringStrategy) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	switch s.Type {
	case config.LeastAllocated, config.MostAllocated:
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), s.Type, []string{string(config.LeastAllocated), string(config.MostAllocated)}))
	}
	seen := map[corev1.ResourceName]bool{}
	for i, r := range s.Resources {
		p := path.Child("resources").Index(i)
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if seen[r.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		}
		seen[r.Name] = true
		if r.Weight < 1 || r.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), r.Weight, rangeMessage(1, 100)))
		}
	}
	return errs
}

// ValidateReservationArgs checks ReservationArgs as Koordinator does: the
// percentage is one, and nothing is negative.
func ValidateReservationArgs(path *field.Path, args *config.ReservationArgs) error {
	var errs field.ErrorList
	if p := args.MinCandidateNodesPercentage; p < 0 || p > 100 {
		errs = append(errs, field.Invalid(path.Child("minCandidateNodesPercentage"), p, "must be in the range [0, 100]"))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"minCandidateNodesAbsolute", int64(args.MinCandidateNodesAbsolute)}, {"controllerWorkers", int64(args.ControllerWorkers)},
		{"gcDurationSeconds", args.GCDurationSeconds}, {"gcIntervalSeconds", args.GCIntervalSeconds}, {"resyncIntervalSeconds", args.ResyncIntervalSeconds},
	} {
		if f.v < 0 {
			errs = append(errs, field.Invalid(path.Child(f.name), f.v, "must not be negative"))
		}
	}
	return errs.ToAggregate()
}

// ValidateCoschedulingArgs checks CoschedulingArgs: a positive timeout, a
// known match policy, workers not negative.
func ValidateCoschedulingArgs(path *field.Path, args *config.CoschedulingArgs) error {
	var errs field.ErrorList
	if args.DefaultTimeout.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("defaultTimeout"), args.DefaultTimeout.Duration.String(), "must be positive"))
	}
	switch args.DefaultMatchPolicy {
	case extension.GangMatchOnceSatisfied, extension.GangMatchOnlyWaiting, extension.GangMatchWaitingAndRunning:
	default:
		errs = append(errs, field.NotSupported(path.Child("defaultMatchPolicy"), args.DefaultMatchPolicy,
			[]string{extension.GangMatchOnceSatisfied, extension.GangMatchOnlyWaiting, extension.GangMatchWaitingAndRunning}))
	}
	if args.ControllerWorkers < 0 {
		errs = append(errs, field.Invalid(path.Child("controllerWorkers"), args.ControllerWorkers, "must not be negative"))
	}
	return errs.ToAggregate()
}

// ValidateElasticQuotaArgs checks ElasticQuotaArgs: group maxima not
// negative, intervals not negative.
func ValidateElasticQuotaArgs(path *field.Path, args *config.ElasticQuotaArgs) error {
	var errs field.ErrorList
	for _, l := range []struct {
		name string
		list corev1.ResourceList
	}{{"defaultQuotaGroupMax", args.DefaultQuotaGroupMax}, {"systemQuotaGroupMax", args.SystemQuotaGroupMax}} {
		for _, r := range slices.Sorted(maps.Keys(l.list)) {
			if q := l.list[r]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(l.name).Key(string(r)), q.String(), "must not be negative"))
			}
		}
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"delayEvictTime", args.DelayEvictTime.Duration}, {"revokePodInterval", args.RevokePodInterval.Duration}, {"quotaSnapshotUpdateInterval", args.QuotaSnapshotUpdateInterval.Duration}} {
		if d.d < 0 {
			errs = append(errs, field.Invalid(path.Child(d.name), d.d.String(), "must not be negative"))
		}
	}
	return errs.ToAggregate()
}
