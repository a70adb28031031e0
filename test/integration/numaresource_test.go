package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	nrtv1alpha2 "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/apis/topology/v1alpha2"
	nrtclientset "github.com/k8stopologyawareschedwg/noderesourcetopology-api/pkg/generated/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/controlplane"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/manifests"
	"github.com/koord-project/koord/pkg/client/koordclient"
	"github.com/koord-project/koord/pkg/plugins/numaresource"
)

// numaNode creates a node of the given shape and publishes its topology as
// koordlet would. It returns the topology, to check what pods were given.
func numaNode(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name string, info *extension.NUMAInfo, labels map[string]string) *numaresource.Topology {
	t.Helper()
	cpus := len(info.CPUTopology.Detail)
	var mem int64
	for _, n := range info.NUMANodes {
		mem += n.MemoryBytes
	}
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: name, CPU: fmt.Sprint(cpus), Memory: fmt.Sprint(mem), Pods: "250", Labels: labels}); err != nil {
		t.Fatal(err)
	}
	if err := cp.PublishNUMAInfo(ctx, name, info); err != nil {
		t.Fatal(err)
	}
	topo, err := numaresource.NewTopology(info.CPUTopology)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// startNUMAControlPlane is a control plane with Koord's PriorityClasses.
func startNUMAControlPlane(t *testing.T, ctx context.Context) *controlplane.ControlPlane {
	t.Helper()
	cp := startControlPlane(t, controlplane.Options{})
	if err := cp.Apply(ctx, manifests.PriorityClasses); err != nil {
		t.Fatal(err)
	}
	return cp
}

// lsrPod is a prod LSR pod with whole CPUs: it binds with FullPCPUs.
func lsrPod(name, cpu string, annotations map[string]string) controlplane.PodSpec {
	return controlplane.PodSpec{Name: name, SchedulerName: "koord-scheduler", CPU: cpu, Memory: "1Gi", Guaranteed: true,
		Labels: map[string]string{extension.LabelPodQoS: "LSR"}, Annotations: annotations, PriorityClassName: string(extension.PriorityProd)}
}

// checkCPUs asserts that no CPU of a node is held by two pods and that each
// pod holds whole cores of one NUMA node (when onePerNUMA). It returns the
// CPUs held per node.
func checkCPUs(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, topos map[string]*numaresource.Topology, onePerNUMA bool) map[string]cpuset.CPUSet {
	t.Helper()
	pods, err := cp.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]map[int]string{}
	held := map[string]cpuset.CPUSet{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		st, err := extension.GetResourceStatus(p.Annotations)
		if err != nil {
			t.Errorf("pod %s: %v", p.Name, err)
			continue
		}
		cpus := st.CPUs()
		topo := topos[p.Spec.NodeName]
		if cpus.IsEmpty() || topo == nil {
			t.Errorf("bound pod %s on %s has no cpuset (%q)", p.Name, p.Spec.NodeName, p.Annotations[extension.AnnotationResourceStatus])
			continue
		}
		if !topo.CoresOf(cpus).Equals(cpus) {
			t.Errorf("pod %s holds %s: not whole cores", p.Name, cpus)
		}
		numa := map[int]bool{}
		for _, c := range cpus.List() {
			numa[topo.NUMANodeOf(c)] = true
			if owner[p.Spec.NodeName] == nil {
				owner[p.Spec.NodeName] = map[int]string{}
			}
			if other, ok := owner[p.Spec.NodeName][c]; ok {
				t.Errorf("CPU %d of %s is held by %s and %s", c, p.Spec.NodeName, other, p.Name)
			}
			owner[p.Spec.NodeName][c] = p.Name
		}
		if onePerNUMA && len(numa) != 1 {
			t.Errorf("pod %s holds %s across NUMA nodes %v", p.Name, cpus, numa)
		}
		held[p.Spec.NodeName] = held[p.Spec.NodeName].Union(cpus)
	}
	return held
}

// bindingWrites records, per pod of namespace default, how many writes it
// saw before the one that bound it, and the pod as first seen bound.
type bindingWrites struct {
	mu     sync.Mutex
	before map[string]int
	bound  map[string]*corev1.Pod
}

func watchBindingWrites(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane) *bindingWrites {
	t.Helper()
	w, err := cp.Client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	b := &bindingWrites{before: map[string]int{}, bound: map[string]*corev1.Pod{}}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			b.mu.Lock()
			switch {
			case b.bound[p.Name] != nil:
			case p.Spec.NodeName != "":
				b.bound[p.Name] = p
			case ev.Type == "MODIFIED":
				b.before[p.Name]++
			}
			b.mu.Unlock()
		}
	}()
	return b
}

// check asserts that pod name was first seen bound with annotation key,
// after writes writes (-1: any number) since it was created.
func (b *bindingWrites) check(t *testing.T, name, key string, writes int) {
	t.Helper()
	var p *corev1.Pod
	_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		p = b.bound[name]
		return p != nil, nil
	})
	if p == nil {
		t.Fatalf("pod %s never seen bound", name)
	}
	b.mu.Lock()
	n := b.before[name]
	b.mu.Unlock()
	if p.Annotations[key] == "" {
		t.Errorf("pod %s was bound without %s", name, key)
	}
	if writes >= 0 && n != writes {
		t.Errorf("pod %s: %d writes before the binding, want %d", name, n, writes)
	}
}

func waitBound(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := cp.WaitForPodBound(ctx, "default", n, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

func waitUnschedulable(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, name, want string) {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was bound to %s", name, p.Spec.NodeName)
		}
		msg = controlplane.PodUnschedulableMessage(p)
		return strings.Contains(msg, want), nil
	})
	if err != nil {
		t.Fatalf("pod %s: want unschedulable with %q, last message %q: %v", name, want, msg, err)
	}
}

// Sixteen 2-CPU LSR pods on two 2 NUMA × 8 cores × 2 threads nodes, with the
// shipped scheduler config: pairwise disjoint whole cores within one NUMA
// node each; what cannot fit, or is malformed, waits with a clear reason.
func TestNUMABindsDisjointWholeCores(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	topos := map[string]*numaresource.Topology{}
	for _, n := range []string{"numa-a", "numa-b"} {
		topos[n] = numaNode(t, ctx, cp, n, topologytest.Linux(1, 2, 8, 2, 32<<30), nil)
	}
	startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	writes := watchBindingWrites(t, ctx, cp)

	// Larger than any NUMA node (16 CPUs), though the nodes have 32 free:
	// pending, and the reason says why.
	single := map[string]string{extension.AnnotationNUMATopologySpec: `{"numaTopologyPolicy":"SingleNUMANode"}`}
	if _, err := cp.CreatePod(ctx, lsrPod("too-big", "18", single)); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "too-big", "no NUMA node has 9 free whole cores (the most any has is 8)")
	var names []string
	for i := 0; i < 16; i++ {
		name := fmt.Sprintf("lsr-%d", i)
		if _, err := cp.CreatePod(ctx, lsrPod(name, "2", nil)); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	waitBound(t, ctx, cp, names...)
	// The CPUs ride on the Binding: created, then bound with them in one
	// write (a PreBind patch would be one more, and kube-scheduler's
	// nominatedNodeName another).
	for _, name := range names {
		writes.check(t, name, extension.AnnotationResourceStatus, 0)
	}
	held := checkCPUs(t, ctx, cp, topos, true)
	if n := held["numa-a"].Size() + held["numa-b"].Size(); n != 32 {
		t.Errorf("%d CPUs held, want 32", n)
	}

	// A malformed annotation names the key.
	if _, err := cp.CreatePod(ctx, lsrPod("malformed", "2", map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy":`})); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "malformed", "annotation scheduling.koordinator.sh/resource-spec")
	// A fractional request with a bind policy is unresolvable, with a message.
	if _, err := cp.CreatePod(ctx, lsrPod("fractional", "1500m", map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy":"FullPCPUs"}`})); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "fractional", "needs a whole number of CPUs")
}

// defaultBinderFirst is the shipped profile without its bind list and
// without Reservation (which must bind first wherever it runs):
// DefaultBinder binds, so NodeNUMAResource writes the CPUs in PreBind.
func defaultBinderFirst(t *testing.T) []byte {
	t.Helper()
	config := string(manifests.SchedulerConfig)
	for _, block := range []string{
		"      bind:\n        enabled:\n          - name: Reservation\n          - name: NodeNUMAResource\n",
		"          - name: Reservation\n            # Koordinator's weight: an owner goes to the node holding its\n            # reservation even where other plugins score another node higher.\n            weight: 5000\n",
	} {
		if !strings.Contains(config, block) {
			t.Fatalf("the shipped config lacks %q", block)
		}
		config = strings.Replace(config, block, "", 1)
	}
	return []byte(config)
}

// Binding pods wait for a node's topology and for freed CPUs; pods that bind
// nothing do not care about topology; a malformed ConfigMap is named. The
// profile binds with DefaultBinder, so the CPUs are patched on in PreBind:
// still there when the pod is first seen bound.
func TestNUMATopologyAndDeletion(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	small := topologytest.Linux(1, 1, 2, 2, 8<<30) // 4 CPUs, 2 cores
	n1, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "n1", CPU: "4", Memory: "8Gi"})
	if err != nil {
		t.Fatal(err)
	}
	broken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "n1-numa-info",
		Labels:          map[string]string{extension.LabelManagedBy: extension.ManagedByKoordlet},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: n1.UID}}},
		Data: map[string]string{"cpu-topology": `{"detail":[]}`, "numa-nodes": `[]`}}
	if _, err := cp.Client.CoreV1().ConfigMaps("kube-system").Create(ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startScheduler(t, ctx, cp, defaultBinderFirst(t))
	writes := watchBindingWrites(t, ctx, cp)

	if _, err := cp.CreatePod(ctx, lsrPod("a", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "a", "configmap kube-system/n1-numa-info key cpu-topology: detail lists no CPUs")
	// A pod that binds nothing is placed regardless.
	if _, err := cp.CreatePod(ctx, controlplane.PodSpec{Name: "plain", SchedulerName: "koord-scheduler", Memory: "100Mi"}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, cp, "plain")

	// koordlet fixes the ConfigMap: the waiting pod is placed without any other event.
	if err := cp.PublishNUMAInfo(ctx, "n1", small); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, cp, "a")
	if _, err := cp.CreatePod(ctx, lsrPod("b", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, cp, "b")
	writes.check(t, "b", extension.AnnotationResourceStatus, -1)
	writes.mu.Lock()
	if writes.before["b"] == 0 {
		t.Errorf("pod b was bound with no write before: did DefaultBinder carry the CPUs?")
	}
	writes.mu.Unlock()
	if _, err := cp.CreatePod(ctx, lsrPod("c", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "c", "0/1 nodes are available")
	// Deleting a pod frees its CPUs for the waiting one.
	a, _ := cp.Client.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{})
	if err := cp.Client.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	c, err := cp.WaitForPodBound(ctx, "default", "c", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.Annotations[extension.AnnotationResourceStatus] == "" || c.Annotations[extension.AnnotationResourceStatus] != a.Annotations[extension.AnnotationResourceStatus] {
		t.Errorf("c got %q, want the CPUs a freed: %q", c.Annotations[extension.AnnotationResourceStatus], a.Annotations[extension.AnnotationResourceStatus])
	}
}

// A stream of 200 binding pods, with koord-scheduler restarted halfway: the
// new scheduler rebuilds what is held from the pods and no CPU is ever held
// twice.
func TestNUMARestartNeverDoubleAllocates(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	topos := map[string]*numaresource.Topology{}
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("big-%d", i)
		topos[name] = numaNode(t, ctx, cp, name, topologytest.Linux(2, 2, 16, 2, 64<<30), nil)
	}
	sched := startScheduler(t, ctx, cp, manifests.SchedulerConfig)

	const total = 200
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < total; i += 4 {
				if _, err := cp.CreatePod(ctx, lsrPod(fmt.Sprintf("stream-%03d", i), "2", nil)); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	bound := func() int {
		counts, err := cp.PodsByNode(ctx, "koord-scheduler")
		if err != nil {
			return 0
		}
		n := 0
		for _, c := range counts {
			n += c
		}
		return n
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return bound() >= total/2, nil
	}); err != nil {
		t.Fatalf("half the pods were not bound: %v", err)
	}
	sched.Stop()
	t.Logf("restarting koord-scheduler with %d of %d pods bound", bound(), total)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	restarted := startScheduler(t, ctx, cp, manifests.SchedulerConfig)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		return bound() == total, restarted.Err()
	}); err != nil {
		t.Fatalf("%d of %d pods bound after the restart: %v", bound(), total, err)
	}
	held := checkCPUs(t, ctx, cp, topos, true)
	n := 0
	for _, h := range held {
		n += h.Size()
	}
	if n != 2*total {
		t.Errorf("%d CPUs held by %d pods, want %d", n, total, 2*total)
	}
}

// nrtConfig is the shipped profile reading topology from NodeResourceTopology objects.
var nrtConfig = []byte(strings.Replace(string(manifests.SchedulerConfig), "topologySource: ConfigMap", "topologySource: NodeResourceTopology", 1))

// With topologySource NodeResourceTopology the plugin reads Koordinator's
// NRT objects (annotations for CPUs, zones for NUMA memory) instead of
// ConfigMaps, with the same results and the same care for bad input.
func TestNUMAFromNodeResourceTopology(t *testing.T) {
	ctx := testContext(t)
	cp := startNUMAControlPlane(t, ctx)
	if err := cp.InstallCRDs(ctx, manifests.ThirdPartyCRDs); err != nil {
		t.Fatal(err)
	}
	nrtClient, err := nrtclientset.NewForConfig(koordclient.JSON(cp.Config))
	if err != nil {
		t.Fatal(err)
	}
	info := topologytest.Linux(1, 2, 8, 2, 32<<30)
	if _, err := cp.CreateNode(ctx, controlplane.NodeSpec{Name: "nrt-a", CPU: "32", Memory: "64Gi"}); err != nil {
		t.Fatal(err)
	}
	data, err := info.ConfigMapData()
	if err != nil {
		t.Fatal(err)
	}
	nrt := &nrtv1alpha2.NodeResourceTopology{ObjectMeta: metav1.ObjectMeta{Name: "nrt-a", Annotations: map[string]string{}}}
	for key, annotation := range extension.NUMAInfoAnnotations {
		nrt.Annotations[annotation] = data[key]
	}
	for _, n := range info.NUMANodes {
		mem := *resource.NewQuantity(n.MemoryBytes, resource.BinarySI)
		nrt.Zones = append(nrt.Zones, nrtv1alpha2.Zone{Name: fmt.Sprintf("node-%d", n.ID), Type: "Node",
			Resources: nrtv1alpha2.ResourceInfoList{{Name: "memory", Capacity: mem, Allocatable: mem, Available: mem}}})
	}
	// Malformed first: binding pods wait, and the reason names the annotation.
	good := nrt.Annotations[extension.NUMAInfoAnnotations[extension.NUMAInfoKeyCPUTopology]]
	nrt.Annotations[extension.NUMAInfoAnnotations[extension.NUMAInfoKeyCPUTopology]] = `{"detail":`
	created, err := nrtClient.TopologyV1alpha2().NodeResourceTopologies().Create(ctx, nrt, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := numaresource.NewTopology(info.CPUTopology)
	if err != nil {
		t.Fatal(err)
	}
	startScheduler(t, ctx, cp, nrtConfig)
	if _, err := cp.CreatePod(ctx, lsrPod("lsr-0", "2", nil)); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(t, ctx, cp, "lsr-0", "noderesourcetopology nrt-a annotation node.koordinator.sh/cpu-topology")

	created.Annotations[extension.NUMAInfoAnnotations[extension.NUMAInfoKeyCPUTopology]] = good
	if _, err := nrtClient.TopologyV1alpha2().NodeResourceTopologies().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := []string{"lsr-0"}
	for i := 1; i < 8; i++ {
		names = append(names, fmt.Sprintf("lsr-%d", i))
		if _, err := cp.CreatePod(ctx, lsrPod(names[i], "2", nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitBound(t, ctx, cp, names...)
	held := checkCPUs(t, ctx, cp, map[string]*numaresource.Topology{"nrt-a": topo}, true)
	if held["nrt-a"].Size() != 16 {
		t.Errorf("%d CPUs held, want 16", held["nrt-a"].Size())
	}
}
