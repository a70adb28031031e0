package frameworkext_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/pkg/scheduler/frameworkext"
	"github.com/koord-project/koord/pkg/scheduler/frameworkext/frameworkexttest"
)

// A turned-away pod is activated once per change that may let it in, and
// not again until it is turned away again; a pod placed or deleted meanwhile
// is not activated at all.
func TestRejectedActivatesOnce(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)}}
	}
	var r frameworkext.Rejected
	h := &frameworkexttest.Handle{}
	r.Add(pod("a"))
	r.Add(pod("a")) // turned away again in another cycle
	r.Add(pod("b"))
	r.Add(pod("placed"))
	r.Forget("placed")
	r.Activate(klog.Background(), nil) // no handle yet: nothing lost
	if r.Len() != 2 {
		t.Fatalf("%d remembered, want a and b", r.Len())
	}
	r.Activate(klog.Background(), h)
	if got := h.Activated(); !slices.Equal(got, []string{"default/a", "default/b"}) {
		t.Errorf("activated %v, want default/a and default/b", got)
	}
	r.Activate(klog.Background(), h)
	if got := h.Activated(); len(got) != 2 || r.Len() != 0 {
		t.Errorf("activated again with nothing turned away: %v", got)
	}
}
