// Package noderesource is koord-manager's node resource controller: it turns
// each node's measured slack into kubernetes.io/batch-cpu and batch-memory
// (for BE pods) and kubernetes.io/mid-cpu and mid-memory (for koord-mid
// pods) on the Node's status, by Koordinator's formulas.
package noderesource

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	"github.com/koord-project/koord/pkg/slo/config"
)

// Offer is what a node offers: CPU in milli-cores, memory in bytes.
type Offer struct {
	BatchMilliCPU, BatchMemory int64
	MidMilliCPU, MidMemory     int64
	// Reason says how it was derived (for logs).
	Reason string
}

// amounts is a CPU (milli-cores) and memory (bytes) pair.
type amounts struct{ cpu, mem int64 }

func (a amounts) add(b amounts) amounts { return amounts{a.cpu + b.cpu, a.mem + b.mem} }
func (a amounts) sub(b amounts) amounts { return amounts{a.cpu - b.cpu, a.mem - b.mem} }
func (a amounts) max(b amounts) amounts { return amounts{max(a.cpu, b.cpu), max(a.mem, b.mem)} }
func (a amounts) min(b amounts) amounts { return amounts{min(a.cpu, b.cpu), min(a.mem, b.mem)} }
func (a amounts) atLeastZero() amounts  { return a.max(amounts{}) }

// percentOf is v × percent / 100 rounded down, computed as Koordinator does
// (in float64), so that both offer the same byte.
func percentOf(v, percent int64) int64 { return int64(float64(v) * float64(percent) / 100) }

func amountsOf(l corev1.ResourceList) amounts {
	return amounts{l.Cpu().MilliValue(), l.Memory().Value()}
}

// Calculate derives a node's offer with Koordinator's formulas:
//
//	batch = capacity − safety margin − max(system usage, reserved) − Σ high-priority pods
//	mid   = min(prod reclaimable, capacity − node usage) + unallocated × midUnallocatedPercent
//
// The safety margin is capacity × (100 − reclaim threshold) %; reserved is
// what kubelet keeps off allocatable (capacity − allocatable). A
// high-priority pod (any band but batch and free, not BE) counts at its
// usage, its request or the larger (cpuCalculatePolicy,
// memoryCalculatePolicy); one not measured yet counts at its request, so a
// new service is never offered away. Pods the NodeMetric reports but the
// pod list lacks (just deleted, or not seen yet) count at their usage unless
// they are batch or free. Unallocated is capacity less reserved and prod
// pods' requests. Each is capped by batch*ThresholdPercent and
// mid*ThresholdPercent of capacity. A node whose NodeMetric is missing or
// older than the degrade time offers nothing: its slack is unknown; so does
// one that reports node or system usage below zero or beyond its capacity.
// A pod's or host application's figure beyond the node's capacity is
// dropped, and the offer never exceeds capacity.
func Calculate(node *corev1.Node, metric *slov1alpha1.NodeMetric, pods []*corev1.Pod, c config.Colocation, now time.Time) Offer {
	if metric == nil || metric.Status.UpdateTime == nil || metric.Status.NodeMetric == nil {
		return Offer{Reason: "degraded: no NodeMetric reported yet"}
	}
	if age := now.Sub(metric.Status.UpdateTime.Time); age > c.DegradeAfter() {
		return Offer{Reason: fmt.Sprintf("degraded: NodeMetric is %s old (degradeTimeMinutes %d)", age.Round(time.Second), c.DegradeTimeMinutes)}
	}
	capacity := amountsOf(node.Status.Capacity)
	if len(node.Status.Capacity) == 0 {
		capacity = amountsOf(node.Status.Allocatable)
	}
	reserved := capacity.sub(amountsOf(node.Status.Allocatable)).atLeastZero()
	if len(node.Status.Allocatable) == 0 {
		reserved = amounts{}
	}

	// The NodeMetric is the node's own account (its koordlet writes it):
	// figures the node cannot have are not measurements. A node that claims
	// impossible usage offers nothing; a pod's impossible figure is dropped
	// (the pod counts at its request, as if not measured yet).
	nm := metric.Status.NodeMetric
	for _, f := range []struct {
		field string
		usage corev1.ResourceList
	}{{"nodeUsage", nm.NodeUsage.ResourceList}, {"systemUsage", nm.SystemUsage.ResourceList}} {
		if why := beyond(f.usage, node); why != "" {
			return Offer{Reason: fmt.Sprintf("degraded: NodeMetric status.nodeMetric.%s %s: the node's slack is unknown", f.field, why)}
		}
	}
	usage := make(map[string]*slov1alpha1.PodMetricInfo, len(metric.Status.PodsMetric))
	var podsUsed amounts
	dropped := 0
	for _, pm := range metric.Status.PodsMetric {
		if pm == nil {
			continue
		}
		if beyond(pm.PodUsage.ResourceList, node) != "" {
			dropped++
			continue
		}
		usage[pm.Namespace+"/"+pm.Name] = pm
		podsUsed = podsUsed.add(amountsOf(pm.PodUsage.ResourceList))
	}

	var hpUsed, hpRequest, hpMaxUsedRequest, prodRequest amounts
	hp := 0
	for _, pod := range pods {
		if pod.Status.Phase != corev1.PodRunning && pod.Status.Phase != corev1.PodPending {
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		pm, measured := usage[key]
		delete(usage, key)
		band := extension.PodPriorityClass(pod.Spec.Priority)
		request := amountsOf(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
		if band != extension.PriorityMid && band != extension.PriorityBatch && band != extension.PriorityFree && !isBE(pod) {
			prodRequest = prodRequest.add(request)
		}
		if !highPriority(pod) {
			continue
		}
		hp++
		hpRequest = hpRequest.add(request)
		if !measured {
			hpUsed = hpUsed.add(request)
			hpMaxUsedRequest = hpMaxUsedRequest.add(request)
			continue
		}
		used := amountsOf(pm.PodUsage.ResourceList)
		if q, _ := extension.GetPodQoSClass(pod); q == extension.QoSLSE {
			// LSE pods own whole CPUs: their CPU is never reclaimed.
			used.cpu = request.cpu
		}
		hpUsed = hpUsed.add(used)
		hpMaxUsedRequest = hpMaxUsedRequest.add(used.max(request))
	}
	// Reported but not in the pod list: counted by the band the metric names.
	var dangling amounts
	for _, pm := range usage {
		if pm.Priority != extension.PriorityBatch && pm.Priority != extension.PriorityFree {
			dangling = dangling.add(amountsOf(pm.PodUsage.ResourceList))
		}
	}
	hpUsed = hpUsed.add(dangling)
	hpMaxUsedRequest = hpMaxUsedRequest.add(dangling)

	// The system's share: reported directly (with host applications above
	// the batch band, which run on the reserved share), else what the node
	// uses beyond its pods.
	system := amountsOf(nm.SystemUsage.ResourceList)
	if len(nm.SystemUsage.ResourceList) == 0 {
		system = amountsOf(nm.NodeUsage.ResourceList).sub(podsUsed).atLeastZero()
	}
	for _, app := range metric.Status.HostApplicationMetric {
		if app == nil || beyond(app.Usage.ResourceList, node) != "" {
			continue
		}
		if app.Priority != extension.PriorityBatch && app.Priority != extension.PriorityFree {
			system = system.add(amountsOf(app.Usage.ResourceList))
		}
	}
	systemOrReserved := system.max(reserved)

	margin := amounts{percentOf(capacity.cpu, 100-c.CPUReclaimThresholdPercent), percentOf(capacity.mem, 100-c.MemoryReclaimThresholdPercent)}
	base := capacity.sub(margin)
	byUsage := base.sub(systemOrReserved).sub(hpUsed).atLeastZero()
	byRequest := base.sub(reserved).sub(hpRequest).atLeastZero()
	byMax := base.sub(systemOrReserved).sub(hpMaxUsedRequest).atLeastZero()

	batch := byUsage
	cpuBy, memBy := "usage", "usage"
	if c.CPUCalculatePolicy == config.CalculateByPodMaxUsageRequest {
		batch.cpu, cpuBy = byMax.cpu, "max(usage, request)"
	}
	switch c.MemoryCalculatePolicy {
	case config.CalculateByPodRequest:
		batch.mem, memBy = byRequest.mem, "request"
	case config.CalculateByPodMaxUsageRequest:
		batch.mem, memBy = byMax.mem, "max(usage, request)"
	}
	if p := c.BatchCPUThresholdPercent; p != nil {
		batch.cpu = min(batch.cpu, percentOf(capacity.cpu, *p))
	}
	if p := c.BatchMemoryThresholdPercent; p != nil {
		batch.mem = min(batch.mem, percentOf(capacity.mem, *p))
	}

	batch = batch.min(capacity)
	dropNote := ""
	if dropped > 0 {
		dropNote = fmt.Sprintf("; %d pod figures beyond the node's capacity ignored", dropped)
	}

	mid, midReason := calculateMid(c, capacity, amountsOf(nm.NodeUsage.ResourceList), systemOrReserved, prodRequest, metric.Status.ProdReclaimableMetric)
	return Offer{
		BatchMilliCPU: batch.cpu, BatchMemory: batch.mem,
		MidMilliCPU: mid.cpu, MidMemory: mid.mem,
		Reason: fmt.Sprintf("batch cpu %dm = capacity %dm − margin %dm − max(system %dm, reserved %dm) − %d high-priority pods by %s; "+
			"batch memory %d = %d − %d − max(%d, %d) − pods by %s; %s",
			batch.cpu, capacity.cpu, margin.cpu, system.cpu, reserved.cpu, hp, cpuBy,
			batch.mem, capacity.mem, margin.mem, system.mem, reserved.mem, memBy, midReason) + dropNote,
	}
}

// beyond says why usage is not a figure node can have (negative, or more
// than its capacity of cpu or memory), "" when it can. It compares
// quantities, so that a value too large for int64 arithmetic is caught
// before any sum.
func beyond(usage corev1.ResourceList, node *corev1.Node) string {
	capacity := node.Status.Capacity
	if len(capacity) == 0 {
		capacity = node.Status.Allocatable
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := usage[r]
		if !ok {
			continue
		}
		if c := capacity[r]; q.Sign() < 0 || q.Cmp(c) > 0 {
			return fmt.Sprintf("%s %s is outside [0, capacity %s]", r, q.String(), c.String())
		}
	}
	return ""
}

// calculateMid is Koordinator's mid formula: in static mode a share of
// capacity; otherwise what prod pods are predicted not to use, bounded by
// what the node leaves unused, plus a share of what prod pods did not
// request. Either is capped at mid*ThresholdPercent of capacity.
func calculateMid(c config.Colocation, capacity, nodeUsed, systemOrReserved, prodRequest amounts, reclaimable *slov1alpha1.ReclaimableMetric) (amounts, string) {
	ceiling := amounts{percentOf(capacity.cpu, c.MidCPUThresholdPercent), percentOf(capacity.mem, c.MidMemoryThresholdPercent)}
	if c.MidReclaimMode == config.MidReclaimModeStatic {
		static := amounts{percentOf(capacity.cpu, c.MidStaticCPUReservedPercent), percentOf(capacity.mem, c.MidStaticMemoryReservedPercent)}
		mid := static.min(ceiling)
		return mid, fmt.Sprintf("mid cpu %dm, memory %d = static share of capacity", mid.cpu, mid.mem)
	}
	var prodReclaimable amounts
	if reclaimable != nil {
		prodReclaimable = amountsOf(reclaimable.Resource.ResourceList)
	}
	// A node that reports no usage leaves nothing known to be unused.
	var unused amounts
	if nodeUsed != (amounts{}) {
		unused = capacity.sub(nodeUsed)
	}
	unallocated := capacity.sub(systemOrReserved).sub(prodRequest).atLeastZero()
	mid := prodReclaimable.min(unused).atLeastZero().add(amounts{
		percentOf(unallocated.cpu, c.MidUnallocatedPercent), percentOf(unallocated.mem, c.MidUnallocatedPercent),
	}).min(ceiling)
	return mid, fmt.Sprintf("mid cpu %dm = min(prod reclaimable %dm, unused %dm) + unallocated %dm × %d%%; memory %d",
		mid.cpu, prodReclaimable.cpu, unused.cpu, unallocated.cpu, c.MidUnallocatedPercent, mid.mem)
}

func isBE(pod *corev1.Pod) bool {
	q, _ := extension.GetPodQoSClass(pod)
	return q == extension.QoSBE
}

func highPriority(pod *corev1.Pod) bool {
	switch extension.PodPriorityClass(pod.Spec.Priority) {
	case extension.PriorityBatch, extension.PriorityFree:
		return false
	}
	return !isBE(pod)
}
