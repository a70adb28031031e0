package reservationutil

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

// FuzzUsable feeds arbitrary reservation-affinity annotations through the
// parser and the matcher: never a panic, and a pod naming a reservation is
// never given another.
func FuzzUsable(f *testing.F) {
	f.Add(`{"name":"r1"}`, "web")
	f.Add(`{"reservationSelector":{"pool":"web"}}`, "web")
	f.Add(`{"requiredDuringSchedulingIgnoredDuringExecution":{"reservationSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["web"]}]}]}}`, "db")
	f.Add(`{"tolerations":[{"key":"dedicated","operator":"Exists"}]}`, "")
	f.Fuzz(func(t *testing.T, affinity, pool string) {
		pod := testPod("prod", "web-1", map[string]string{"app": "web"}, nil)
		pod.Annotations = map[string]string{extension.AnnotationReservationAffinity: affinity}
		a, err := extension.GetReservationAffinity(pod.Annotations)
		if err != nil {
			return
		}
		r := reservation("r1", ownerByLabel("app", "web"))
		r.Labels = map[string]string{"pool": pool}
		checkKeys(t, "fuzz", r, pod)
		ok, why := Usable(r, pod, a)
		if ok && a != nil && a.Name != "" && a.Name != "r1" {
			t.Fatalf("affinity %q names %s but reservation r1 was usable", affinity, a.Name)
		}
		if !ok && why == "" {
			t.Fatalf("affinity %q: refused without a reason", affinity)
		}
		if ok2, _ := UsableByOwner(r, pod, nil); OpenToOwners(r) && !ok2 {
			t.Fatalf("pool %q: OpenToOwners, yet UsableByOwner refused an owner without affinity", pool)
		}
	})
}

func ownerByLabel(k, v string) schedulingv1alpha1.ReservationOwner {
	return schedulingv1alpha1.ReservationOwner{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}
}
