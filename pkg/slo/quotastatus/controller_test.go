package quotastatus

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

// The figures are written once per MinInterval however many events come:
// a reconcile sooner than that computes nothing and comes back when the
// interval is over, and then writes what changed meanwhile.
func TestReconcileAtMostOncePerInterval(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, schedulingv1alpha1.AddToScheme, schedulingsigsv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu("1")}}}}}
	}
	eq := &schedulingsigsv1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"},
		Spec: schedulingsigsv1alpha1.ElasticQuotaSpec{Min: cpu("2"), Max: cpu("4")}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: cpu("8")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(eq).WithObjects(eq, node, pod("p1")).Build()
	r := &Reconciler{Client: c, MinInterval: time.Hour}
	ctx := context.Background()
	used := func() string {
		var got schedulingsigsv1alpha1.ElasticQuota
		if err := c.Get(ctx, client.ObjectKeyFromObject(eq), &got); err != nil {
			t.Fatal(err)
		}
		return got.Status.Used.Cpu().String() + " " + got.Annotations[extension.AnnotationRequest]
	}

	if res, err := r.Reconcile(ctx, ctrl.Request{}); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("first reconcile: %v, %v", res, err)
	}
	if got := used(); got != `1 {"cpu":"1"}` {
		t.Fatalf("after the first reconcile: %s", got)
	}
	p2 := pod("p2")
	p2.Labels = map[string]string{extension.LabelPreemptible: "false"}
	if err := c.Create(ctx, p2); err != nil {
		t.Fatal(err)
	}
	res, err := r.Reconcile(ctx, ctrl.Request{})
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Hour {
		t.Fatalf("a reconcile within the interval: %v, %v; want a requeue within the hour", res, err)
	}
	if got := used(); got != `1 {"cpu":"1"}` {
		t.Fatalf("a reconcile within the interval wrote %s", got)
	}
	r.last = time.Now().Add(-time.Hour) // the interval is over
	if _, err := r.Reconcile(ctx, ctrl.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := used(); got != `2 {"cpu":"2"}` {
		t.Fatalf("after the interval: %s, want the second pod counted", got)
	}
	var got schedulingsigsv1alpha1.ElasticQuota
	if err := c.Get(ctx, client.ObjectKeyFromObject(eq), &got); err != nil {
		t.Fatal(err)
	}
	if np := got.Annotations[extension.AnnotationNonPreemptibleUsed]; np != `{"cpu":"1"}` {
		t.Errorf("non-preemptible-used %s, want the second pod's 1 CPU", np)
	}
}

// A parent's non-preemptible figures are its subtree's; pending pods ask
// but do not hold; preemptible pods count in neither.
func TestComputeNonPreemptible(t *testing.T) {
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	eqs := []schedulingsigsv1alpha1.ElasticQuota{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "org", Labels: map[string]string{extension.LabelQuotaIsParent: "true"}},
			Spec: schedulingsigsv1alpha1.ElasticQuotaSpec{Min: cpu("4"), Max: cpu("8")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: "team", Labels: map[string]string{extension.LabelQuotaParent: "org"}},
			Spec: schedulingsigsv1alpha1.ElasticQuotaSpec{Min: cpu("4"), Max: cpu("8")}},
	}
	pod := func(name, node string, preemptible string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "org", Name: name, UID: types.UID(name),
			Labels: map[string]string{extension.LabelQuotaName: "team", extension.LabelPreemptible: preemptible}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu("1")}}}}}
	}
	pods := []corev1.Pod{pod("placed", "n1", "false"), pod("pending", "", "false"), pod("ordinary", "n1", "")}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Allocatable: cpu("8")}}}
	f := Compute(eqs, pods, nodes, nil)
	for _, name := range []string{"team", "org"} {
		if used, req := f.NonPreemptibleUsed[name][corev1.ResourceCPU], f.NonPreemptibleRequest[name][corev1.ResourceCPU]; used != 1000 || req != 2000 {
			t.Errorf("%s: non-preemptible used %d, request %d (milli-CPU), want 1000 and 2000", name, used, req)
		}
	}
}
