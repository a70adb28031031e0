// Package reservationtest helps tests build what koord-manager builds.
package reservationtest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
)

// MakePlaceholder turns pod into reservation's placeholder as koord-manager
// creates it: in Koord's namespace, annotated, controlled by the
// Reservation (what reservationutil.PlaceholderOf checks).
func MakePlaceholder(pod *corev1.Pod, reservation string) *corev1.Pod {
	pod.Namespace = reservationutil.PlaceholderNamespace()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[reservationutil.PlaceholderAnnotation] = reservation
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: schedulingv1alpha1.SchemeGroupVersion.String(), Kind: "Reservation",
		Name: reservation, UID: types.UID("uid-" + reservation), Controller: ptrTrue()}}
	return pod
}

func ptrTrue() *bool { t := true; return &t }
