package extension

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// ReservationAffinitySelector is a required reservation selector; terms are
// ORed, the expressions inside a term ANDed (the NodeSelector semantics, applied
// to the labels of Reservations).
type ReservationAffinitySelector struct {
	ReservationSelectorTerms []corev1.NodeSelectorTerm `json:"reservationSelectorTerms,omitempty"`
}

// ReservationAffinity is the value of scheduling.koordinator.sh/reservation-affinity.
type ReservationAffinity struct {
	// Name is one reservation the pod must use.
	Name string `json:"name,omitempty"`
	// ReservationSelector matches reservation labels exactly.
	ReservationSelector map[string]string `json:"reservationSelector,omitempty"`
	// RequiredDuringSchedulingIgnoredDuringExecution matches reservation labels by expression.
	RequiredDuringSchedulingIgnoredDuringExecution *ReservationAffinitySelector `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// Tolerations let the pod use reservations with these taints.
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// GetReservationAffinity parses the pod's reservation-affinity annotation; nil
// without error when the pod has none.
func GetReservationAffinity(annotations map[string]string) (*ReservationAffinity, error) {
	v, ok := annotations[AnnotationReservationAffinity]
	if !ok {
		return nil, nil
	}
	a := &ReservationAffinity{}
	if err := decodeJSON(v, a); err != nil {
		return nil, annotationError(AnnotationReservationAffinity, err)
	}
	if err := a.validate(); err != nil {
		return nil, annotationError(AnnotationReservationAffinity, err)
	}
	return a, nil
}

func (a *ReservationAffinity) validate() error {
	if a.Name != "" {
		if errs := validation.IsDNS1123Subdomain(a.Name); len(errs) > 0 {
			return fmt.Errorf("name %q: %s", a.Name, errs[0])
		}
	}
	for k, v := range a.ReservationSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("reservationSelector key %q: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("reservationSelector %q value %q: %s", k, v, errs[0])
		}
	}
	if r := a.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		if len(r.ReservationSelectorTerms) == 0 {
			return errors.New("requiredDuringSchedulingIgnoredDuringExecution has no reservationSelectorTerms")
		}
		if _, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: r.ReservationSelectorTerms}); err != nil {
			return fmt.Errorf("requiredDuringSchedulingIgnoredDuringExecution: %w", err)
		}
	}
	for i, t := range a.Tolerations {
		switch t.Operator {
		case "", corev1.TolerationOpEqual, corev1.TolerationOpExists:
		default:
			return fmt.Errorf("tolerations[%d]: operator %q is not Equal or Exists", i, t.Operator)
		}
		if t.Operator == corev1.TolerationOpExists && t.Value != "" {
			return fmt.Errorf("tolerations[%d]: value must be empty with operator Exists", i)
		}
	}
	return nil
}

// ReservationAllocated is the value of scheduling.koordinator.sh/reservation-allocated.
type ReservationAllocated struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid,omitempty"`
}

// GetReservationAllocated parses the pod's reservation-allocated annotation;
// nil without error when the pod consumed no reservation.
func GetReservationAllocated(annotations map[string]string) (*ReservationAllocated, error) {
	v, ok := annotations[AnnotationReservationAllocated]
	if !ok {
		return nil, nil
	}
	a := &ReservationAllocated{}
	if err := decodeJSON(v, a); err != nil {
		return nil, annotationError(AnnotationReservationAllocated, err)
	}
	if a.Name == "" {
		return nil, annotationError(AnnotationReservationAllocated, errors.New("name is empty"))
	}
	return a, nil
}

// Marshal is the annotation value.
func (a *ReservationAllocated) Marshal() (string, error) {
	b, err := json.Marshal(a)
	return string(b), err
}

// IsReservationIgnored reports whether the pod opted out of reservations.
func IsReservationIgnored(pod *corev1.Pod) bool {
	return pod.Labels[LabelReservationIgnored] == "true"
}

// AnnotationReservationOwnersAnyNamespace set to "true" on a Reservation
// lets its owners given by labelSelector (or by controller name without a
// namespace) be pods of every namespace, as in Koordinator. Without it they
// are pods of the reservation template's namespace only ("default" when the
// template names none): a Reservation is cluster-scoped, and any tenant
// could otherwise label its pods like another namespace's owners and
// consume what was reserved for them. Koord's own key.
const AnnotationReservationOwnersAnyNamespace = "koord.sh/reservation-owners-any-namespace"
