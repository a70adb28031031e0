package reservation

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

// In the shipped profile (Reservation first under bind) an owner's claim
// rides on its Binding: PreBind has nothing to do and patches nothing.
func TestBindCarriesClaim(t *testing.T) {
	r := withOwners(available("r1", "n1", "2"), "web")
	p := testPlugin(r)
	owner, stranger := appPod("web-1", "web", "2"), appPod("batch-1", "batch", "1")
	owner.Namespace, stranger.Namespace = "prod", "prod"
	h := &frameworkexttest.Handle{Client: fake.NewClientset(owner, stranger), Bind: []string{Name, "NodeNUMAResource", "DefaultBinder"}}
	p.handle = h
	ctx := context.Background()

	// toPreBind runs a pod's cycle on n1 up to PreBind, returning its state
	// and what PreBindPreFlight said.
	toPreBind := func(pod *corev1.Pod) (fwk.CycleState, *fwk.Status) {
		t.Helper()
		cs, st := run(t, p, pod, nodeInfo())
		if !st.IsSuccess() {
			t.Fatal(st)
		}
		if st := p.Reserve(ctx, cs, pod, "n1"); !st.IsSuccess() {
			t.Fatal(st)
		}
		_, preflight := p.PreBindPreFlight(ctx, cs, pod, "n1")
		if st := p.PreBind(ctx, cs, pod, "n1"); !st.IsSuccess() {
			t.Fatal(st)
		}
		return cs, preflight
	}

	cs, preflight := toPreBind(owner)
	if !preflight.IsSkip() {
		t.Errorf("owner: PreBindPreFlight %v, want Skip", preflight)
	}
	if n := frameworkexttest.Patches(h.Client); n != 0 {
		t.Errorf("%d patches before binding, want none", n)
	}
	if st := p.Bind(ctx, cs, owner, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	sent := frameworkexttest.Sent(h.Client)
	if len(sent) != 1 {
		t.Fatalf("%d bindings, want 1", len(sent))
	}
	a, err := extension.GetReservationAllocated(sent[0].Annotations)
	if err != nil || a == nil || a.Name != "r1" || a.UID != r.UID {
		t.Errorf("binding carries %+v (%v), want r1", a, err)
	}

	// A stranger with a stale claim from a failed attempt: a Binding cannot
	// remove an annotation, so PreBind patches it off, and the pod goes on to
	// the next binder.
	stranger.Annotations = map[string]string{extension.AnnotationReservationAllocated: `{"name":"r1","uid":"old"}`}
	if _, err := h.Client.CoreV1().Pods("prod").Update(ctx, stranger, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, preflight = toPreBind(stranger)
	if !preflight.IsSuccess() {
		t.Errorf("stale claim: PreBindPreFlight %v, want Success", preflight)
	}
	if got, _ := h.Client.CoreV1().Pods("prod").Get(ctx, stranger.Name, metav1.GetOptions{}); got.Annotations[extension.AnnotationReservationAllocated] != "" {
		t.Errorf("stale claim still there: %v", got.Annotations)
	}
	if st := p.Bind(ctx, cs, stranger, "n1"); !st.IsSkip() {
		t.Errorf("stranger: Bind %v, want Skip (DefaultBinder binds it)", st)
	}
}
