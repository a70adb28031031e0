package frameworkext_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

func TestCarried(t *testing.T) {
	for _, tc := range []struct {
		bind []string
		want bool
	}{
		{[]string{"Reservation", "NodeNUMAResource", "DefaultBinder"}, true},
		{[]string{"NodeNUMAResource", "DefaultBinder"}, true},
		{[]string{"DefaultBinder", "Reservation"}, false},
		{nil, false},
	} {
		ext := frameworkext.NewExtender()
		ext.RegisterBinder("Reservation")
		ext.RegisterBinder("NodeNUMAResource")
		if got := ext.Carried(&frameworkexttest.Handle{Bind: tc.bind}); got != tc.want {
			t.Errorf("bind %v: Carried %v, want %v", tc.bind, got, tc.want)
		}
	}
	// A handle that cannot list its plugins: PreBind patches.
	ext := frameworkext.NewExtender()
	ext.RegisterBinder("Reservation")
	if ext.Carried(struct{ fwk.Handle }{}) {
		t.Error("a handle without ListPlugins carries")
	}
}

func TestBindCarriesAnnotations(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-p"}}
	h := &frameworkexttest.Handle{Client: fake.NewClientset(pod)}
	ctx := context.Background()

	// Nothing recorded: the next binder binds.
	cs := framework.NewCycleState()
	if s := frameworkext.Bind(ctx, h, cs, pod, "n1"); !s.IsSkip() {
		t.Fatalf("nothing recorded: %v, want Skip", s)
	}
	if n := len(frameworkexttest.Sent(h.Client)); n != 0 {
		t.Fatalf("%d bindings sent with nothing recorded", n)
	}

	// Two plugins record; a Clone (the framework clones cycle states) sees both.
	frameworkext.Add(cs, "a", "1", nil)
	frameworkext.Add(cs.Clone(), "b", "2", nil)
	if v, ok := frameworkext.Pending(cs, "b"); !ok || v != "2" {
		t.Fatalf("Pending b = %q %v", v, ok)
	}
	if s := frameworkext.Bind(ctx, h, cs, pod, "n1"); !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	sent := frameworkexttest.Sent(h.Client)
	if len(sent) != 1 {
		t.Fatalf("%d bindings sent, want 1", len(sent))
	}
	b := sent[0]
	if b.Name != "p" || b.UID != "uid-p" || b.Target.Kind != "Node" || b.Target.Name != "n1" || b.Annotations["a"] != "1" || b.Annotations["b"] != "2" || len(b.Annotations) != 2 {
		t.Errorf("binding %+v", b)
	}

	// A failing check refuses the binding and sends nothing.
	cs = framework.NewCycleState()
	frameworkext.Add(cs, "a", "1", func() *fwk.Status { return fwk.NewStatus(fwk.Unschedulable, "CPUs taken") })
	if s := frameworkext.Bind(ctx, h, cs, pod, "n1"); s.Code() != fwk.Unschedulable || s.Message() != "CPUs taken" {
		t.Errorf("failing check: %v", s)
	}
	if n := len(frameworkexttest.Sent(h.Client)); n != 1 {
		t.Errorf("%d bindings sent in all, want the first only", n)
	}
}
