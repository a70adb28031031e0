// Package reservation is what koord-scheduler's Reservation plugin and
// koord-manager's reservation controller both need to know about a
// Reservation: who may use it, what it holds, and what its status is,
// derived from the pods that use it.
package reservation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

// IsOwner reports whether pod matches any entry of r's spec.owners. Within
// one entry every field that is set must match (object, controller and
// labelSelector are ANDed); entries are alternatives.
func IsOwner(r *schedulingv1alpha1.Reservation, pod *corev1.Pod) bool {
	return CompileOwners(r).Match(pod)
}

// Owners is a reservation's spec.owners with its label selectors parsed
// once, for callers that match many pods against one reservation.
type Owners struct {
	entries   []schedulingv1alpha1.ReservationOwner
	selectors []labels.Selector // nil where the entry has none; Nothing() where it is invalid
}

// CompileOwners parses r's owner selectors.
func CompileOwners(r *schedulingv1alpha1.Reservation) Owners {
	o := Owners{entries: r.Spec.Owners, selectors: make([]labels.Selector, len(r.Spec.Owners))}
	for i := range r.Spec.Owners {
		if ls := r.Spec.Owners[i].LabelSelector; ls != nil {
			sel, err := metav1.LabelSelectorAsSelector(ls)
			if err != nil {
				sel = labels.Nothing()
			}
			o.selectors[i] = sel
		}
	}
	return o
}

// Match reports whether pod matches any entry.
func (o Owners) Match(pod *corev1.Pod) bool {
	for i := range o.entries {
		if ownerMatches(&o.entries[i], o.selectors[i], pod) {
			return true
		}
	}
	return false
}

func ownerMatches(o *schedulingv1alpha1.ReservationOwner, sel labels.Selector, pod *corev1.Pod) bool {
	if o.Object == nil && o.Controller == nil && o.LabelSelector == nil {
		return false // an empty entry matches nothing, not everything
	}
	if obj := o.Object; obj != nil {
		if obj.Kind != "" && obj.Kind != "Pod" {
			return false
		}
		if obj.Namespace != pod.Namespace || obj.Name != pod.Name || (obj.UID != "" && obj.UID != pod.UID) {
			return false
		}
	}
	if c := o.Controller; c != nil {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			return false
		}
		if c.Namespace != "" && c.Namespace != pod.Namespace {
			return false
		}
		switch {
		case c.UID != "":
			if c.UID != ref.UID {
				return false
			}
		case c.Name == "" || c.Name != ref.Name || (c.Kind != "" && c.Kind != ref.Kind) || (c.APIVersion != "" && c.APIVersion != ref.APIVersion):
			return false
		}
	}
	if sel != nil && !sel.Matches(labels.Set(pod.Labels)) {
		return false
	}
	return true
}

// IsAvailable reports whether r holds resources on a node now.
func IsAvailable(r *schedulingv1alpha1.Reservation) bool {
	return r.Status.Phase == schedulingv1alpha1.ReservationAvailable && r.Status.NodeName != ""
}

// Usable says whether pod may consume r, and when not, why (for the pod's
// unschedulable reason). affinity is the pod's parsed reservation-affinity
// annotation (nil when absent).
func Usable(r *schedulingv1alpha1.Reservation, pod *corev1.Pod, affinity *extension.ReservationAffinity) (bool, string) {
	return UsableBy(r, CompileOwners(r), pod, affinity)
}

// UsableBy is Usable with r's owners already compiled.
func UsableBy(r *schedulingv1alpha1.Reservation, owners Owners, pod *corev1.Pod, affinity *extension.ReservationAffinity) (bool, string) {
	switch {
	case !IsAvailable(r):
		return false, fmt.Sprintf("reservation %s is %s", r.Name, phaseOf(r))
	case r.Spec.Unschedulable:
		return false, fmt.Sprintf("reservation %s is unschedulable", r.Name)
	case extension.IsReservationIgnored(pod):
		return false, fmt.Sprintf("the pod is labelled %s=true", extension.LabelReservationIgnored)
	case !owners.Match(pod):
		return false, fmt.Sprintf("the pod is not an owner of reservation %s", r.Name)
	}
	tolerations := pod.Spec.Tolerations
	if affinity != nil && len(affinity.Tolerations) > 0 {
		tolerations = append(append([]corev1.Toleration(nil), tolerations...), affinity.Tolerations...)
	}
	for i := range r.Spec.Taints {
		t := &r.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		// Gt/Lt toleration operators are alpha in 1.37: off, as in kube-scheduler by default.
		if !v1helper.TolerationsTolerateTaint(klog.Background(), tolerations, t, false) {
			return false, fmt.Sprintf("reservation %s has taint %s=%s:%s the pod does not tolerate", r.Name, t.Key, t.Value, t.Effect)
		}
	}
	if ok, why := AffinityMatches(affinity, r); !ok {
		return false, why
	}
	return true, ""
}

// AffinityMatches applies a pod's reservation-affinity to r: by name, by a
// label map, and by required selector terms over r's labels (ANDed).
func AffinityMatches(a *extension.ReservationAffinity, r *schedulingv1alpha1.Reservation) (bool, string) {
	if a == nil {
		return true, ""
	}
	if a.Name != "" && a.Name != r.Name {
		return false, fmt.Sprintf("reservation-affinity names %s, not %s", a.Name, r.Name)
	}
	if len(a.ReservationSelector) > 0 && !labels.SelectorFromSet(a.ReservationSelector).Matches(labels.Set(r.Labels)) {
		return false, fmt.Sprintf("reservation %s does not match reservation-affinity reservationSelector", r.Name)
	}
	if req := a.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: req.ReservationSelectorTerms})
		// The annotation was validated when parsed; an error here matches nothing.
		if err != nil || !sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: r.Labels}}) {
			return false, fmt.Sprintf("reservation %s does not match reservation-affinity requiredDuringSchedulingIgnoredDuringExecution", r.Name)
		}
	}
	return true, ""
}

// RequiresReservation reports whether the pod's affinity makes a reservation
// mandatory: a pod naming a reservation or selecting reservations may only
// run on one, and stays pending otherwise.
func RequiresReservation(a *extension.ReservationAffinity) bool {
	return a != nil && (a.Name != "" || len(a.ReservationSelector) > 0 || a.RequiredDuringSchedulingIgnoredDuringExecution != nil)
}

func phaseOf(r *schedulingv1alpha1.Reservation) string {
	if r.Status.Phase == "" {
		return string(schedulingv1alpha1.ReservationPending)
	}
	if r.Status.Phase == schedulingv1alpha1.ReservationAvailable && r.Status.NodeName == "" {
		return "Available without a node"
	}
	return string(r.Status.Phase)
}

// PlaceholderAnnotation marks the pod koord-manager creates to have a
// Pending reservation scheduled: its value is the reservation's name, and the
// pod is owned by the reservation. koord-scheduler places it like any pod
// built from the reservation's template, then, instead of binding it, makes
// the reservation Available on the chosen node and deletes it; it never
// reaches a kubelet.
const PlaceholderAnnotation = "scheduling.koordinator.sh/reservation-placeholder"

// PlaceholderOf is the reservation a pod stands in for, "" for ordinary pods.
func PlaceholderOf(pod *corev1.Pod) string {
	return pod.Annotations[PlaceholderAnnotation]
}
