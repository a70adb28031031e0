package v1alpha1

import "time"

// Koordinator's defaults for a NodeMetric's collect policy, written here
// only: koord-manager puts them in the specs it creates, koordlet uses them
// for what a spec leaves out, and LoadAwareScheduling judges a metric's age
// by the report interval.
const (
	DefaultAggregateDurationSeconds int64 = 300
	DefaultReportIntervalSeconds    int64 = 60
)

// DefaultAggregateWindows are the windows of aggregatedNodeUsages.
func DefaultAggregateWindows() []time.Duration {
	return []time.Duration{5 * time.Minute, 10 * time.Minute, 30 * time.Minute}
}

// ReportInterval is how often koordlet updates the status: the policy's, or
// the default (also for a nil policy).
func (p *NodeMetricCollectPolicy) ReportInterval() time.Duration {
	if p != nil && p.ReportIntervalSeconds != nil && *p.ReportIntervalSeconds > 0 {
		return time.Duration(*p.ReportIntervalSeconds) * time.Second
	}
	return time.Duration(DefaultReportIntervalSeconds) * time.Second
}

// AggregateDuration is the window nodeUsage and each pod's usage average
// over: the policy's, or the default.
func (p *NodeMetricCollectPolicy) AggregateDuration() time.Duration {
	if p != nil && p.AggregateDurationSeconds != nil && *p.AggregateDurationSeconds > 0 {
		return time.Duration(*p.AggregateDurationSeconds) * time.Second
	}
	return time.Duration(DefaultAggregateDurationSeconds) * time.Second
}

// AggregateWindows are the windows of aggregatedNodeUsages: the policy's
// positive ones, or the defaults when it names none.
func (p *NodeMetricCollectPolicy) AggregateWindows() []time.Duration {
	if p == nil || p.NodeAggregatePolicy == nil || len(p.NodeAggregatePolicy.Durations) == 0 {
		return DefaultAggregateWindows()
	}
	var out []time.Duration
	for _, d := range p.NodeAggregatePolicy.Durations {
		if d.Duration > 0 {
			out = append(out, d.Duration)
		}
	}
	return out
}
