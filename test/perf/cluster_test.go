package perf

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/schedtest"
	"github.com/koord-project/koord/internal/topologytest"
	koordclientset "github.com/koord-project/koord/pkg/client/clientset/versioned"
	"github.com/koord-project/koord/pkg/client/koordclient"
)

// size is one run's shape; every case of a run gets the same.
type size struct {
	nodes, warmupPods, measuredPods int
	// minMeasured is the fewest measured pods a case may run: a mix that
	// the nodes hold less of gets more nodes instead.
	minMeasured int
}

// clients talk to the API server fast enough that they are not what is measured.
func clients(cp *controlplane.ControlPlane) (kubernetes.Interface, koordclientset.Interface, error) {
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 5000, 10000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	koord, err := koordclient.New(cfg)
	return kube, koord, err
}

// parallel runs f(0..n-1) on 8 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var (
		next  atomic.Int64
		first error
		once  sync.Once
		wg    sync.WaitGroup
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func nodeName(i int) string { return fmt.Sprintf("perf-node-%04d", i) }

// buildNodes creates the nodes, each with 4 CPUs (one NUMA node, 2 cores × 2
// threads), 32 GiB and 110 pods, the six annotations a kubeadm node with a
// CSI driver and Calico carries, its numa-info ConfigMap as koordlet would
// publish it, and a fresh NodeMetric at 10–30 percent CPU.
func buildNodes(ctx context.Context, cp *controlplane.ControlPlane, n int) error {
	info := topologytest.Linux(1, 1, 2, 2, 32<<30)
	return parallel(n, func(i int) error {
		name := nodeName(i)
		spec := controlplane.NodeSpec{Name: name, CPU: "4", Memory: "32Gi", Pods: "110", Annotations: schedtest.NodeAnnotations(i)}
		if _, err := cp.CreateNode(ctx, spec); err != nil {
			return err
		}
		if err := cp.PublishNUMAInfo(ctx, name, info); err != nil {
			return err
		}
		usage := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(200+(i%5)*100), resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("6Gi"),
		}
		return cp.ReportNodeMetric(ctx, name, usage, time.Now())
	})
}

// buildReservations creates n Available reservations of 100m and 128Mi, one
// per node round robin, owned by the pods labelled app=reserved-<i>: what a
// Reservation placed earlier looks like to the scheduler.
func buildReservations(ctx context.Context, koord koordclientset.Interface, n, nodes int) error {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	return parallel(n, func(i int) error {
		r := &schedulingv1alpha1.Reservation{
			// Owners in each profile's namespace: open to every namespace.
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("perf-reservation-%05d", i),
				Annotations: map[string]string{extension.AnnotationReservationOwnersAnyNamespace: "true"}},
			Spec: schedulingv1alpha1.ReservationSpec{
				Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: req},
				}}}},
				Owners: []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("reserved-%d", i)}}}},
			},
		}
		created, err := koord.SchedulingV1alpha1().Reservations().Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Status = schedulingv1alpha1.ReservationStatus{Phase: schedulingv1alpha1.ReservationAvailable, NodeName: nodeName(i % nodes), Allocatable: req}
		_, err = koord.SchedulingV1alpha1().Reservations().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
}

// mix is a kind of workload: pod i of it, and how many of its pods the
// nodes hold under the shipped profile's limits.
type mix struct {
	name string
	pod  func(namespace string, i int) *corev1.Pod
	// perNode is how many pods of the mix a 4-CPU node takes before
	// LoadAwareScheduling (65 percent CPU, pods estimated at 85 percent of
	// their limit, NodeMetrics at up to 600m) turns pods away, with margin.
	perNode float64
	// unit, when set, is a number of pods the warm-up and the measured
	// phase must each be a multiple of (a gang never spans the two).
	unit int
	// setup, when set, makes the objects the mix's pods refer to, in
	// their namespace, before any pod is created.
	setup func(ctx context.Context, koord koordclientset.Interface, namespace string) error
}

// realistic is what every Koord plugin has work in: one pod in ten owns a
// reservation (the i/10-th), two in ten bind a whole CPU (NodeNUMAResource,
// SpreadByPCPUs), the rest are plain 50m pods. It averages 0.24 CPU a pod;
// 8.5 a node keep under LoadAwareScheduling with no Reservation plugin.
var realistic = mix{name: "realistic", perNode: 8.5, pod: func(namespace string, i int) *corev1.Pod {
	switch i % 10 {
	case 0:
		return newPod(namespace, i, "50m", map[string]string{"app": fmt.Sprintf("reserved-%d", i/10)}, nil)
	case 1, 2:
		return bindingPod(namespace, i)
	}
	return plainPod(namespace, i)
}}

// plain uses no Koord feature: 50m pods, no reservation, no binding.
var plain = mix{name: "plain", perNode: 30, pod: plainPod}

// gangSizes are the gangs of every 500 pods of the gang mix, 10 to 100
// members each.
var gangSizes = []int{10, 40, 100, 50, 20, 30, 100, 50, 100}

// gang is plain's pods in gangs (Koordinator's annotations, Strict):
// scheduled without Coscheduling, the same pods without gangs.
var gang = mix{name: "gang", perNode: 30, unit: 500, pod: func(namespace string, i int) *corev1.Pod {
	at, g := i%500, 0
	for at >= gangSizes[g] {
		at -= gangSizes[g]
		g++
	}
	return newPod(namespace, i, "50m", map[string]string{"app": "plain"}, map[string]string{
		extension.AnnotationGangName:   fmt.Sprintf("gang-%d-%d", i/500, g),
		extension.AnnotationGangMinNum: strconv.Itoa(gangSizes[g]),
	})
}}

// quotas is how many ElasticQuotas the quota mix's pods are spread over.
const quotas = 20

// quotaMix is plain's pods charged to 20 ElasticQuotas in turn (by label),
// each with a min of a twentieth of the cluster's CPUs and a max of all
// of them: every pod is checked against its quota's runtime, none refused.
// Scheduled without ElasticQuota, the same pods without quotas.
var quotaMix = mix{name: "quota", perNode: 30, pod: func(namespace string, i int) *corev1.Pod {
	return newPod(namespace, i, "50m", map[string]string{"app": "plain", extension.LabelQuotaName: fmt.Sprintf("q-%02d", i%quotas)}, nil)
}, setup: func(ctx context.Context, koord koordclientset.Interface, namespace string) error {
	return parallel(quotas, func(i int) error {
		_, err := koord.SchedulingSigsV1alpha1().ElasticQuotas(namespace).Create(ctx, &schedulingsigsv1alpha1.ElasticQuota{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q-%02d", i)},
			Spec: schedulingsigsv1alpha1.ElasticQuotaSpec{
				Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
				Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000")},
			},
		}, metav1.CreateOptions{})
		return err
	})
}}

// binding pods each bind one whole CPU: two fit any 4-CPU node by load; at
// 1.5 a node, the last pods still find room without searching every node.
var binding = mix{name: "binding", perNode: 1.5, pod: bindingPod}

func plainPod(namespace string, i int) *corev1.Pod {
	return newPod(namespace, i, "50m", map[string]string{"app": "plain"}, nil)
}

func bindingPod(namespace string, i int) *corev1.Pod {
	return newPod(namespace, i, "1", map[string]string{"app": "plain", extension.LabelPodQoS: string(extension.QoSLS)},
		map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy":"SpreadByPCPUs"}`})
}

func newPod(namespace string, i int, cpu string, labels, annotations map[string]string) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("128Mi")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("pod-%05d", i), Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			SchedulerName: "koord-scheduler",
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}},
		},
	}
}

// sized fits sz to what the nodes hold of this mix: the cluster grows until
// it holds the warm-up and at least minMeasured measured pods (the binding
// mix, 1.5 pods a node, would otherwise measure a few seconds), then warm-up
// and measured pods shrink in proportion when they would not all fit.
func (m *mix) sized(sz size) size {
	if need := int(math.Ceil(float64(sz.warmupPods+min(sz.minMeasured, sz.measuredPods)) / m.perNode)); need > sz.nodes {
		sz.nodes = need
	}
	room := int(m.perNode * float64(sz.nodes))
	if total := sz.warmupPods + sz.measuredPods; total > room {
		sz.warmupPods = sz.warmupPods * room / total
		sz.measuredPods = room - sz.warmupPods
	}
	if m.unit > 0 {
		sz.warmupPods = max(m.unit, sz.warmupPods/m.unit*m.unit)
		sz.measuredPods = max(m.unit, sz.measuredPods/m.unit*m.unit)
	}
	return sz
}

// boundCounter counts pods as the API server reports them bound.
type boundCounter struct {
	bound atomic.Int64
	seen  sync.Map // pod UID → struct{}
	// last is when the latest pod was counted (UnixNano): the measured phase
	// ends then, not at the next tick of the loop that watches the count.
	last atomic.Int64
}

func watchBound(ctx context.Context, kube kubernetes.Interface, namespace string) (*boundCounter, error) {
	c := &boundCounter{}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace))
	informer := factory.Core().V1().Pods().Informer()
	count := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			if _, dup := c.seen.LoadOrStore(p.UID, struct{}{}); !dup {
				c.last.Store(time.Now().UnixNano())
				c.bound.Add(1)
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: count, UpdateFunc: func(_, obj any) { count(obj) }}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("pod informer did not sync")
	}
	return c, nil
}

// createPods creates pods [from, to) of m.
func createPods(ctx context.Context, kube kubernetes.Interface, namespace string, m *mix, from, to int) error {
	return parallel(to-from, func(i int) error {
		_, err := kube.CoreV1().Pods(namespace).Create(ctx, m.pod(namespace, from+i), metav1.CreateOptions{})
		return err
	})
}

// unscheduled describes up to five pods of namespace not bound, with why.
func unscheduled(ctx context.Context, kube kubernetes.Interface, namespace string) string {
	pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out string
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			continue
		}
		n++
		if n <= 5 {
			out += fmt.Sprintf("\n  %s: %s", p.Name, controlplane.PodUnschedulableMessage(&p))
		}
	}
	return fmt.Sprintf("%d pods unscheduled%s", n, out)
}
