package quota

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

func eq(ns, name, min, max string, labels, ann map[string]string) *Quota {
	list := func(cpu string) corev1.ResourceList {
		if cpu == "" {
			return nil
		}
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	return QuotaOf(&schedulingsigsv1alpha1.ElasticQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: ann},
		Spec:       schedulingsigsv1alpha1.ElasticQuotaSpec{Min: list(min), Max: list(max)},
	})
}

func cores(n float64) Vec { return Vec{corev1.ResourceCPU: int64(n * 1000)} }

func runtimeOf(t *testing.T, s *Shares, name string) float64 {
	t.Helper()
	return float64(s.Runtime[name][corev1.ResourceCPU]) / 1000
}

func TestLendAndReclaim(t *testing.T) {
	tree := NewTree([]*Quota{eq("a", "a", "4", "10", nil, nil), eq("b", "b", "4", "10", nil, nil)})
	// b asks nothing: a borrows b's min, up to what it asks.
	s := tree.Compute(map[string]Vec{"a": cores(8)}, map[string]Vec{"a": cores(8)}, cores(10))
	if a, b := runtimeOf(t, s, "a"), runtimeOf(t, s, "b"); a != 8 || b != 0 {
		t.Fatalf("a borrowing: runtimes a=%v b=%v, want 8 and 0", a, b)
	}
	// b's pods come within its min: its min is back, and a is left 6.
	s = tree.Compute(map[string]Vec{"a": cores(8)}, map[string]Vec{"a": cores(8), "b": cores(4)}, cores(10))
	if a, b := runtimeOf(t, s, "a"), runtimeOf(t, s, "b"); a != 6 || b != 4 {
		t.Fatalf("b reclaiming: runtimes a=%v b=%v, want 6 and 4", a, b)
	}
}

func TestSharedWeightAndWaterFilling(t *testing.T) {
	tree := NewTree([]*Quota{
		eq("a", "a", "", "12", nil, map[string]string{extension.AnnotationSharedWeight: `{"cpu":"2"}`}),
		eq("b", "b", "", "12", nil, map[string]string{extension.AnnotationSharedWeight: `{"cpu":"1"}`}),
	})
	s := tree.Compute(nil, map[string]Vec{"a": cores(12), "b": cores(12)}, cores(12))
	if a, b := runtimeOf(t, s, "a"), runtimeOf(t, s, "b"); a != 8 || b != 4 {
		t.Fatalf("weights 2:1 of 12: a=%v b=%v", a, b)
	}
	// a asks only 2: b gets the rest, not a share of it.
	s = tree.Compute(nil, map[string]Vec{"a": cores(2), "b": cores(12)}, cores(12))
	if a, b := runtimeOf(t, s, "a"), runtimeOf(t, s, "b"); a != 2 || b != 10 {
		t.Fatalf("water-filling: a=%v b=%v", a, b)
	}
	// Nobody is given past its max.
	s = tree.Compute(nil, map[string]Vec{"a": cores(20), "b": cores(1)}, cores(30))
	if a := runtimeOf(t, s, "a"); a != 12 {
		t.Fatalf("capped by max: a=%v", a)
	}
}

func TestNotLent(t *testing.T) {
	tree := NewTree([]*Quota{eq("a", "a", "4", "10", map[string]string{extension.LabelAllowLentResource: "false"}, nil), eq("b", "b", "", "10", nil, nil)})
	s := tree.Compute(nil, map[string]Vec{"b": cores(10)}, cores(10))
	if a, b := runtimeOf(t, s, "a"), runtimeOf(t, s, "b"); a != 4 || b != 6 {
		t.Fatalf("a keeps its min: a=%v b=%v", a, b)
	}
}

func TestMinsScaled(t *testing.T) {
	tree := NewTree([]*Quota{eq("a", "a", "6", "", nil, nil), eq("b", "b", "6", "", nil, nil)})
	s := tree.Compute(nil, map[string]Vec{"a": cores(6), "b": cores(6)}, cores(6))
	if a, b := runtimeOf(t, s, "a"), runtimeOf(t, s, "b"); a != 3 || b != 3 {
		t.Fatalf("mins 6+6 on 6 cores: a=%v b=%v", a, b)
	}
}

// A child never gets past its parent's max, however much the cluster has
// idle and however large its own max.
func TestThreeLevels(t *testing.T) {
	parent := map[string]string{extension.LabelQuotaIsParent: "true"}
	tree := NewTree([]*Quota{
		eq("q", "org", "10", "20", parent, nil),
		eq("q", "dept", "5", "8", map[string]string{extension.LabelQuotaParent: "org", extension.LabelQuotaIsParent: "true"}, nil),
		eq("q", "team", "2", "50", map[string]string{extension.LabelQuotaParent: "dept"}, nil),
		eq("q", "other", "", "100", nil, nil),
	})
	s := tree.Compute(map[string]Vec{"team": cores(3)}, map[string]Vec{"team": cores(40), "other": cores(10)}, cores(100))
	if team, dept := runtimeOf(t, s, "team"), runtimeOf(t, s, "dept"); team != 8 || dept != 8 {
		t.Fatalf("team %v dept %v, want both at dept's max 8", team, dept)
	}
	if got := s.Used["org"][corev1.ResourceCPU]; got != 3000 {
		t.Fatalf("a parent's used is its children's: %d", got)
	}
	if got := s.Request["org"][corev1.ResourceCPU]; got != 8000 {
		t.Fatalf("a parent's request is its children's capped by maxima: %d", got)
	}
	if names := len(tree.Ancestors("team")); names != 2 {
		t.Fatalf("team's ancestors: %d", names)
	}
}

func TestBrokenTrees(t *testing.T) {
	tree := NewTree([]*Quota{
		eq("q", "orphan", "", "1", map[string]string{extension.LabelQuotaParent: "nobody"}, nil),
		eq("q", "leaf", "", "1", nil, nil),
		eq("q", "child", "", "1", map[string]string{extension.LabelQuotaParent: "leaf"}, nil),
		eq("q", "x", "", "1", map[string]string{extension.LabelQuotaParent: "y", extension.LabelQuotaIsParent: "true"}, nil),
		eq("q", "y", "", "1", map[string]string{extension.LabelQuotaParent: "x", extension.LabelQuotaIsParent: "true"}, nil),
		eq("q", "bad", "", "1", map[string]string{extension.LabelQuotaIsParent: "yes"}, nil),
		eq("q", "inverted", "2", "1", nil, nil),
		eq("a", "same", "", "1", nil, nil),
		eq("b", "same", "", "1", nil, nil),
	})
	for name, want := range map[string]string{
		"orphan": "does not exist", "child": "is not labelled", "x": "cycle", "y": "cycle",
		"bad": extension.LabelQuotaIsParent, "inverted": "more than max",
	} {
		if q := tree.Get(name); q.Err == nil || !strings.Contains(q.Err.Error(), want) {
			t.Errorf("%s: want an error with %q, got %v", name, want, q.Err)
		}
	}
	if q := tree.Get("same"); q.Namespace != "a" || q.Err != nil {
		t.Errorf("the first of two same-named quotas (by namespace) is kept: %+v", q)
	}
	tree.Compute(nil, nil, cores(1)) // broken quotas take no part, and nothing panics
}

func TestResolve(t *testing.T) {
	tree := NewTree([]*Quota{
		eq("team-a", "team-a", "", "1", nil, nil),
		eq("shared", "batch", "", "1", nil, map[string]string{extension.AnnotationQuotaNamespaces: `["team-b"]`}),
		eq("shared", "org", "", "1", map[string]string{extension.LabelQuotaIsParent: "true"}, nil),
	})
	pod := func(ns, quota string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
		if quota != "" {
			p.Labels = map[string]string{extension.LabelQuotaName: quota}
		}
		return p
	}
	for _, c := range []struct {
		pod       *corev1.Pod
		want, err string
	}{
		{pod("team-a", ""), "team-a", ""},
		{pod("team-b", ""), "batch", ""},
		{pod("team-b", "batch"), "batch", ""},
		{pod("team-c", ""), "", ""},
		{pod("team-c", "batch"), "", "does not list team-c"},
		{pod("team-a", "nope"), "", "no ElasticQuota"},
		{pod("shared", "org"), "", "is a parent"},
	} {
		got, err := tree.Resolve(c.pod)
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s/%s: got %q, %v; want %q, %q", c.pod.Namespace, c.pod.Labels[extension.LabelQuotaName], got, err, c.want, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), extension.LabelQuotaName) {
			t.Errorf("the error names no key: %v", err)
		}
	}
}

func TestLedger(t *testing.T) {
	l := NewLedger()
	l.Set("1", Entry{Quota: "a", Requests: cores(1)})
	l.Set("2", Entry{Quota: "a", Requests: cores(2), Placed: true})
	l.Set("3", Entry{Requests: cores(4), Placed: true})
	l.Set("1", Entry{Quota: "a", Requests: cores(1), Placed: true}) // bound
	used, req, outside := l.Totals()
	if used["a"][corev1.ResourceCPU] != 3000 || req["a"][corev1.ResourceCPU] != 3000 || outside[corev1.ResourceCPU] != 4000 {
		t.Fatalf("used %v request %v outside %v", used, req, outside)
	}
	l.Remove("2")
	l.Remove("3")
	used, req, outside = l.Totals()
	if used["a"][corev1.ResourceCPU] != 1000 || req["a"][corev1.ResourceCPU] != 1000 || outside[corev1.ResourceCPU] != 0 {
		t.Fatalf("after removals: used %v request %v outside %v", used, req, outside)
	}
}

// What non-preemptible pods hold is counted once they are placed, and
// given back when they go or lose the label.
func TestLedgerNonPreemptible(t *testing.T) {
	l := NewLedger()
	l.Set("1", Entry{Quota: "a", Requests: cores(1), NonPreemptible: true}) // pending
	l.Set("2", Entry{Quota: "a", Requests: cores(2), Placed: true, NonPreemptible: true})
	l.Set("3", Entry{Quota: "a", Requests: cores(4), Placed: true})
	if got := l.NonPreemptibleUsedBy("a")[corev1.ResourceCPU]; got != 2000 {
		t.Fatalf("non-preemptible used %d, want 2000 (the placed one only)", got)
	}
	l.Set("1", Entry{Quota: "a", Requests: cores(1), Placed: true, NonPreemptible: true})
	l.Set("2", Entry{Quota: "a", Requests: cores(2), Placed: true})
	if got := l.NonPreemptibleUsedBy("a")[corev1.ResourceCPU]; got != 1000 {
		t.Fatalf("non-preemptible used %d, want 1000", got)
	}
	l.Remove("1")
	if got := l.NonPreemptibleUsedBy("a")[corev1.ResourceCPU]; got != 0 {
		t.Fatalf("non-preemptible used %d after the pod went", got)
	}
}

func TestVecList(t *testing.T) {
	v := Vec{corev1.ResourceCPU: 1500, corev1.ResourceMemory: 2 << 30 * 1000}
	l := v.List()
	if l.Cpu().String() != "1500m" || l.Memory().String() != "2Gi" {
		t.Fatalf("%v", l)
	}
	huge := VecOf(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e18")})
	if huge[corev1.ResourceCPU] != unbounded || Show(corev1.ResourceCPU, huge[corev1.ResourceCPU]) != "unbounded" {
		t.Fatalf("a huge max: %v", huge)
	}
}

// The ledger's version moves with what runtimes depend on (requests, what
// pods outside the tree hold), not with a quota's pod being placed.
func TestLedgerVersion(t *testing.T) {
	l := NewLedger()
	l.Set("1", Entry{Quota: "a", Requests: cores(1)})
	v := l.Version()
	l.Set("1", Entry{Quota: "a", Requests: cores(1), Placed: true})
	if l.Version() != v {
		t.Fatal("placing a quota's pod moved the version")
	}
	l.Set("2", Entry{Requests: cores(1)})
	if l.Version() != v {
		t.Fatal("a pending pod outside the tree moved the version")
	}
	l.Set("2", Entry{Requests: cores(1), Placed: true})
	if l.Version() == v {
		t.Fatal("a pod outside the tree placed did not move the version")
	}
	v = l.Version()
	l.Remove("1")
	if l.Version() == v {
		t.Fatal("a quota's pod removed did not move the version")
	}
	if got := l.UsedBy("a")[corev1.ResourceCPU]; got != 0 {
		t.Fatalf("used after removal: %d", got)
	}
}

// Quota names are cluster-wide: the older of two quotas of one name keeps
// it, whichever namespace sorts first; the younger cannot be used and says
// whose the name is.
func TestNameClashOlderWins(t *testing.T) {
	old, young := eq("team-b", "team-b", "4", "8", nil, nil), eq("aaa", "team-b", "8", "8", nil, nil)
	old.Created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	young.Created = old.Created.Add(time.Hour)
	for _, order := range [][]*Quota{{old, young}, {young, old}} {
		old.Err, young.Err = nil, nil
		tree := NewTree(order)
		if got := tree.Get("team-b"); got != old || got.Err != nil {
			t.Errorf("team-b is %s/%s (%v), want the older team-b/team-b", got.Namespace, got.Name, got.Err)
		}
		if young.Err == nil || !strings.Contains(young.Err.Error(), "ElasticQuota aaa/team-b: the name team-b is taken by the older team-b/team-b") {
			t.Errorf("the younger quota: %v", young.Err)
		}
	}
	// Created in the same second: the UID decides, the same way every time.
	a, b := eq("x", "q", "1", "1", nil, nil), eq("y", "q", "1", "1", nil, nil)
	a.UID, b.UID = "2", "1"
	if NewTree([]*Quota{a, b}).Get("q") != b || NewTree([]*Quota{b, a}).Get("q") != b {
		t.Error("same creation time: the smaller UID must keep the name")
	}
}
