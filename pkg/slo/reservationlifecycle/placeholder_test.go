package reservationlifecycle

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
)

// A placeholder carries what decides where the template fits, and nothing
// that would give it power if it ever ran: the user's image, command,
// service account token, volumes, host namespaces and privileges stay
// behind.
func TestPlaceholderKeepsOnlySchedulingFields(t *testing.T) {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	res := &schedulingv1alpha1.Reservation{
		ObjectMeta: metav1.ObjectMeta{Name: "r1", UID: "uid-r1"},
		Spec: schedulingv1alpha1.ReservationSpec{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				NodeName:           "n1",
				ServiceAccountName: "admin",
				HostNetwork:        true,
				HostPID:            true,
				Tolerations:        []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
				PriorityClassName:  "koord-prod",
				Volumes:            []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
				Containers: []corev1.Container{{
					Name: "web", Image: "attacker/miner", Command: []string{"mine"},
					Resources:       corev1.ResourceRequirements{Requests: req, Limits: req},
					Ports:           []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 9090}},
					SecurityContext: &corev1.SecurityContext{Privileged: ptrTo(true)},
					VolumeMounts:    []corev1.VolumeMount{{Name: "root", MountPath: "/host"}},
				}},
			},
		}},
	}
	p := Placeholder(res, types.NamespacedName{Namespace: "koord-system", Name: "reservation-r1"})
	s := p.Spec
	if s.ServiceAccountName != "" || s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken || s.HostNetwork || s.HostPID || len(s.Volumes) != 0 {
		t.Errorf("the placeholder keeps power it must not have: %+v", s)
	}
	c := s.Containers[0]
	if c.Image != PlaceholderImage || c.Command != nil || c.SecurityContext != nil || len(c.VolumeMounts) != 0 {
		t.Errorf("the placeholder's container runs the template: %+v", c)
	}
	if !c.Resources.Requests.Cpu().Equal(resource.MustParse("2")) || len(c.Ports) != 1 || c.Ports[0].HostPort != 8080 {
		t.Errorf("the placeholder lost what places it: resources %v, ports %v", c.Resources, c.Ports)
	}
	if s.NodeName != "" || s.Affinity == nil || s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "n1" {
		t.Errorf("nodeName not turned into a node affinity: %+v", s.Affinity)
	}
	if len(s.Tolerations) != 1 || s.PriorityClassName != "koord-prod" || p.Labels["app"] != "web" || s.SchedulerName != SchedulerName {
		t.Errorf("scheduling fields lost: %+v", p)
	}
	t.Setenv("POD_NAMESPACE", "")
	if reservationutil.PlaceholderOf(p) != "r1" {
		t.Errorf("koord-scheduler does not recognise it as r1's placeholder")
	}
	elsewhere := p.DeepCopy()
	elsewhere.Namespace = "tenant"
	if reservationutil.PlaceholderOf(elsewhere) != "" {
		t.Errorf("a copy in a tenant's namespace passes for a placeholder")
	}
}

func ptrTo[T any](v T) *T { return &v }
