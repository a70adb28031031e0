package migration

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/koord-project/koord/apis/descheduler/v1alpha2"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

func arbitrationCase(t *testing.T, replicas int32, edit func(*v1alpha2.MigrationControllerArgs), jobs ...*schedulingv1alpha1.PodMigrationJob) string {
	t.Helper()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("rs-uid")}, Spec: appsv1.ReplicaSetSpec{Replicas: &replicas}}
	ref := *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	var objs []client.Object
	for i, node := range []string{"n1", "n1", "n2", "n2"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-" + string(rune('a'+i)), OwnerReferences: []metav1.OwnerReference{ref}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
	}
	for _, j := range jobs {
		objs = append(objs, j)
	}
	job := &schedulingv1alpha1.PodMigrationJob{ObjectMeta: metav1.ObjectMeta{Name: "new", UID: "new"}}
	objs = append(objs, job)
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = schedulingv1alpha1.AddToScheme(s)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&schedulingv1alpha1.PodMigrationJob{}).Build()
	args := &v1alpha2.MigrationControllerArgs{}
	args.Default()
	args.ObjectLimiters = map[string]v1alpha2.MigrationObjectLimiter{}
	if edit != nil {
		edit(args)
	}
	r := &Reconciler{Client: c, Kube: kubefake.NewClientset(rs), Args: args, Now: func() time.Time { return time.Now() }}
	pod := objs[0].(*corev1.Pod)
	return r.arbitrate(t.Context(), job, pod)
}

func running(name, node string) *schedulingv1alpha1.PodMigrationJob {
	return &schedulingv1alpha1.PodMigrationJob{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.Now(),
		Annotations: map[string]string{AnnotationSourceNode: node, AnnotationWorkload: "rs-uid"}},
		Spec:   schedulingv1alpha1.PodMigrationJobSpec{PodRef: &corev1.ObjectReference{Namespace: "ns", Name: "web-b"}},
		Status: schedulingv1alpha1.PodMigrationJobStatus{Phase: schedulingv1alpha1.PodMigrationJobRunning}}
}

// Koordinator's limits, each on its own: the job waits, saying which.
func TestArbitrate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int32
		edit     func(*v1alpha2.MigrationControllerArgs)
		jobs     []*schedulingv1alpha1.PodMigrationJob
		want     string
	}{
		{"nothing in progress", 4, nil, nil, ""},
		{"maxMigratingPerNode", 4, func(a *v1alpha2.MigrationControllerArgs) { a.MaxMigratingPerNode = ptr.To[int32](1) },
			[]*schedulingv1alpha1.PodMigrationJob{running("j1", "n1")}, "maxMigratingPerNode: 1 jobs are moving pods off node n1"},
		{"another node's job does not count", 4, func(a *v1alpha2.MigrationControllerArgs) { a.MaxMigratingPerNode = ptr.To[int32](1) },
			[]*schedulingv1alpha1.PodMigrationJob{running("j1", "n2")}, ""},
		{"maxMigratingGlobally", 4, func(a *v1alpha2.MigrationControllerArgs) { a.MaxMigratingGlobally = ptr.To[int32](1) },
			[]*schedulingv1alpha1.PodMigrationJob{running("j1", "n2")}, "maxMigratingGlobally"},
		{"maxMigratingPerNamespace", 4, func(a *v1alpha2.MigrationControllerArgs) { a.MaxMigratingPerNamespace = ptr.To[int32](1) },
			[]*schedulingv1alpha1.PodMigrationJob{running("j1", "n2")}, "maxMigratingPerNamespace"},
		{"maxMigratingPerWorkload", 4, func(a *v1alpha2.MigrationControllerArgs) { a.MaxMigratingPerWorkload = ptr.To(intstr.FromInt32(1)) },
			[]*schedulingv1alpha1.PodMigrationJob{running("j1", "n2")}, "maxMigratingPerWorkload: 1 of ReplicaSet web's pods are moving"},
		{"maxMigratingPerWorkload as a percentage", 4, func(a *v1alpha2.MigrationControllerArgs) {
			a.MaxMigratingPerWorkload = ptr.To(intstr.FromString("50%"))
		},
			[]*schedulingv1alpha1.PodMigrationJob{running("j1", "n2")}, ""},
		{"maxUnavailablePerWorkload", 4, func(a *v1alpha2.MigrationControllerArgs) { a.MaxUnavailablePerWorkload = ptr.To(intstr.FromInt32(1)) },
			[]*schedulingv1alpha1.PodMigrationJob{running("j1", "n2")}, "maxUnavailablePerWorkload: 1 of ReplicaSet web's pods"},
		{"a workload no bigger than the limit", 1, func(a *v1alpha2.MigrationControllerArgs) { a.MaxUnavailablePerWorkload = ptr.To(intstr.FromInt32(1)) },
			nil, "has 1 replicas, no more than maxUnavailablePerWorkload 1"},
		{"... unless skipCheckExpectedReplicas", 1, func(a *v1alpha2.MigrationControllerArgs) {
			a.MaxUnavailablePerWorkload = ptr.To(intstr.FromInt32(1))
			a.SkipCheckExpectedReplicas = ptr.To(true)
		}, nil, ""},
		{"skipEvictionGates", 4, func(a *v1alpha2.MigrationControllerArgs) {
			a.MaxMigratingPerNode = ptr.To[int32](1)
			a.SkipEvictionGates = []string{"MaxMigratingPerNode"}
		}, []*schedulingv1alpha1.PodMigrationJob{running("j1", "n1")}, ""},
		{"objectLimiters.workload", 4, func(a *v1alpha2.MigrationControllerArgs) {
			a.ObjectLimiters = map[string]v1alpha2.MigrationObjectLimiter{"workload": {Duration: metav1.Duration{Duration: 5 * time.Minute}}}
		}, []*schedulingv1alpha1.PodMigrationJob{func() *schedulingv1alpha1.PodMigrationJob {
			j := running("done", "n2")
			j.Status.Phase = schedulingv1alpha1.PodMigrationJobSucceeded
			return j
		}()}, "objectLimiters.workload: ReplicaSet web had 1 moves in the last 5m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := arbitrationCase(t, tc.replicas, tc.edit, tc.jobs...)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The replacement's reservation is kept off the pod's node in every term.
func TestAvoid(t *testing.T) {
	spec := &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}, {}}}}}}
	avoid(spec, "n1")
	for i, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchFields) != 1 || term.MatchFields[0].Key != "metadata.name" || term.MatchFields[0].Values[0] != "n1" {
			t.Errorf("term %d: %+v", i, term)
		}
	}
	bare := &corev1.PodSpec{}
	avoid(bare, "n2")
	if terms := bare.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) != 1 || terms[0].MatchFields[0].Values[0] != "n2" {
		t.Errorf("%+v", terms)
	}
}
