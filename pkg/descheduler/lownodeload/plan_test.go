package lownodeload

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/apis/extension"
)

func node(name, cpu, mem string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")}}}
}

func use(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func pod(name, nodeName, qos string, prio int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{extension.LabelPodQoS: qos}},
		Spec: corev1.PodSpec{NodeName: nodeName, Priority: &prio, Containers: []corev1.Container{{Name: "c"}}}}
}

// load builds a node whose usage is the sum of its pods' plus system.
func load(n *corev1.Node, system string, pods map[*corev1.Pod]string) NodeLoad {
	nl := NodeLoad{Node: n, PodUsage: map[string]corev1.ResourceList{}}
	total := use(system, "1Gi")
	for p, cpu := range pods {
		nl.Pods = append(nl.Pods, p)
		u := use(cpu, "1Gi")
		nl.PodUsage[p.Namespace+"/"+p.Name] = u
		for r, q := range u {
			t := total[r]
			t.Add(q)
			total[r] = t
		}
	}
	nl.Usage = total
	return nl
}

func opts(abnormal uint32) Options {
	return Options{Thresholds: Thresholds{
		Low: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 30, corev1.ResourceMemory: 30}, High: v1alpha2.ResourceThresholds{corev1.ResourceCPU: 70, corev1.ResourceMemory: 90},
		Weights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}, Abnormal: abnormal, Normal: 3,
	}, NodeFit: true, Now: time.Unix(1000, 0)}
}

func names(ms []Move) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Pod.Name+"→"+m.To)
	}
	return strings.Join(s, ",")
}

// A node at 90 % CPU against a high threshold of 70 % on 10 cores must shed
// more than 2 cores: the two BE pods (1.5 cores each, the batch band) go
// first, and then it is at 60 %: the prod pods stay.
func TestJustEnough(t *testing.T) {
	hot := node("hot", "10", "64Gi")
	nodes := []NodeLoad{
		load(hot, "1", map[*corev1.Pod]string{
			pod("be-1", "hot", "BE", 5000): "1500m", pod("be-2", "hot", "BE", 5000): "1500m",
			pod("web-1", "hot", "LS", 9000): "2", pod("web-2", "hot", "LS", 9000): "3",
		}),
		load(node("cool-a", "10", "64Gi"), "1", nil),
		load(node("cool-b", "10", "64Gi"), "2", nil),
	}
	d := NewDetector(time.Hour)
	o := opts(3)
	for round := 1; round <= 3; round++ {
		o.Now = o.Now.Add(time.Minute)
		p := d.plan(nodes, o)
		if round < 3 {
			if len(p.Moves) != 0 || len(p.Rising) != 1 {
				t.Fatalf("round %d: moves %s rising %v: a node is hot only after 3 rounds", round, names(p.Moves), p.Rising)
			}
			continue
		}
		if got := names(p.Moves); got != "be-1→cool-a,be-2→cool-b" {
			t.Errorf("moves %s, want the two BE pods, spread over the coolest nodes", got)
		}
		if fmt.Sprint(p.Hot, p.Low) != "[hot] [cool-a cool-b]" {
			t.Errorf("hot %v low %v", p.Hot, p.Low)
		}
	}
	// Moved from: its count starts again.
	if p := d.plan(nodes, o); len(p.Moves) != 0 {
		t.Errorf("moved again at once: %s", names(p.Moves))
	}
}

// A node over the high mark for fewer rounds than needed is left alone.
// As in Koordinator, the count of rounds over it is cleared only after
// consecutiveNormalities rounds under it (here 1).
func TestConsecutiveRounds(t *testing.T) {
	hotLoad := load(node("n", "10", "64Gi"), "1", map[*corev1.Pod]string{pod("be-a", "n", "BE", 5000): "4", pod("be-b", "n", "BE", 5000): "4"})
	coolLoad := load(node("n", "10", "64Gi"), "1", map[*corev1.Pod]string{pod("be-a", "n", "BE", 5000): "1"})
	spare := load(node("spare", "10", "64Gi"), "1", nil)
	d := NewDetector(time.Hour)
	o := opts(3)
	o.Normal = 1
	for i, nl := range []NodeLoad{hotLoad, hotLoad, coolLoad, hotLoad, hotLoad} {
		o.Now = o.Now.Add(time.Minute)
		if p := d.plan([]NodeLoad{nl, spare}, o); len(p.Moves) != 0 {
			t.Fatalf("round %d moved %s", i+1, names(p.Moves))
		}
	}
	o.Now = o.Now.Add(time.Minute)
	if p := d.plan([]NodeLoad{hotLoad, spare}, o); names(p.Moves) != "be-a→spare" {
		t.Fatalf("third round in a row moved %q, want be-a only (4 of 9 cores: 50 %% < 70 %%)", names(p.Moves))
	}
	// With consecutiveNormalities 3, one round under the mark does not clear the count.
	d = NewDetector(time.Hour)
	o.Normal = 3
	var last Plan
	for _, nl := range []NodeLoad{hotLoad, hotLoad, coolLoad, hotLoad} {
		o.Now = o.Now.Add(time.Minute)
		last = d.plan([]NodeLoad{nl, spare}, o)
	}
	if len(last.Moves) != 1 {
		t.Errorf("over, over, under, over with consecutiveNormalities 3: moves %s, want one", names(last.Moves))
	}
}

func TestNothingMovesWithoutRoom(t *testing.T) {
	hot := load(node("hot", "10", "64Gi"), "1", map[*corev1.Pod]string{pod("be", "hot", "BE", 5000): "8"})
	warm := load(node("warm", "10", "64Gi"), "4", nil) // 50 %: not under the low mark
	d := NewDetector(time.Hour)
	p := d.plan([]NodeLoad{hot, warm}, opts(1))
	if len(p.Moves) != 0 || !strings.Contains(p.Stuck["hot"], "0 node(s) under the low thresholds") {
		t.Errorf("moves %s stuck %v", names(p.Moves), p.Stuck)
	}
	// A node under the low mark that would pass the high one with the pod
	// does not take it either.
	small := load(node("small", "4", "64Gi"), "0", nil)
	p = d.plan([]NodeLoad{hot, small}, opts(1))
	if len(p.Moves) != 0 || !strings.Contains(p.Stuck["hot"], "would pass the high ones") {
		t.Errorf("moves %s stuck %v", names(p.Moves), p.Stuck)
	}
	// numberOfNodes: act only with more low nodes than that.
	o := opts(1)
	o.NumberOfNodes = 1
	if p := NewDetector(time.Hour).plan([]NodeLoad{hot, load(node("cool", "10", "64Gi"), "1", nil)}, o); len(p.Moves) != 0 {
		t.Errorf("numberOfNodes 1 with one low node moved %s", names(p.Moves))
	}
}

func TestNodeFitAndMovable(t *testing.T) {
	pinned := pod("pinned", "hot", "BE", 5000)
	pinned.Spec.NodeSelector = map[string]string{"zone": "a"}
	kept := pod("kept", "hot", "BE", 5000)
	hot := load(node("hot", "10", "64Gi"), "1", map[*corev1.Pod]string{pinned: "4", kept: "4"})
	cool := load(node("cool", "10", "64Gi"), "1", nil)
	o := opts(1)
	o.Fits = func(p *corev1.Pod, n *corev1.Node) error {
		if p.Spec.NodeSelector["zone"] != "" && n.Labels["zone"] != p.Spec.NodeSelector["zone"] {
			return fmt.Errorf("node selector")
		}
		return nil
	}
	o.Movable = func(p *corev1.Pod) bool { return p.Name != "kept" }
	p := NewDetector(time.Hour).plan([]NodeLoad{hot, cool}, o)
	if len(p.Moves) != 0 || !strings.Contains(p.Stuck["hot"], "pod ns/pinned: it fits no node") {
		t.Errorf("moves %s stuck %v", names(p.Moves), p.Stuck)
	}
	o.NodeFit = false
	if p := NewDetector(time.Hour).plan([]NodeLoad{hot, cool}, o); names(p.Moves) != "pinned→cool" {
		t.Errorf("nodeFit off: moves %s", names(p.Moves))
	}
}

// The order pods leave in: the lowest band first, then the lowest
// priority, then BE before LS, then the most used.
func TestOrder(t *testing.T) {
	n := node("n", "100", "64Gi")
	pods := map[*corev1.Pod]string{
		pod("prod-ls", "n", "LS", 9000): "9", pod("mid", "n", "LS", 7000): "1", pod("batch-small", "n", "BE", 5000): "1",
		pod("batch-big", "n", "BE", 5000): "5", pod("free", "n", "BE", 3000): "1", pod("batch-low", "n", "BE", 5001): "1",
	}
	never := pod("never", "n", "BE", 3000)
	never.Annotations = map[string]string{extension.AnnotationEvictionCost: "2147483647"}
	cheap := pod("batch-cheap", "n", "BE", 5000)
	cheap.Annotations = map[string]string{extension.AnnotationEvictionCost: "-1"}
	pods[never], pods[cheap] = "1", "1"
	nl := load(n, "0", pods)
	var got []string
	for _, p := range candidates(nl, opts(1)) {
		got = append(got, p.Name)
	}
	if strings.Join(got, ",") != "free,batch-cheap,batch-big,batch-small,batch-low,mid,prod-ls" {
		t.Errorf("order %v", got)
	}
}

func TestDeviationThresholds(t *testing.T) {
	// Mean CPU use 40 %: with deviations of 10 the high mark is 50 % and the low one 30 %.
	nodes := []NodeLoad{
		load(node("a", "10", "64Gi"), "0", map[*corev1.Pod]string{pod("be", "a", "BE", 5000): "2", pod("be-2", "a", "BE", 5000): "5"}),
		load(node("b", "10", "64Gi"), "2", nil),
		load(node("c", "10", "64Gi"), "3", nil),
	}
	o := opts(1)
	o.Deviation = true
	o.Low = v1alpha2.ResourceThresholds{corev1.ResourceCPU: 10}
	o.High = v1alpha2.ResourceThresholds{corev1.ResourceCPU: 10}
	p := NewDetector(time.Hour).plan(nodes, o)
	if fmt.Sprint(p.Hot, p.Low) != "[a] [b]" || names(p.Moves) != "be→b" {
		t.Errorf("hot %v low %v moves %s", p.Hot, p.Low, names(p.Moves))
	}
}

// An expired NodeMetric takes a node out: neither source nor destination.
func TestUnmeasuredNodes(t *testing.T) {
	hot := load(node("hot", "10", "64Gi"), "1", map[*corev1.Pod]string{pod("be", "hot", "BE", 5000): "8"})
	stale := NodeLoad{Node: node("stale", "10", "64Gi")}
	p := NewDetector(time.Hour).plan([]NodeLoad{hot, stale}, opts(1))
	if len(p.Moves) != 0 || len(p.Low) != 0 {
		t.Errorf("an unmeasured node took a pod: %s", names(p.Moves))
	}
}
