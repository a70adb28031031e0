package loadaware

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

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

// batchEquivalent maps the over-committed batch resources BE pods request
// onto the resources node usage is measured in.
var batchEquivalent = map[corev1.ResourceName]corev1.ResourceName{
	extension.BatchCPU:    corev1.ResourceCPU,
	extension.BatchMemory: corev1.ResourceMemory,
}

// estimatePod is the usage a pod is expected to reach soon after it starts:
// max(request, limit) × factor / 100, capped at the limit; pods that request
// nothing of cpu or memory are assumed to use 250m and 200Mi.
func estimatePod(pod *corev1.Pod, resources []corev1.ResourceName, factors map[corev1.ResourceName]int64) vector {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	// batch-cpu is already in milli-cores and batch-memory in bytes.
	batchReq, batchLim := map[corev1.ResourceName]int64{}, map[corev1.ResourceName]int64{}
	for batch, real := range batchEquivalent {
		if q, ok := requests[batch]; ok {
			batchReq[real] = q.Value()
		}
		if q, ok := limits[batch]; ok {
			batchLim[real] = q.Value()
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
		e := max(req, lim) * scalingFactor(factors, name) / 100
		if lim > 0 && e > lim {
			e = lim
		}
		est[i] = e
	}
	return est
}

// scalingFactor is the percentage estimates of name are scaled by: 100 where
// the args name none.
func scalingFactor(factors map[corev1.ResourceName]int64, name corev1.ResourceName) int64 {
	if f, ok := factors[name]; ok {
		return f
	}
	return 100
}
