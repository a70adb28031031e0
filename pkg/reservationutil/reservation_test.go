package reservationutil

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

func res(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// reservation is Available on n1 with 4 CPUs and 8Gi; without owners given,
// every pod may own it (an empty label selector), as consumption tests need.
func reservation(name string, owners ...schedulingv1alpha1.ReservationOwner) *schedulingv1alpha1.Reservation {
	if len(owners) == 0 {
		owners = []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{}}}
	}
	return &schedulingv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"pool": "web"}},
		Spec: schedulingv1alpha1.ReservationSpec{
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Namespace: "prod"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res("4", "8Gi")}}}}},
			Owners: owners,
		},
		Status: schedulingv1alpha1.ReservationStatus{Phase: schedulingv1alpha1.ReservationAvailable, NodeName: "n1", Allocatable: res("4", "8Gi")},
	}
}

func testPod(ns, name string, lbls map[string]string, controller *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("pod-" + name), Labels: lbls}}
	if controller != nil {
		p.OwnerReferences = []metav1.OwnerReference{*controller}
	}
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res("1", "2Gi")}}}
	return p
}

func TestIsOwner(t *testing.T) {
	yes := true
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9", UID: "rs-uid", Controller: &yes}
	web := testPod("prod", "web-1", map[string]string{"app": "web", "tier": "front"}, &rs)
	for _, tc := range []struct {
		name  string
		owner schedulingv1alpha1.ReservationOwner
		want  bool
	}{
		{"object by namespace/name", schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Namespace: "prod", Name: "web-1"}}, true},
		{"object in another namespace", schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Namespace: "dev", Name: "web-1"}}, false},
		{"object with the wrong UID", schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Namespace: "prod", Name: "web-1", UID: "other"}}, false},
		{"controller by UID", schedulingv1alpha1.ReservationOwner{Controller: &schedulingv1alpha1.ReservationControllerReference{OwnerReference: metav1.OwnerReference{UID: "rs-uid"}}}, true},
		{"controller by kind and name", schedulingv1alpha1.ReservationOwner{Controller: &schedulingv1alpha1.ReservationControllerReference{
			OwnerReference: metav1.OwnerReference{Kind: "ReplicaSet", Name: "web-7d9"}, Namespace: "prod"}}, true},
		{"controller of another kind", schedulingv1alpha1.ReservationOwner{Controller: &schedulingv1alpha1.ReservationControllerReference{
			OwnerReference: metav1.OwnerReference{Kind: "StatefulSet", Name: "web-7d9"}}}, false},
		{"controller in another namespace", schedulingv1alpha1.ReservationOwner{Controller: &schedulingv1alpha1.ReservationControllerReference{
			OwnerReference: metav1.OwnerReference{UID: "rs-uid"}, Namespace: "dev"}}, false},
		// A controller by name alone is the template's namespace's.
		{"controller without a namespace, pod in the template's", schedulingv1alpha1.ReservationOwner{Controller: &schedulingv1alpha1.ReservationControllerReference{
			OwnerReference: metav1.OwnerReference{Kind: "ReplicaSet", Name: "web-7d9"}}}, true},
		{"label selector", schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}, true},
		{"label selector expression", schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"back"}}}}}, false},
		// Fields of one entry are ANDed.
		{"object and a selector that matches", schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Namespace: "prod", Name: "web-1"},
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}}, true},
		{"object and a selector that does not", schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Namespace: "prod", Name: "web-1"},
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "back"}}}, false},
		{"an empty entry matches nobody", schedulingv1alpha1.ReservationOwner{}, false},
	} {
		if got := IsOwner(reservation("r", tc.owner), web); got != tc.want {
			t.Errorf("%s: IsOwner = %v, want %v", tc.name, got, tc.want)
		}
		checkKeys(t, tc.name, reservation("r", tc.owner), web)
	}
	// Entries are alternatives.
	r := reservation("r",
		schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Namespace: "prod", Name: "web-1"}})
	if !IsOwner(r, web) {
		t.Error("the second owner entry matches; the reservation is the pod's")
	}
	if IsOwner(r, testPod("prod", "orphan", nil, nil)) {
		t.Error("a pod without a controller must not match by a controller entry or an unrelated entry")
	}
}

// Owners found by labels (or by a controller's name alone) are pods of the
// template's namespace: a pod elsewhere labelled like them is not an owner,
// unless the Reservation opts in to every namespace (Koordinator's rule).
func TestOwnersByLabelStayInTheirNamespace(t *testing.T) {
	yes := true
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9", UID: "other-uid", Controller: &yes}
	squatter := testPod("team-b", "web-1", map[string]string{"app": "web"}, &rs)
	byLabel := schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	byName := schedulingv1alpha1.ReservationOwner{Controller: &schedulingv1alpha1.ReservationControllerReference{OwnerReference: metav1.OwnerReference{Kind: "ReplicaSet", Name: "web-7d9"}}}
	for _, o := range []schedulingv1alpha1.ReservationOwner{byLabel, byName} {
		r := reservation("r", o)
		if IsOwner(r, squatter) {
			t.Errorf("owner %+v: a team-b pod owns a reservation of namespace prod", o)
		}
		if !IsOwner(r, testPod("prod", "web-2", map[string]string{"app": "web"}, &rs)) {
			t.Errorf("owner %+v: the prod pod is not an owner", o)
		}
		r.Annotations = map[string]string{extension.AnnotationReservationOwnersAnyNamespace: "true"}
		if !IsOwner(r, squatter) {
			t.Errorf("owner %+v with %s=true: the team-b pod is not an owner", o, extension.AnnotationReservationOwnersAnyNamespace)
		}
	}
	// No namespace in the template: "default", as for a pod without one.
	r := reservation("r", byLabel)
	r.Spec.Template.Namespace = ""
	if IsOwner(r, testPod("prod", "web-2", map[string]string{"app": "web"}, nil)) || !IsOwner(r, testPod("default", "web-3", map[string]string{"app": "web"}, nil)) {
		t.Error("a template without a namespace: owners by label must be pods of default")
	}
	// Equal owners in different namespaces are not the same owners.
	a, b := reservation("a", byLabel), reservation("b", byLabel)
	b.Spec.Template.Namespace = "team-b"
	if CompileOwners(a).SameAs(CompileOwners(b)) {
		t.Error("SameAs ignores the owners' namespace")
	}
}

// checkKeys asserts that Owners.Keys never rules out an owner: a pod that
// matches offers one of the keys, or the reservation has a keyless entry.
func checkKeys(t *testing.T, name string, r *schedulingv1alpha1.Reservation, pod *corev1.Pod) {
	t.Helper()
	owners := CompileOwners(r)
	keys, any := owners.Keys()
	if !owners.Match(pod) || any {
		return
	}
	for _, k := range PodKeys(pod) {
		if slices.Contains(keys, k) {
			return
		}
	}
	t.Errorf("%s: pod %s owns the reservation but offers none of its keys %v (pod offers %v)", name, pod.Name, keys, PodKeys(pod))
}

func TestOwnerKeys(t *testing.T) {
	web := testPod("prod", "web-1", map[string]string{"app": "web"}, nil)
	for _, tc := range []struct {
		name    string
		owner   schedulingv1alpha1.ReservationOwner
		keys    []string
		keyless bool
	}{
		{"labels: the smallest key", ownerByLabels(map[string]string{"tier": "front", "app": "web"}), []string{"label/app=web"}, false},
		{"object", schedulingv1alpha1.ReservationOwner{Object: &corev1.ObjectReference{Namespace: "prod", Name: "web-1"}}, []string{"object/prod/web-1"}, false},
		{"an empty selector matches every pod", schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{}}, nil, true},
		{"expressions only", schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}, nil, true},
		{"an empty entry matches nobody", schedulingv1alpha1.ReservationOwner{}, nil, false},
	} {
		r := reservation("r", tc.owner)
		keys, keyless := CompileOwners(r).Keys()
		if !slices.Equal(keys, tc.keys) || keyless != tc.keyless {
			t.Errorf("%s: keys %v keyless %v, want %v %v", tc.name, keys, keyless, tc.keys, tc.keyless)
		}
		checkKeys(t, tc.name, r, web)
	}
}

func ownerByLabels(m map[string]string) schedulingv1alpha1.ReservationOwner {
	return schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: m}}
}

func TestUsable(t *testing.T) {
	owner := schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	web := testPod("prod", "web-1", map[string]string{"app": "web"}, nil)
	check := func(name string, r *schedulingv1alpha1.Reservation, pod *corev1.Pod, a *extension.ReservationAffinity, wantOK bool, wantWhy string) {
		t.Helper()
		ok, why := Usable(r, pod, a)
		if ok != wantOK || !strings.Contains(why, wantWhy) {
			t.Errorf("%s: Usable = %v %q, want %v %q", name, ok, why, wantOK, wantWhy)
		}
		// For owners without the reservation-ignored label (what callers
		// of UsableByOwner check first), UsableByOwner gives the same
		// answer and reason.
		if CompileOwners(r).Match(pod) && IgnoredReason(pod) == "" {
			if ok2, why2 := UsableByOwner(r, pod, a); ok2 != ok || why2 != why {
				t.Errorf("%s: UsableByOwner = %v %q, Usable %v %q", name, ok2, why2, ok, why)
			}
			// An open reservation admits every owner without affinity,
			// which is what the scheduler's cache relies on to skip
			// UsableByOwner.
			if a == nil && OpenToOwners(r) && !ok {
				t.Errorf("%s: OpenToOwners, yet an owner without affinity was refused: %q", name, why)
			}
		}
	}
	open := func(name string, r *schedulingv1alpha1.Reservation, want bool) {
		t.Helper()
		if got := OpenToOwners(r); got != want {
			t.Errorf("%s: OpenToOwners = %v, want %v", name, got, want)
		}
	}
	check("available, owner", reservation("r1", owner), web, nil, true, "")
	pending := reservation("r1", owner)
	pending.Status = schedulingv1alpha1.ReservationStatus{}
	check("pending", pending, web, nil, false, "reservation r1 is Pending")
	unsched := reservation("r1", owner)
	unsched.Spec.Unschedulable = true
	check("unschedulable", unsched, web, nil, false, "is unschedulable")
	ignored := testPod("prod", "web-2", map[string]string{"app": "web", extension.LabelReservationIgnored: "true"}, nil)
	check("ignored", reservation("r1", owner), ignored, nil, false, "reservation-ignored=true")
	if why := IgnoredReason(ignored); !strings.Contains(why, "reservation-ignored=true") {
		t.Errorf("IgnoredReason of a labelled pod = %q", why)
	}
	if why := IgnoredReason(web); why != "" {
		t.Errorf("IgnoredReason of an unlabelled pod = %q", why)
	}
	check("not an owner", reservation("r1", owner), testPod("prod", "db", map[string]string{"app": "db"}, nil), nil, false, "not an owner")

	open("available", reservation("r1", owner), true)
	open("pending", pending, false)
	open("unschedulable", unsched, false)

	tainted := reservation("r1", owner)
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	check("untolerated taint", tainted, web, nil, false, "taint dedicated=web:NoSchedule")
	open("NoSchedule taint", tainted, false)
	evicting := reservation("r1", owner)
	evicting.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoExecute}}
	check("untolerated NoExecute taint", evicting, web, nil, false, "taint dedicated=web:NoExecute")
	open("NoExecute taint", evicting, false)
	preferring := reservation("r1", owner)
	preferring.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectPreferNoSchedule}}
	check("PreferNoSchedule taint", preferring, web, nil, true, "")
	open("PreferNoSchedule taint", preferring, true)
	tolerating := web.DeepCopy()
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	check("taint tolerated by the pod", tainted, tolerating, nil, true, "")
	check("taint tolerated by the affinity", tainted, web, &extension.ReservationAffinity{Tolerations: tolerating.Spec.Tolerations}, true, "")

	check("affinity by name", reservation("r1", owner), web, &extension.ReservationAffinity{Name: "r1"}, true, "")
	check("affinity by another name", reservation("r1", owner), web, &extension.ReservationAffinity{Name: "r2"}, false, "names r2, not r1")
	check("affinity selector", reservation("r1", owner), web, &extension.ReservationAffinity{ReservationSelector: map[string]string{"pool": "web"}}, true, "")
	check("affinity selector mismatch", reservation("r1", owner), web, &extension.ReservationAffinity{ReservationSelector: map[string]string{"pool": "db"}}, false, "reservationSelector")
	req := &extension.ReservationAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &extension.ReservationAffinitySelector{
		ReservationSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"db", "batch"}}}}}}}
	check("required terms mismatch", reservation("r1", owner), web, req, false, "requiredDuringScheduling")
	if !RequiresReservation(req) || RequiresReservation(&extension.ReservationAffinity{Tolerations: tolerating.Spec.Tolerations}) || RequiresReservation(nil) {
		t.Error("only an affinity that names or selects reservations makes one mandatory")
	}
}

func TestDerive(t *testing.T) {
	r := reservation("r1")
	alloc := func(name, uid string) map[string]string {
		v, _ := (&extension.ReservationAllocated{Name: name, UID: types.UID(uid)}).Marshal()
		return map[string]string{extension.AnnotationReservationAllocated: v}
	}
	a := testPod("prod", "a", nil, nil)
	a.Annotations = alloc("r1", "uid-r1")
	b := testPod("prod", "b", nil, nil)
	b.Annotations = alloc("r1", "")
	stale := testPod("prod", "stale", nil, nil)
	stale.Annotations = alloc("r1", "uid-of-a-deleted-r1") // a reservation of the same name, since re-created
	done := testPod("prod", "done", nil, nil)
	done.Annotations = alloc("r1", "uid-r1")
	done.Status.Phase = corev1.PodSucceeded
	unbound := testPod("prod", "unbound", nil, nil) // its binding failed after PreBind
	unbound.Annotations = alloc("r1", "uid-r1")
	for _, p := range []*corev1.Pod{a, b, stale, done} {
		p.Spec.NodeName = "n1"
	}
	bad := testPod("prod", "bad", nil, nil)
	bad.Annotations = map[string]string{extension.AnnotationReservationAllocated: "{"}
	other := testPod("prod", "other", nil, nil)
	other.Annotations = alloc("r2", "uid-r2")

	owners, allocated := Derive(r, []*corev1.Pod{b, stale, a, done, bad, other, unbound})
	if len(owners) != 2 || owners[0].Name != "a" || owners[1].Name != "b" {
		t.Errorf("currentOwners %v, want a and b", owners)
	}
	if cpu := allocated[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("allocated cpu %s, want 2", cpu.String())
	}
	left := Remaining(r.Status.Allocatable, allocated)
	if cpu, mem := left[corev1.ResourceCPU], left[corev1.ResourceMemory]; cpu.Cmp(resource.MustParse("2")) != 0 || mem.Cmp(resource.MustParse("4Gi")) != 0 {
		t.Errorf("remaining %v, want 2 CPUs and 4Gi", left)
	}
	over := Remaining(r.Status.Allocatable, res("6", "1Gi"))
	if cpu := over[corev1.ResourceCPU]; cpu.Sign() != 0 {
		t.Errorf("over-allocated remaining cpu %s, want 0", cpu.String())
	}
}

// Owners of an Aligned reservation may request more than it holds; its
// allocated stops at what it holds.
func TestDeriveAlignedStopsAtAllocatable(t *testing.T) {
	r := reservation("r1")
	r.Spec.AllocatePolicy = schedulingv1alpha1.ReservationAllocatePolicyAligned
	v, _ := (&extension.ReservationAllocated{Name: "r1", UID: r.UID}).Marshal()
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} { // 6 CPUs, 12Gi
		p := testPod("prod", name, nil, nil)
		p.Annotations = map[string]string{extension.AnnotationReservationAllocated: v}
		p.Spec.NodeName = "n1"
		pods = append(pods, p)
	}
	owners, allocated := Derive(r, pods)
	if len(owners) != 6 || allocated.Cpu().String() != "4" || allocated.Memory().String() != "8Gi" {
		t.Errorf("owners %d, allocated %v, want 6 owners and 4 CPUs, 8Gi", len(owners), allocated)
	}
}

// Reservations with equal owner specs share one compiled identity, however
// their label maps were built; any difference in the spec keeps them apart.
func TestOwnersSameAs(t *testing.T) {
	sel := func(m map[string]string) schedulingv1alpha1.ReservationOwner {
		return schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: m}}
	}
	ab := map[string]string{"a": "1"}
	ab["b"] = "2"
	ba := map[string]string{"b": "2"}
	ba["a"] = "1"
	r1, r2 := reservation("r1", sel(ab)), reservation("r2", sel(ba))
	r1.UID, r2.UID = "uid-1", "uid-2"
	if !CompileOwners(r1).SameAs(CompileOwners(r2)) {
		t.Error("equal owner specs on two reservations are not the same")
	}
	for name, other := range map[string]schedulingv1alpha1.ReservationOwner{
		"another value":    sel(map[string]string{"a": "1", "b": "3"}),
		"one label less":   sel(map[string]string{"a": "1"}),
		"a controller too": {LabelSelector: sel(ab).LabelSelector, Controller: &schedulingv1alpha1.ReservationControllerReference{Namespace: "prod"}},
	} {
		if CompileOwners(r1).SameAs(CompileOwners(reservation("r3", other))) {
			t.Errorf("%s: different owner specs are the same", name)
		}
	}
}
