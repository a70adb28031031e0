package podgroup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingsigsv1alpha1 "github.com/koord-project/koord/apis/schedulingsigs/v1alpha1"
)

func TestStatus(t *testing.T) {
	pg := &schedulingsigsv1alpha1.PodGroup{Spec: schedulingsigsv1alpha1.PodGroupSpec{MinMember: 3}}
	pod := func(node string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{Name: "job", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	for _, c := range []struct {
		name string
		pods []corev1.Pod
		want schedulingsigsv1alpha1.PodGroupPhase
	}{
		{"none", nil, schedulingsigsv1alpha1.PodGroupPending},
		{"pending", []corev1.Pod{pod("", corev1.PodPending), pod("", corev1.PodPending), pod("", corev1.PodPending)}, schedulingsigsv1alpha1.PodGroupPending},
		{"partly scheduled", []corev1.Pod{pod("n", corev1.PodPending), pod("", corev1.PodPending), pod("", corev1.PodPending)}, schedulingsigsv1alpha1.PodGroupScheduling},
		{"scheduled", []corev1.Pod{pod("n", corev1.PodPending), pod("n", corev1.PodPending), pod("n", corev1.PodPending)}, schedulingsigsv1alpha1.PodGroupScheduled},
		{"running", []corev1.Pod{pod("n", corev1.PodRunning), pod("n", corev1.PodRunning), pod("n", corev1.PodSucceeded)}, schedulingsigsv1alpha1.PodGroupRunning},
		{"finished", []corev1.Pod{pod("n", corev1.PodSucceeded), pod("n", corev1.PodSucceeded), pod("n", corev1.PodSucceeded)}, schedulingsigsv1alpha1.PodGroupFinished},
		{"failed", []corev1.Pod{pod("n", corev1.PodRunning), pod("n", corev1.PodFailed), pod("n", corev1.PodRunning)}, schedulingsigsv1alpha1.PodGroupFailed},
	} {
		st := Status(pg, c.pods)
		if st.Phase != c.want {
			t.Errorf("%s: phase %s, want %s (%+v)", c.name, st.Phase, c.want, st)
		}
		if c.want != schedulingsigsv1alpha1.PodGroupPending && (st.ScheduleStartTime.IsZero() || st.OccupiedBy != "ns/job") {
			t.Errorf("%s: start %v occupiedBy %q", c.name, st.ScheduleStartTime, st.OccupiedBy)
		}
	}
}
