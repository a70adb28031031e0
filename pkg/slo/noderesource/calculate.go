// Package noderesource is koord-manager's batch resource controller: it turns
// each node's measured slack into kubernetes.io/batch-cpu and
// kubernetes.io/batch-memory on the Node's status, which BE pods request.
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

// Batch is what a node offers batch pods: CPU in milli-cores, memory in bytes.
type Batch struct {
	MilliCPU    int64
	MemoryBytes int64
	// Reason says how it was derived (for logs and the Node event).
	Reason string
}

// Calculate derives a node's batch resources:
//
//	batch = allocatable × reclaim% − system usage − Σ high-priority pods' usage
//
// where a high-priority pod is any pod outside the batch and free priority
// bands that is not BE; a pod the NodeMetric does not (yet) report counts at
// its request, so a new service is never offered away before it is measured.
// A node whose NodeMetric is missing or older than the degrade time offers
// nothing: its slack is unknown.
func Calculate(node *corev1.Node, metric *slov1alpha1.NodeMetric, pods []*corev1.Pod, c config.Colocation, now time.Time) Batch {
	if metric == nil || metric.Status.UpdateTime == nil || metric.Status.NodeMetric == nil {
		return Batch{Reason: "degraded: no NodeMetric reported yet"}
	}
	if age := now.Sub(metric.Status.UpdateTime.Time); age > c.DegradeAfter() {
		return Batch{Reason: fmt.Sprintf("degraded: NodeMetric is %s old (degradeTimeMinutes %d)", age.Round(time.Second), c.DegradeTimeMinutes)}
	}
	usage := make(map[string]corev1.ResourceList, len(metric.Status.PodsMetric))
	var podsCPU, podsMem int64
	for _, pm := range metric.Status.PodsMetric {
		if pm == nil {
			continue
		}
		usage[pm.Namespace+"/"+pm.Name] = pm.PodUsage.ResourceList
		podsCPU += pm.PodUsage.Cpu().MilliValue()
		podsMem += pm.PodUsage.Memory().Value()
	}
	// The system's share: reported directly, else what the node uses beyond its pods.
	sys := metric.Status.NodeMetric.SystemUsage.ResourceList
	sysCPU, sysMem := sys.Cpu().MilliValue(), sys.Memory().Value()
	if len(sys) == 0 {
		nu := metric.Status.NodeMetric.NodeUsage.ResourceList
		sysCPU = max(nu.Cpu().MilliValue()-podsCPU, 0)
		sysMem = max(nu.Memory().Value()-podsMem, 0)
	}
	var hpCPU, hpMem int64
	hp := 0
	for _, pod := range pods {
		if !highPriority(pod) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		hp++
		if u, ok := usage[pod.Namespace+"/"+pod.Name]; ok {
			hpCPU += u.Cpu().MilliValue()
			hpMem += u.Memory().Value()
			continue
		}
		req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		hpCPU += req.Cpu().MilliValue()
		hpMem += req.Memory().Value()
	}
	alloc := node.Status.Allocatable
	cpu := alloc.Cpu().MilliValue()*c.CPUReclaimThresholdPercent/100 - sysCPU - hpCPU
	mem := alloc.Memory().Value()/100*c.MemoryReclaimThresholdPercent - sysMem - hpMem
	return Batch{
		MilliCPU:    max(cpu, 0),
		MemoryBytes: max(mem, 0),
		Reason: fmt.Sprintf("allocatable cpu %dm × %d%% − system %dm − %d high-priority pods %dm; memory %d × %d%% − %d − %d",
			alloc.Cpu().MilliValue(), c.CPUReclaimThresholdPercent, sysCPU, hp, hpCPU,
			alloc.Memory().Value(), c.MemoryReclaimThresholdPercent, sysMem, hpMem),
	}
}

func highPriority(pod *corev1.Pod) bool {
	switch extension.PodPriorityClass(pod.Spec.Priority) {
	case extension.PriorityBatch, extension.PriorityFree:
		return false
	}
	q, _ := extension.GetPodQoSClass(pod)
	return q != extension.QoSBE
}
