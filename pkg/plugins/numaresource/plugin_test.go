package numaresource

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/cpuset"
	"k8s.io/utils/ptr"

	"github.com/koord-project/koord/apis/config"
	configv1 "github.com/koord-project/koord/apis/config/v1"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/internal/topologytest"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

const gi = int64(1) << 30

func defaultArgs(t testing.TB, mutate func(*configv1.NodeNUMAResourceArgs)) *config.NodeNUMAResourceArgs {
	v1 := &configv1.NodeNUMAResourceArgs{}
	if mutate != nil {
		mutate(v1)
	}
	configv1.SetDefaults_NodeNUMAResourceArgs(v1)
	out := &config.NodeNUMAResourceArgs{}
	if err := configv1.Convert_v1_NodeNUMAResourceArgs_To_config_NodeNUMAResourceArgs(v1, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// testHandle gives the plugin a node snapshot, a fake client and bind list
// for PreBind and Bind, an event recorder and a record of activated pods.
type testHandle struct {
	frameworkexttest.Handle
	snapshot *schedcache.Snapshot
	rec      *events.FakeRecorder
}

func (h *testHandle) SnapshotSharedLister() fwk.SharedLister    { return h.snapshot }
func (h *testHandle) EventRecorder() events.EventRecorderLogger { return h.rec }

type fixture struct {
	t     testing.TB
	p     *Plugin
	h     *testHandle
	nodes map[string]*corev1.Node
	// holds, when set, stands in for the Reservation plugin's PreFilter.
	holds frameworkext.Holds
}

// newFixture builds the plugin over nodes; each node with a topology gets it
// as koordlet would publish it.
func newFixture(t testing.TB, args *config.NodeNUMAResourceArgs, nodes ...*corev1.Node) *fixture {
	h := &testHandle{Handle: frameworkexttest.Handle{Client: fake.NewClientset()}, snapshot: schedcache.NewSnapshot(nil, nodes), rec: events.NewFakeRecorder(100)}
	ext := frameworkext.NewExtender()
	ext.AddProfile("") // the test pods' schedulerName
	f := &fixture{t: t, p: newPlugin(args, h, ext), h: h, nodes: map[string]*corev1.Node{}}
	f.p.ready.Store(true)
	for _, n := range nodes {
		f.nodes[n.Name] = n
		f.p.onNode(n) // as the Node informer delivers it
	}
	return f
}

func (f *fixture) publish(node string, info *extension.NUMAInfo) {
	cm, err := extension.NewNUMAInfoConfigMap(node, info)
	if err != nil {
		f.t.Fatal(err)
	}
	cm.OwnerReferences = nodeOwner(node)
	f.p.onConfigMap(klog.Background(), node, cm)
}

// nodeOwner is the owner reference koordlet puts on a node's numa-info.
func nodeOwner(node string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID("uid-" + node)}}
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// lsr is a prod LSR pod (Guaranteed) asking for cpu and memory.
func lsr(name, cpu, mem string, annotations map[string]string) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if mem != "" {
		res[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name),
			Labels: map[string]string{extension.LabelPodQoS: "LSR"}, Annotations: annotations},
		Spec: corev1.PodSpec{Priority: ptr.To[int32](9000),
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
}

func withPriority(p *corev1.Pod, prio int32) *corev1.Pod { p.Spec.Priority = &prio; return p }

func withQoS(p *corev1.Pod, q string) *corev1.Pod { p.Labels[extension.LabelPodQoS] = q; return p }

// cycle runs PreFilter and Filter on every node; it returns the PreFilter
// status (nil unless it failed or skipped) and each node's Filter status.
func (f *fixture) cycle(pod *corev1.Pod) (fwk.CycleState, *fwk.Status, map[string]*fwk.Status) {
	cs := framework.NewCycleState()
	if f.holds != nil {
		cs.Write(frameworkext.HoldsStateKey, f.holds)
	}
	_, st := f.p.PreFilter(context.Background(), cs, pod, nil)
	if !st.IsSuccess() {
		return cs, st, nil
	}
	out := map[string]*fwk.Status{}
	for name, n := range f.nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		out[name] = f.p.Filter(context.Background(), cs, pod, ni)
	}
	return cs, nil, out
}

// schedule places pod on the node: Filter, Reserve, PreBind. It returns the
// resource-status PreBind wrote.
func (f *fixture) schedule(pod *corev1.Pod, nodeName string) (*extension.ResourceStatus, error) {
	ctx := context.Background()
	if _, err := f.h.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	cs, st, filtered := f.cycle(pod)
	if st != nil {
		return nil, st.AsError()
	}
	if s := filtered[nodeName]; !s.IsSuccess() {
		return nil, s.AsError()
	}
	if s := f.p.Reserve(ctx, cs, pod, nodeName); !s.IsSuccess() {
		return nil, s.AsError()
	}
	if _, s := f.p.PreBindPreFlight(ctx, cs, pod, nodeName); s.IsSkip() {
		return &extension.ResourceStatus{}, nil
	}
	if s := f.p.PreBind(ctx, cs, pod, nodeName); !s.IsSuccess() {
		return nil, s.AsError()
	}
	got, err := f.h.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	// The informer would now deliver the bound pod.
	got.Spec.NodeName = nodeName
	if err := f.p.state.ObservePod(got); err != nil {
		return nil, err
	}
	return extension.GetResourceStatus(got.Annotations)
}

func mustSchedule(t *testing.T, f *fixture, pod *corev1.Pod, node string) *extension.ResourceStatus {
	t.Helper()
	st, err := f.schedule(pod, node)
	if err != nil {
		t.Fatalf("scheduling %s on %s: %v", pod.Name, node, err)
	}
	return st
}

func TestWhoBinds(t *testing.T) {
	spec := func(s string) map[string]string { return map[string]string{extension.AnnotationResourceSpec: s} }
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		policy  extension.CPUBindPolicy
		wantErr string
	}{
		{"LSR prod whole CPUs", lsr("p", "2", "", nil), extension.CPUBindPolicyFullPCPUs, ""},
		{"LSE prod", withQoS(lsr("p", "2", "", nil), "LSE"), extension.CPUBindPolicyFullPCPUs, ""},
		{"LSR prod fractional does not bind", lsr("p", "1500m", "", nil), "", ""},
		{"LSR mid priority does not bind", withPriority(lsr("p", "2", "", nil), 7000), "", ""},
		{"LS does not bind", withQoS(lsr("p", "2", "", nil), "LS"), "", ""},
		{"preferred Spread", withQoS(lsr("p", "2", "", spec(`{"preferredCPUBindPolicy":"SpreadByPCPUs"}`)), "LS"), extension.CPUBindPolicySpreadByPCPUs, ""},
		{"Default is the args' default", lsr("p", "2", "", spec(`{"preferredCPUBindPolicy":"Default"}`)), extension.CPUBindPolicyFullPCPUs, ""},
		{"ConstrainedBurst is koordlet's", lsr("p", "2", "", spec(`{"preferredCPUBindPolicy":"ConstrainedBurst"}`)), "", ""},
		{"fractional with a policy", lsr("p", "1500m", "", spec(`{"preferredCPUBindPolicy":"FullPCPUs"}`)), "", "requests 1500m CPU, but binding CPUs (FullPCPUs, from preferredCPUBindPolicy in annotation scheduling.koordinator.sh/resource-spec) needs a whole number of CPUs"},
		{"malformed resource-spec", lsr("p", "2", "", spec(`{"preferredCPUBindPolicy":`)), "", "annotation scheduling.koordinator.sh/resource-spec"},
		{"unknown policy", lsr("p", "2", "", spec(`{"requiredCPUBindPolicy":"Pinned"}`)), "", `requiredCPUBindPolicy "Pinned" is not one of`},
		{"malformed numa-topology-spec", lsr("p", "2", "", map[string]string{extension.AnnotationNUMATopologySpec: `{"numaTopologyPolicy":"Nearest"}`}), "", "annotation scheduling.koordinator.sh/numa-topology-spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newPodRequest(tc.pod, extension.CPUBindPolicyFullPCPUs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.policy != tc.policy {
				t.Errorf("policy %q, want %q", r.policy, tc.policy)
			}
		})
	}
}

func TestNodePolicies(t *testing.T) {
	full := node("full", map[string]string{extension.LabelNodeCPUBindPolicy: "FullPCPUsOnly"})
	spreadNode := node("spread", map[string]string{extension.LabelNodeCPUBindPolicy: "SpreadByPCPUs"})
	single := node("single", map[string]string{extension.LabelNodeNUMATopologyPolicy: "SingleNUMANode"})
	bad := node("bad", map[string]string{extension.LabelNodeCPUBindPolicy: "Always"})

	ls := func() *podRequest {
		r, err := newPodRequest(withQoS(lsr("p", "2", "", nil), "LS"), extension.CPUBindPolicyFullPCPUs)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if b, ok, err := ls().on(full); err != nil || !ok || b.policy != extension.CPUBindPolicyFullPCPUs {
		t.Errorf("LS pod with 2 CPUs on a FullPCPUsOnly node: %+v, %v; want FullPCPUs", b, err)
	}
	if b, ok, _ := ls().on(node("plain", nil)); ok {
		t.Errorf("LS pod on a plain node binds: %+v", b)
	}
	if b, ok, _ := ls().on(spreadNode); !ok || b.policy != extension.CPUBindPolicySpreadByPCPUs {
		t.Errorf("on a SpreadByPCPUs node: %+v", b)
	}
	be, _ := newPodRequest(withQoS(lsr("p", "2", "", nil), "BE"), extension.CPUBindPolicyFullPCPUs)
	if b, ok, _ := be.on(full); ok {
		t.Errorf("BE pod binds on a FullPCPUsOnly node: %+v", b)
	}
	required, _ := newPodRequest(lsr("p", "2", "", map[string]string{extension.AnnotationResourceSpec: `{"requiredCPUBindPolicy":"SpreadByPCPUs"}`}), extension.CPUBindPolicyFullPCPUs)
	if _, _, err := required.on(full); err == nil || !strings.Contains(err.Error(), "requires SpreadByPCPUs") || !strings.Contains(err.Error(), "node.koordinator.sh/cpu-bind-policy=FullPCPUsOnly") {
		t.Errorf("required policy vs node policy: %v", err)
	}
	if _, _, err := ls().on(bad); err == nil || !strings.Contains(err.Error(), "label node.koordinator.sh/cpu-bind-policy") {
		t.Errorf("malformed node label: %v", err)
	}
	restricted, _ := newPodRequest(lsr("p", "2", "", map[string]string{extension.AnnotationNUMATopologySpec: `{"numaTopologyPolicy":"Restricted"}`}), extension.CPUBindPolicyFullPCPUs)
	if _, _, err := restricted.on(single); err == nil || !strings.Contains(err.Error(), "NUMA policy Restricted") || !strings.Contains(err.Error(), "SingleNUMANode (label node.koordinator.sh/numa-topology-policy)") {
		t.Errorf("pod vs node NUMA policy: %v", err)
	}
	if b, ok, _ := ls().on(single); ok {
		t.Errorf("a NUMA policy alone does not make a pod bind: %+v", b)
	}
	lsrReq, _ := newPodRequest(lsr("p", "2", "", nil), extension.CPUBindPolicyFullPCPUs)
	if b, ok, _ := lsrReq.on(single); !ok || b.numaPolicy != extension.NUMATopologyPolicySingleNUMANode {
		t.Errorf("node NUMA policy applies to binding pods: %+v", b)
	}
}

func TestFilterReasons(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil), node("missing", nil), node("broken", nil))
	f.publish("n1", topologytest.Linux(1, 2, 4, 2, 8*gi)) // 2 NUMA × 4 cores × 2 threads
	f.p.onConfigMap(klog.Background(), "broken", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "broken-numa-info",
		Labels: map[string]string{extension.LabelManagedBy: extension.ManagedByKoordlet}, OwnerReferences: nodeOwner("broken")},
		Data: map[string]string{"cpu-topology": `{"detail":[{"id":0`, "numa-nodes": `[]`}})

	_, _, st := f.cycle(lsr("p", "4", "1Gi", nil))
	if !st["n1"].IsSuccess() {
		t.Errorf("n1: %v", st["n1"].AsError())
	}
	if s := st["missing"]; s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "configmap kube-system/missing-numa-info not found") {
		t.Errorf("no ConfigMap: %v", s.AsError())
	}
	if s := st["broken"]; s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "configmap kube-system/broken-numa-info key cpu-topology") {
		t.Errorf("malformed ConfigMap: %v", s.AsError())
	}
	// A pod with whole CPUs binds only on labelled nodes: elsewhere it needs no topology.
	if _, _, st := f.cycle(withQoS(lsr("ls", "4", "", nil), "LS")); !st["missing"].IsSuccess() || !st["broken"].IsSuccess() {
		t.Errorf("LS pod on unlabelled nodes without topology: %v, %v", st["missing"].AsError(), st["broken"].AsError())
	}
	// Pods that bind nothing skip the plugin, whatever the nodes' topology.
	if _, s, _ := f.cycle(withQoS(lsr("ls", "1500m", "", nil), "LS")); !s.IsSkip() {
		t.Errorf("non-binding pod: PreFilter %v, want Skip", s)
	}

	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{lsr("odd", "3", "", nil), "FullPCPUs needs a multiple of 2 CPUs (threads per core) on this node, got 3"},
		{lsr("huge", "18", "", nil), "the node has 8 free whole cores, 9 needed"},
		{lsr("single", "10", "", map[string]string{extension.AnnotationNUMATopologySpec: `{"numaTopologyPolicy":"SingleNUMANode"}`}),
			"cannot bind 10 CPUs by FullPCPUs on a single NUMA node (SingleNUMANode): no NUMA node has 5 free whole cores (the most any has is 4)"},
		{lsr("memory", "2", "9Gi", map[string]string{extension.AnnotationNUMATopologySpec: `{"numaTopologyPolicy":"SingleNUMANode"}`}),
			"NUMA nodes [0 1] have less than 9Gi memory free"},
	} {
		_, _, st := f.cycle(tc.pod)
		if s := st["n1"]; s.Code() != fwk.Unschedulable || !strings.Contains(s.Message(), tc.want) {
			t.Errorf("%s: %v, want Unschedulable with %q", tc.pod.Name, s.AsError(), tc.want)
		}
	}
	// Pods turned away come back when a topology arrives.
	f.publish("missing", topologytest.Linux(1, 1, 2, 1, gi))
	if !slices.Contains(f.h.Activated(), "default/huge") || !slices.Contains(f.h.Activated(), "default/p") {
		t.Errorf("activated %v, want default/huge and default/p", f.h.Activated())
	}
	_, _, st = f.cycle(lsr("p", "2", "", nil))
	if !st["missing"].IsSuccess() {
		t.Errorf("after publishing: %v", st["missing"].AsError())
	}
}

// Sixteen 2-CPU pods fill 2 NUMA × 8 cores × 2 threads: each gets a whole
// core, none shares, the annotation says which NUMA node, and Unreserve and
// deletion give CPUs back.
func TestReserveAndPreBind(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 2, 8, 2, 32*gi))
	held := cpuset.New()
	for i := 0; i < 16; i++ {
		st := mustSchedule(t, f, lsr(fmt.Sprintf("p%d", i), "2", "1Gi", nil), "n1")
		cpus := st.CPUs()
		if cpus.Size() != 2 || !cpus.Intersection(held).IsEmpty() {
			t.Fatalf("pod %d got %s (held so far %s)", i, cpus, held)
		}
		held = held.Union(cpus)
		if len(st.NUMANodeResources) != 1 {
			t.Fatalf("pod %d spans NUMA nodes: %+v", i, st.NUMANodeResources)
		}
		r := st.NUMANodeResources[0].Resources
		if r.Cpu().Value() != 2 || r.Memory().Value() != gi {
			t.Errorf("pod %d numaNodeResources %v, want cpu 2, memory 1Gi", i, r)
		}
	}
	if _, err := f.schedule(lsr("p16", "2", "", nil), "n1"); err == nil || !strings.Contains(err.Error(), "the node has 0 free whole cores, 1 needed") {
		t.Errorf("17th pod: %v", err)
	}
	// Deleting a pod frees its CPUs and retries the pod that did not fit
	// (the scheduler's own requeue may have raced ahead of this plugin).
	f.p.onPodDelete(lsr("p3", "2", "", nil))
	if !slices.Contains(f.h.Activated(), "default/p16") {
		t.Errorf("activated %v after a deletion, want default/p16", f.h.Activated())
	}
	// Unreserve (a later plugin failed) gives the CPUs back.
	pod := lsr("again", "2", "", nil)
	cs, _, _ := f.cycle(pod)
	if s := f.p.Reserve(context.Background(), cs, pod, "n1"); !s.IsSuccess() {
		t.Fatalf("after a deletion: %v", s.AsError())
	}
	f.p.Unreserve(context.Background(), cs, pod, "n1")
	if f.p.state.Held("n1").Size() != 30 {
		t.Errorf("after Unreserve %d CPUs held, want 30", f.p.state.Held("n1").Size())
	}
}

func TestExclusivePolicies(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 2, 4, 2, 8*gi))
	spec := func(excl string) map[string]string {
		return map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy":"SpreadByPCPUs","preferredCPUExclusivePolicy":"` + excl + `"}`}
	}
	// PCPULevel SpreadByPCPUs pods never share a physical core.
	a := mustSchedule(t, f, lsr("a", "2", "", spec("PCPULevel")), "n1").CPUs()
	b := mustSchedule(t, f, lsr("b", "2", "", spec("PCPULevel")), "n1").CPUs()
	topo := linuxTopology(t, 1, 2, 4, 2)
	if !topo.CoresOf(a).Intersection(topo.CoresOf(b)).IsEmpty() {
		t.Errorf("PCPULevel pods share a core: %s and %s", a, b)
	}
	// NUMANodeLevel pods take different NUMA nodes; a third has none left.
	c := mustSchedule(t, f, lsr("c", "2", "", spec("NUMANodeLevel")), "n1").CPUs()
	d := mustSchedule(t, f, lsr("d", "2", "", spec("NUMANodeLevel")), "n1").CPUs()
	if topo.NUMANodeOf(c.List()[0]) == topo.NUMANodeOf(d.List()[0]) {
		t.Errorf("NUMANodeLevel pods on one NUMA node: %s and %s", c, d)
	}
	if _, err := f.schedule(lsr("e", "2", "", spec("NUMANodeLevel")), "n1"); err == nil || !strings.Contains(err.Error(), "NUMA nodes [0 1] hold NUMANodeLevel-exclusive pods") {
		t.Errorf("third NUMANodeLevel pod: %v", err)
	}
	// A non-exclusive pod may still use what is left.
	mustSchedule(t, f, lsr("g", "2", "", spec("None")), "n1")
}

func TestScoring(t *testing.T) {
	score := func(f *fixture, pod *corev1.Pod, name string) int64 {
		cs, _, _ := f.cycle(pod)
		ni := framework.NewNodeInfo()
		ni.SetNode(f.nodes[name])
		s, st := f.p.Score(context.Background(), cs, pod, ni)
		if !st.IsSuccess() {
			t.Fatal(st.AsError())
		}
		return s
	}
	setup := func(strategy string) *fixture {
		f := newFixture(t, defaultArgs(t, func(a *configv1.NodeNUMAResourceArgs) {
			a.ScoringStrategy = &configv1.ResourceScoringStrategy{Type: configv1.ScoringType(strategy)}
		}), node("empty", nil), node("busy", nil))
		f.publish("empty", topologytest.Linux(1, 2, 4, 2, 8*gi))
		f.publish("busy", topologytest.Linux(1, 2, 4, 2, 8*gi))
		mustSchedule(t, f, lsr("x", "6", "4Gi", nil), "busy")
		return f
	}
	least := setup("LeastAllocated")
	pod := lsr("p", "2", "1Gi", nil)
	if e, b := score(least, pod, "empty"), score(least, pod, "busy"); e <= b {
		t.Errorf("LeastAllocated: empty %d, busy %d; want empty higher", e, b)
	}
	most := setup("MostAllocated")
	if e, b := score(most, pod, "empty"), score(most, pod, "busy"); b <= e {
		t.Errorf("MostAllocated: empty %d, busy %d; want busy higher", e, b)
	}
	// A pod that fits in one NUMA node scores above one that must span two.
	f := newFixture(t, defaultArgs(t, nil), node("whole", nil), node("split", nil))
	f.publish("whole", topologytest.Linux(1, 1, 8, 2, 16*gi))
	f.publish("split", topologytest.Linux(1, 2, 4, 2, 8*gi))
	big := lsr("big", "10", "", nil)
	if w, s := score(f, big, "whole"), score(f, big, "split"); w <= s {
		t.Errorf("one NUMA node %d, split %d: want one NUMA node higher", w, s)
	}
}

// NUMA MostAllocated packs pods onto the fullest NUMA node that fits.
func TestNUMAPacking(t *testing.T) {
	f := newFixture(t, defaultArgs(t, func(a *configv1.NodeNUMAResourceArgs) {
		a.NUMAScoringStrategy = &configv1.ResourceScoringStrategy{Type: "MostAllocated"}
	}), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 2, 4, 2, 8*gi))
	topo := linuxTopology(t, 1, 2, 4, 2)
	first := mustSchedule(t, f, lsr("a", "2", "", nil), "n1").CPUs()
	second := mustSchedule(t, f, lsr("b", "2", "", nil), "n1").CPUs()
	if topo.NUMANodeOf(first.List()[0]) != topo.NUMANodeOf(second.List()[0]) {
		t.Errorf("MostAllocated spread pods over NUMA nodes: %s, %s", first, second)
	}
}

// Koordinator's node label numa-allocate-strategy overrides the args'
// numaScoringStrategy for that node: packing here, spreading on the other.
func TestNUMAAllocateStrategyLabel(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), // LeastAllocated
		node("packed", map[string]string{extension.LabelNodeNUMAAllocateStrategy: "MostAllocated"}), node("spread", nil))
	for _, n := range []string{"packed", "spread"} {
		f.publish(n, topologytest.Linux(1, 2, 4, 2, 8*gi))
	}
	topo := linuxTopology(t, 1, 2, 4, 2)
	same := func(n string) bool {
		a := mustSchedule(t, f, lsr(n+"-a", "2", "", nil), n).CPUs()
		b := mustSchedule(t, f, lsr(n+"-b", "2", "", nil), n).CPUs()
		return topo.NUMANodeOf(a.List()[0]) == topo.NUMANodeOf(b.List()[0])
	}
	if !same("packed") {
		t.Error("label MostAllocated: the pods were spread over NUMA nodes")
	}
	if same("spread") {
		t.Error("no label, args LeastAllocated: the pods were packed on one NUMA node")
	}
	bad := newFixture(t, defaultArgs(t, nil), node("bad", map[string]string{extension.LabelNodeNUMAAllocateStrategy: "Most"}))
	bad.publish("bad", topologytest.Linux(1, 2, 4, 2, 8*gi))
	if _, err := bad.schedule(lsr("x", "2", "", nil), "bad"); err == nil || !strings.Contains(err.Error(), extension.LabelNodeNUMAAllocateStrategy) {
		t.Errorf("a malformed label: %v, want an error naming it", err)
	}
}

// Where this plugin comes before DefaultBinder, the chosen CPUs ride on the
// Binding: no PreBind, no patch, one Binding carrying resource-status; and a
// pod whose CPUs were taken meanwhile is not bound at all.
func TestBindCarriesCPUs(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.h.Bind = []string{Name, "DefaultBinder"}
	if !f.p.ext.Carried(f.h) {
		t.Fatalf("%s did not register as a binder: its annotations would never ride on the Binding", Name)
	}
	f.publish("n1", topologytest.Linux(1, 1, 2, 2, gi)) // 2 cores × 2 threads
	ctx := context.Background()
	reserve := func(pod *corev1.Pod) fwk.CycleState {
		t.Helper()
		if _, err := f.h.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cs, _, _ := f.cycle(pod)
		if s := f.p.Reserve(ctx, cs, pod, "n1"); !s.IsSuccess() {
			t.Fatal(s.AsError())
		}
		return cs
	}
	pod := lsr("carried", "2", "", nil)
	cs := reserve(pod)
	if _, s := f.p.PreBindPreFlight(ctx, cs, pod, "n1"); !s.IsSkip() {
		t.Errorf("PreBindPreFlight %v, want Skip: kube-scheduler would patch nominatedNodeName for nothing", s)
	}
	if s := f.p.PreBind(ctx, cs, pod, "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	if n := frameworkexttest.Patches(f.h.Client); n != 0 {
		t.Errorf("%d patches before binding, want none", n)
	}
	if s := f.p.Bind(ctx, cs, pod, "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	sent := frameworkexttest.Sent(f.h.Client)
	if len(sent) != 1 || sent[0].Target.Name != "n1" {
		t.Fatalf("bindings %+v, want one to n1", sent)
	}
	st, err := extension.GetResourceStatus(sent[0].Annotations)
	if err != nil || !st.CPUs().Equals(cpuset.New(0, 2)) {
		t.Errorf("binding carries %q (%v), want one whole core 0,2", sent[0].Annotations[extension.AnnotationResourceStatus], err)
	}

	// A pod that binds no CPUs goes on to DefaultBinder.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain", UID: "plain"}}
	cs, _, _ = f.cycle(plain)
	_ = f.p.Reserve(ctx, cs, plain, "n1")
	if s := f.p.Bind(ctx, cs, plain, "n1"); !s.IsSkip() {
		t.Errorf("plain pod: Bind %v, want Skip", s)
	}

	// The CPUs are bound to another pod before the binding: refused, nothing sent.
	late := lsr("late", "2", "", nil)
	cs = reserve(late)
	other := lsr("bound-elsewhere", "1", "", map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"1"}`})
	other.Spec.NodeName = "n1"
	if err := f.p.state.ObservePod(other); err != nil {
		t.Fatal(err)
	}
	if s := f.p.Bind(ctx, cs, late, "n1"); s.IsSuccess() || s.IsSkip() {
		t.Errorf("Bind with CPUs another pod holds: %v", s)
	}
	if n := len(frameworkexttest.Sent(f.h.Client)); n != 1 {
		t.Errorf("%d bindings sent, want only the first", n)
	}
}

// A bound pod the informer reports wins over an assumption on the same CPUs
// (a handover between scheduler instances): the assumed pod fails PreBind.
func TestBoundPodWinsOverAssumption(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 1, 2, 1, gi))
	pod := lsr("assumed", "1", "", nil)
	if _, err := f.h.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := f.cycle(pod)
	if s := f.p.Reserve(context.Background(), cs, pod, "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	other := lsr("bound-elsewhere", "1", "", map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0"}`})
	other.Spec.NodeName = "n1"
	if err := f.p.state.ObservePod(other); err != nil {
		t.Fatalf("the bound pod must be recorded: %v", err)
	}
	if s := f.p.PreBind(context.Background(), cs, pod, "n1"); s.IsSuccess() {
		t.Fatal("PreBind succeeded with CPUs another pod holds")
	}
	f.p.Unreserve(context.Background(), cs, pod, "n1")
	if got := f.p.state.Held("n1"); !got.Equals(cpuset.New(0)) {
		t.Errorf("held %s, want 0 (the bound pod's)", got)
	}
}

// Reserve, informer updates and deletions run at once (binding cycles are
// parallel to the scheduling cycle and to the informer): under -race, no CPU
// is ever held by two pods, and every CPU freed can be taken again.
func TestConcurrentReserveAndEvents(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 2, 8, 2, 64*gi))
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				pod := lsr(fmt.Sprintf("w%d-%d", w, i), "2", "", nil)
				cs, _, _ := f.cycle(pod)
				if s := f.p.Reserve(context.Background(), cs, pod, "n1"); !s.IsSuccess() {
					continue // full for now
				}
				if i%3 == 0 {
					f.p.Unreserve(context.Background(), cs, pod, "n1")
					continue
				}
				d, _ := cs.Read(reservedKey)
				bound := pod.DeepCopy()
				bound.Spec.NodeName = "n1"
				bound.Annotations = map[string]string{extension.AnnotationResourceStatus: d.(*reserved).status}
				f.p.onPod(context.Background(), bound)
				if i%2 == 0 {
					f.p.onPodDelete(bound)
				}
			}
		}(w)
	}
	wg.Wait()
	f.p.state.mu.RLock()
	defer f.p.state.mu.RUnlock()
	seen := map[int]types.UID{}
	for uid, a := range f.p.state.nodes["n1"].pods {
		for _, c := range a.CPUs.List() {
			if other, ok := seen[c]; ok {
				t.Errorf("CPU %d held by %s and %s", c, other, uid)
			}
			seen[c] = uid
		}
	}
	if got := f.p.state.nodes["n1"].held.Size(); got != len(seen) {
		t.Errorf("held %d CPUs, pods hold %d", got, len(seen))
	}
}

// Score in the cycle of a Filter that passed the node is what Score works out
// in a cycle of its own: Filter leaves nothing behind that changes it, under
// each scoring strategy and for nodes where the pod binds nothing.
func TestScoreAfterFilter(t *testing.T) {
	for _, strategies := range [][2]string{{"LeastAllocated", "LeastAllocated"}, {"MostAllocated", "MostAllocated"}} {
		f := newFixture(t, defaultArgs(t, func(a *configv1.NodeNUMAResourceArgs) {
			a.ScoringStrategy = &configv1.ResourceScoringStrategy{Type: configv1.ScoringType(strategies[0])}
			a.NUMAScoringStrategy = &configv1.ResourceScoringStrategy{Type: configv1.ScoringType(strategies[1])}
		}), node("empty", nil), node("busy", nil), node("split", nil),
			node("none", map[string]string{extension.LabelNodeCPUBindPolicy: string(extension.NodeCPUBindPolicyNone)}))
		for _, n := range []string{"empty", "busy", "none"} {
			f.publish(n, topologytest.Linux(1, 1, 8, 2, 16*gi))
		}
		f.publish("split", topologytest.Linux(1, 2, 4, 2, 8*gi))
		mustSchedule(t, f, lsr("x", "6", "4Gi", nil), "busy")
		ls := withQoS(lsr("ls", "2", "1Gi", map[string]string{extension.AnnotationResourceSpec: `{"preferredCPUBindPolicy":"SpreadByPCPUs"}`}), "LS")
		for _, pod := range []*corev1.Pod{lsr("p", "2", "1Gi", nil), lsr("big", "10", "", nil), ls} {
			cs, st, filtered := f.cycle(pod)
			if st != nil {
				t.Fatalf("%s: PreFilter %v", pod.Name, st.AsError())
			}
			for name, n := range f.nodes {
				if !filtered[name].IsSuccess() {
					continue
				}
				ni := framework.NewNodeInfo()
				ni.SetNode(n)
				alone := func() int64 {
					fresh := framework.NewCycleState()
					f.p.PreFilter(context.Background(), fresh, pod, nil)
					v, _ := f.p.Score(context.Background(), fresh, pod, ni)
					return v
				}
				want := alone()
				got, _ := f.p.Score(context.Background(), cs, pod, ni)
				if got != want {
					t.Errorf("%v/%s on %s: Score after Filter %d, on its own %d", strategies, pod.Name, name, got, want)
				}
			}
		}
	}
}

// A node's policy labels reach Filter through the Node's events: relabelled,
// the node binds by its new labels; a malformed label turns binding pods away
// naming it; before any event the Node object's own labels are read.
func TestPoliciesFollowNodeEvents(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil))
	f.publish("n1", topologytest.Linux(1, 1, 4, 2, 8*gi))
	pod := lsr("p", "2", "", map[string]string{extension.AnnotationResourceSpec: `{"requiredCPUBindPolicy":"SpreadByPCPUs"}`})
	filter := func() *fwk.Status {
		t.Helper()
		_, st, filtered := f.cycle(pod)
		if st != nil {
			t.Fatal(st.AsError())
		}
		return filtered["n1"]
	}
	if st := filter(); !st.IsSuccess() {
		t.Fatalf("unlabelled node: %v", st.AsError())
	}
	relabel := func(labels map[string]string) {
		n := node("n1", labels)
		f.nodes["n1"] = n
		f.p.onNode(n)
	}
	relabel(map[string]string{extension.LabelNodeCPUBindPolicy: string(extension.NodeCPUBindPolicyFullPCPUsOnly)})
	if st := filter(); st.IsSuccess() || !strings.Contains(st.Message(), "requires SpreadByPCPUs") {
		t.Errorf("node relabelled FullPCPUsOnly: %v", st)
	}
	relabel(map[string]string{extension.LabelNodeNUMATopologyPolicy: "Sometimes"})
	if st := filter(); st.IsSuccess() || !strings.Contains(st.Message(), extension.LabelNodeNUMATopologyPolicy) {
		t.Errorf("malformed label: %v", st)
	}
	relabel(nil)
	if st := filter(); !st.IsSuccess() {
		t.Errorf("labels removed: %v", st.AsError())
	}
	// A node no event has told of yet: its object's labels count.
	f.p.onNodeDelete(node("n1", nil))
	f.nodes["n1"] = node("n1", map[string]string{extension.LabelNodeCPUBindPolicy: string(extension.NodeCPUBindPolicyFullPCPUsOnly)})
	if st := filter(); st.IsSuccess() {
		t.Error("a node without events: its FullPCPUsOnly label was not read")
	}
}

// Trust: a numa-info ConfigMap someone else wrote in kube-system is not read
// (the node cannot bind CPUs, and Filter says why), and the CPUs a pod no
// Koord profile bound claims in its resource-status are not counted.
func TestUntrustedSourcesIgnored(t *testing.T) {
	f := newFixture(t, defaultArgs(t, nil), node("n1", nil), node("n2", nil))
	forged, err := extension.NewNUMAInfoConfigMap("n1", topologytest.Linux(1, 1, 2, 2, 8*gi))
	if err != nil {
		t.Fatal(err)
	}
	forged.Labels = nil
	f.p.onConfigMap(klog.Background(), "n1", forged)
	unowned, _ := extension.NewNUMAInfoConfigMap("n2", topologytest.Linux(1, 1, 2, 2, 8*gi))
	f.p.onConfigMap(klog.Background(), "n2", unowned)
	_, _, st := f.cycle(lsr("p", "2", "1Gi", nil))
	if s := st["n1"]; s.IsSuccess() || !strings.Contains(s.Message(), "label app.kubernetes.io/managed-by") {
		t.Errorf("n1 with an unlabelled numa-info: %v", s.AsError())
	}
	if s := st["n2"]; s.IsSuccess() || !strings.Contains(s.Message(), "no owner reference to Node n2") {
		t.Errorf("n2 with an unowned numa-info: %v", s.AsError())
	}

	f.publish("n1", topologytest.Linux(1, 1, 2, 2, 8*gi)) // 4 CPUs
	squatter := lsr("squatter", "4", "1Gi", map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0-3"}`})
	squatter.Spec.NodeName, squatter.Spec.SchedulerName = "n1", "default-scheduler"
	f.p.onPod(context.Background(), squatter)
	if held := f.p.state.Held("n1"); !held.IsEmpty() {
		t.Errorf("a pod koord-scheduler did not bind holds %s", held)
	}
	if _, _, st := f.cycle(lsr("real", "4", "1Gi", nil)); !st["n1"].IsSuccess() {
		t.Errorf("the forged claim kept a real pod off n1: %v", st["n1"].AsError())
	}
	// Even from a Koord pod, CPUs the node does not have are not counted.
	huge := lsr("huge", "4", "1Gi", map[string]string{extension.AnnotationResourceStatus: `{"cpuset":"0-16383"}`})
	huge.Spec.NodeName = "n1"
	if err := f.p.state.ObservePod(huge); err == nil || !strings.Contains(err.Error(), "that node n1 does not have") {
		t.Errorf("a claim on CPUs 0-16383 of a 4-CPU node: %v", err)
	}
	if held := f.p.state.Held("n1"); !held.IsEmpty() {
		t.Errorf("the impossible claim holds %s", held)
	}
}
