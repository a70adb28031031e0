package migration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

// A job for a pod the descheduler would never move fails with
// ForbiddenMigratePod, saying why, and nothing is reserved or evicted; until
// the guard's rules are set, a job waits.
func TestGuardFailsForbiddenJobs(t *testing.T) {
	pod := func(ns, name string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name), Annotations: annotations}, Spec: corev1.PodSpec{NodeName: "n1"}}
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{pod("kube-system", "coredns", nil), "namespace kube-system is not one the descheduler moves pods of"},
		{pod("default", "precious", map[string]string{extension.AnnotationEvictionCost: "2147483647"}), "is 2147483647: it is never moved"},
		{pod("default", "filtered", nil), "the descheduler's evictor does not move it"},
	} {
		s := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(s)
		_ = schedulingv1alpha1.AddToScheme(s)
		job := &schedulingv1alpha1.PodMigrationJob{ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "j", CreationTimestamp: metav1.Now()},
			Spec: schedulingv1alpha1.PodMigrationJobSpec{PodRef: &corev1.ObjectReference{Namespace: tc.pod.Namespace, Name: tc.pod.Name}}}
		c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.pod, job).WithStatusSubresource(job).Build()
		args := &v1alpha2.MigrationControllerArgs{}
		args.Default()
		kube := kubefake.NewClientset(tc.pod)
		g := &Guard{}
		r := &Reconciler{Client: c, Kube: kube, Args: args, Guard: g, Recorder: record.NewFakeRecorder(10)}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "j"}}
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), req.NamespacedName, job); err != nil || job.Status.Phase != schedulingv1alpha1.PodMigrationJobPending {
			t.Errorf("%s: before the guard's rules: phase %q (%v), want Pending", tc.pod.Name, job.Status.Phase, err)
		}
		g.Set(GuardRules{Namespace: func(ns string) bool { return ns != "kube-system" }, Filter: func(p *corev1.Pod) bool { return p.Name != "filtered" }})
		if _, err := r.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		_ = c.Get(t.Context(), req.NamespacedName, job)
		if job.Status.Phase != schedulingv1alpha1.PodMigrationJobFailed || job.Status.Reason != schedulingv1alpha1.PodMigrationJobReasonForbiddenMigratePod || !strings.Contains(job.Status.Message, tc.want) {
			t.Errorf("%s: job %s %s %q, want Failed ForbiddenMigratePod saying %q", tc.pod.Name, job.Status.Phase, job.Status.Reason, job.Status.Message, tc.want)
		}
		for _, a := range kube.Actions() {
			if a.GetSubresource() == "eviction" {
				t.Errorf("%s: evicted", tc.pod.Name)
			}
		}
	}
}
