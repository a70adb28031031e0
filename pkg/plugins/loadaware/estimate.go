package loadaware

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/apis/config"
	"github.com/koord-project/koord/apis/extension"
)

// Defaults for pods that request nothing: they still use something.
const (
	defaultMilliCPU    = 250
	defaultMemoryBytes = 200 << 20
)

// vector holds one amount per tracked resource: milli-cores for cpu, base
// units (bytes, counts) for everything else.
type vector []int64

func (v vector) add(o vector) {
	for i := range v {
		v[i] += o[i]
	}
}

// amount is a quantity in the unit vectors use for that resource.
func amount(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// batchEquivalent maps the over-committed batch and mid resources BE and
// koord-mid pods request onto the resources node usage is measured in.
var batchEquivalent = map[corev1.ResourceName]corev1.ResourceName{
	extension.BatchCPU:    corev1.ResourceCPU,
	extension.BatchMemory: corev1.ResourceMemory,
	extension.MidCPU:      corev1.ResourceCPU,
	extension.MidMemory:   corev1.ResourceMemory,
}

// estimatePod is the usage a pod is expected to reach soon after it starts:
// max(request, limit) × factor / 100, rounded to the nearest unit as
// Koordinator does, capped at the limit; pods that request nothing of cpu or
// memory are assumed to use 250m and 200Mi. batch-* and mid-* requests count
// as the cpu and memory they stand for.
func estimatePod(pod *corev1.Pod, resources []corev1.ResourceName, factors map[corev1.ResourceName]int64) vector {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	// batch-cpu and mid-cpu are already in milli-cores, batch-memory and
	// mid-memory in bytes.
	batchReq, batchLim := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	for batch, real := range batchEquivalent {
		if q, ok := requests[batch]; ok {
			batchReq[real] += q.Value()
		}
		if q, ok := limits[batch]; ok {
			batchLim[real] += q.Value()
		}
	}
	est := make(vector, len(resources))
	for i, name := range resources {
		var req, lim int64
		if q, ok := requests[name]; ok {
			req = amount(name, q)
		}
		if q, ok := limits[name]; ok {
			lim = amount(name, q)
		}
		req += batchReq[name]
		lim += batchLim[name]
		if req == 0 && lim == 0 {
			switch name {
			case corev1.ResourceCPU:
				est[i] = defaultMilliCPU
			case corev1.ResourceMemory:
				est[i] = defaultMemoryBytes
			}
			continue
		}
		e := (max(req, lim)*scalingFactor(factors, name) + 50) / 100
		if lim > 0 && e > lim {
			e = lim
		}
		est[i] = e
	}
	return est
}

// podFactors are the scaling factors for pod: the args', with the pod's own
// (annotation load-estimated-scaling-factors) laid over them when the args
// allow customized estimation. A malformed annotation is logged and ignored.
func podFactors(args *config.LoadAwareSchedulingArgs, pod *corev1.Pod) map[corev1.ResourceName]int64 {
	if !args.AllowCustomizeEstimation {
		return args.EstimatedScalingFactors
	}
	custom, err := extension.GetCustomEstimatedScalingFactors(pod.Annotations)
	if err != nil {
		klog.V(2).InfoS("Ignoring the pod's own scaling factors", "pod", klog.KObj(pod), "err", err)
		return args.EstimatedScalingFactors
	}
	if len(custom) == 0 {
		return args.EstimatedScalingFactors
	}
	merged := make(map[corev1.ResourceName]int64, len(args.EstimatedScalingFactors)+len(custom))
	for k, v := range args.EstimatedScalingFactors {
		merged[k] = v
	}
	for k, v := range custom {
		merged[k] = v
	}
	return merged
}

// forcedUntil is when a pod stops counting at its estimate even though the
// NodeMetric reports it: estimatedSecondsAfterPodScheduled after it was
// bound, estimatedSecondsAfterInitialized after it was initialized (the
// pod's annotation may set the first when the args allow customized
// estimation). Zero when neither applies.
func forcedUntil(args *config.LoadAwareSchedulingArgs, pod *corev1.Pod, bound time.Time) time.Time {
	var until time.Time
	afterScheduled := int64(-1)
	if v := args.EstimatedSecondsAfterPodScheduled; v != nil {
		afterScheduled = *v
	}
	if args.AllowCustomizeEstimation {
		if v, err := extension.GetCustomEstimatedSecondsAfterPodScheduled(pod.Annotations); err != nil {
			klog.V(2).InfoS("Ignoring the pod's own estimation period", "pod", klog.KObj(pod), "err", err)
		} else if v >= 0 {
			afterScheduled = v
		}
	}
	if afterScheduled > 0 && !bound.IsZero() {
		until = bound.Add(time.Duration(afterScheduled) * time.Second)
	}
	if v := args.EstimatedSecondsAfterInitialized; v != nil && *v > 0 {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodInitialized && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
				if t := c.LastTransitionTime.Add(time.Duration(*v) * time.Second); t.After(until) {
					until = t
				}
			}
		}
	}
	return until
}

// scalingFactor is the percentage estimates of name are scaled by: 100 where
// the args name none.
func scalingFactor(factors map[corev1.ResourceName]int64, name corev1.ResourceName) int64 {
	if f, ok := factors[name]; ok {
		return f
	}
	return 100
}
