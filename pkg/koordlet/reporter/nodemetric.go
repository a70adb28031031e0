package reporter

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	slov1alpha1 "github.com/koord-project/koord/apis/slo/v1alpha1"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	"github.com/koord-project/koord/pkg/koordlet/usage"
)

// Policy is a NodeMetric's collect policy with Koordinator's defaults filled in.
type Policy struct {
	Aggregate time.Duration // window of nodeUsage and each pod's usage
	Report    time.Duration // how often status is written
	Windows   []time.Duration
}

// PolicyOf reads a NodeMetric's spec; what it leaves out (all of it for a
// nil NodeMetric) takes the API's defaults.
func PolicyOf(nm *slov1alpha1.NodeMetric) Policy {
	var cp *slov1alpha1.NodeMetricCollectPolicy
	if nm != nil {
		cp = nm.Spec.CollectPolicy
	}
	return Policy{Aggregate: cp.AggregateDuration(), Report: cp.ReportInterval(), Windows: cp.AggregateWindows()}
}

func resourceMap(cores, bytes float64) slov1alpha1.ResourceMap {
	return slov1alpha1.ResourceMap{ResourceList: corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(cores*1000+0.5), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(bytes), resource.BinarySI),
	}}
}

// NodeMetricStatus summarises the collector's histories as of now. Pods
// without samples yet are left out; systemUsage is the node's usage not
// accounted to any pod.
func NodeMetricStatus(now time.Time, c *usage.Collector, pods []*corev1.Pod, p Policy) (*slov1alpha1.NodeMetricStatus, bool) {
	cpu, mem, ok := c.NodeUsage(now.Add(-p.Aggregate))
	if !ok {
		return nil, false
	}
	info := &slov1alpha1.NodeMetricInfo{NodeUsage: resourceMap(cpu.Avg, mem.Avg)}
	for _, w := range p.Windows {
		wc, wm, ok := c.NodeUsage(now.Add(-w))
		if !ok {
			continue
		}
		info.AggregatedNodeUsages = append(info.AggregatedNodeUsages, slov1alpha1.AggregatedUsage{
			Duration: metav1.Duration{Duration: w},
			Usage: map[slov1alpha1.AggregationType]slov1alpha1.ResourceMap{
				slov1alpha1.AVG: resourceMap(wc.Avg, wm.Avg), slov1alpha1.P50: resourceMap(wc.P50, wm.P50),
				slov1alpha1.P90: resourceMap(wc.P90, wm.P90), slov1alpha1.P95: resourceMap(wc.P95, wm.P95), slov1alpha1.P99: resourceMap(wc.P99, wm.P99),
			},
		})
	}
	numa := c.NUMAUsage(now.Add(-p.Aggregate))
	ids := make([]int, 0, len(numa))
	for id := range numa {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		info.NUMAUsages = append(info.NUMAUsages, slov1alpha1.NUMANodeUsage{NUMANodeID: int32(id), NodeUsage: resourceMap(numa[id][0].Avg, numa[id][1].Avg)})
	}
	st := &slov1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: now}, NodeMetric: info, PodsMetric: []*slov1alpha1.PodMetricInfo{}}
	var podCPU, podMem float64
	for _, pod := range pods {
		pc, pm, ok := c.PodUsage(pod.UID, now.Add(-p.Aggregate))
		if !ok {
			continue
		}
		podCPU, podMem = podCPU+pc, podMem+pm
		qos, _ := extension.GetPodQoSClass(pod)
		info := &slov1alpha1.PodMetricInfo{
			Namespace: pod.Namespace, Name: pod.Name, PodUsage: resourceMap(pc, pm),
			Priority: extension.PodPriorityClass(pod.Spec.Priority), QoS: qos,
		}
		// Containers over the report interval, not the aggregation window:
		// each report is then one fresh sample for the recommender.
		for _, cw := range c.PodContainers(pod.UID, now.Add(-p.Report)) {
			info.ContainersMetric = append(info.ContainersMetric, slov1alpha1.ContainerMetricInfo{Name: cw.Name, ContainerUsage: resourceMap(cw.CPU, cw.Memory)})
		}
		st.PodsMetric = append(st.PodsMetric, info)
	}
	info.SystemUsage = resourceMap(max(cpu.Avg-podCPU, 0), max(mem.Avg-podMem, 0))
	return st, true
}

// PublishNodeMetric writes status to the NodeMetric named after the node.
// koord-manager creates that object, with the policy koordlet follows
// (build is given it); koordlet only writes the status, so until the object
// exists there is nothing to write and the error says so. It returns the
// policy, for the caller to time the next report, and whether it wrote (not
// before there are samples to report).
func PublishNodeMetric(ctx context.Context, client koordclientset.Interface, node *corev1.Node, build func(Policy) (*slov1alpha1.NodeMetricStatus, bool)) (Policy, bool, error) {
	nms := client.SloV1alpha1().NodeMetrics()
	nm, err := nms.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return PolicyOf(nil), false, fmt.Errorf("nodemetric %s not found: koord-manager creates it (is koord-manager running?)", node.Name)
	}
	if err != nil {
		return PolicyOf(nil), false, fmt.Errorf("nodemetric %s: %w", node.Name, err)
	}
	policy := PolicyOf(nm)
	status, ok := build(policy)
	if !ok {
		return policy, false, nil
	}
	nm.Status = *status
	if _, err := nms.UpdateStatus(ctx, nm, metav1.UpdateOptions{}); err != nil {
		return policy, false, fmt.Errorf("nodemetric %s status: %w", node.Name, err)
	}
	return policy, true, nil
}
