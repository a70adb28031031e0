// Package reservation is what koord-scheduler's Reservation plugin and
// koord-manager's reservation controller both need to know about a
// Reservation: who may use it, what it holds, and what its status is,
// derived from the pods that use it.
package reservationutil

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"unique"

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
	// namespace is where owners named by labelSelector or by controller
	// name alone must be (OwnerNamespace); "" is every namespace.
	namespace string
	// spec names the owners as written: reservations made for one workload
	// usually share them, and a pod checked against a node's reservations
	// needs matching once per distinct spec (SameAs).
	spec unique.Handle[string]
}

// OwnerNamespace is the namespace r's owners given by labelSelector, or by
// controller name without a namespace, must be in: its template's ("default"
// when it names none), or "" (any) when r is annotated
// koord.sh/reservation-owners-any-namespace=true.
func OwnerNamespace(r *schedulingv1alpha1.Reservation) string {
	if r.Annotations[extension.AnnotationReservationOwnersAnyNamespace] == "true" {
		return ""
	}
	if t := r.Spec.Template; t != nil && t.Namespace != "" {
		return t.Namespace
	}
	return metav1.NamespaceDefault
}

// HeldToNamespace says whether owner entry o finds its pods by something
// that does not name their namespace, labels or a controller's name alone,
// and so is held to OwnerNamespace. An object names its namespace and a
// controller's UID is unique.
func HeldToNamespace(o *schedulingv1alpha1.ReservationOwner) bool {
	return o.Object == nil && (o.Controller == nil || (o.Controller.UID == "" && o.Controller.Namespace == ""))
}

// CompileOwners parses r's owner selectors.
func CompileOwners(r *schedulingv1alpha1.Reservation) Owners {
	o := Owners{entries: r.Spec.Owners, selectors: make([]labels.Selector, len(r.Spec.Owners)), namespace: OwnerNamespace(r)}
	// encoding/json writes struct fields in order and map keys sorted, so
	// equal specs give equal text. It cannot fail on these types; if it
	// did, the reservation's UID keeps its spec apart from every other.
	if b, err := json.Marshal(r.Spec.Owners); err == nil {
		o.spec = unique.Make(o.namespace + "/" + string(b))
	} else {
		o.spec = unique.Make("uid/" + string(r.UID))
	}
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

// Keys are necessary conditions for matching, one per entry: a pod can
// match an entry only if PodKeys(pod) contains the entry's key, which lets a
// cache of many reservations skip those a pod cannot own without matching
// each. any says that some entry has no such key (a selector of expressions
// only, or an empty one, which matches every pod) and must be tried on every
// pod. Entries that match nothing have no key.
func (o Owners) Keys() (keys []string, any bool) {
	for i := range o.entries {
		e := &o.entries[i]
		switch {
		case e.Object == nil && e.Controller == nil && e.LabelSelector == nil:
		case e.Object != nil:
			if e.Object.Kind == "" || e.Object.Kind == "Pod" {
				keys = append(keys, "object/"+e.Object.Namespace+"/"+e.Object.Name)
			}
		case e.Controller != nil && e.Controller.UID != "":
			keys = append(keys, "controller-uid/"+string(e.Controller.UID))
		case e.Controller != nil:
			if e.Controller.Name != "" {
				keys = append(keys, "controller/"+e.Controller.Name)
			}
		case o.selectors[i].Empty():
			any = true
		case len(e.LabelSelector.MatchLabels) > 0:
			// Any one label the selector requires will do; the smallest
			// key, so that the same selector always gives the same key.
			first := ""
			for k := range e.LabelSelector.MatchLabels {
				if first == "" || k < first {
					first = k
				}
			}
			keys = append(keys, "label/"+first+"="+e.LabelSelector.MatchLabels[first])
		default:
			if !isNothing(o.selectors[i]) {
				any = true
			}
		}
	}
	return keys, any
}

func isNothing(sel labels.Selector) bool {
	_, ok := sel.Requirements()
	return !ok
}

// PodKeys are the keys (see Owners.Keys) pod offers.
func PodKeys(pod *corev1.Pod) []string {
	keys := make([]string, 0, len(pod.Labels)+3)
	keys = append(keys, "object/"+pod.Namespace+"/"+pod.Name)
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		keys = append(keys, "controller-uid/"+string(ref.UID), "controller/"+ref.Name)
	}
	for k, v := range pod.Labels {
		keys = append(keys, "label/"+k+"="+v)
	}
	return keys
}

// SameAs reports whether o and p were compiled from equal owner specs and
// owner namespaces, so that any pod matches both or neither: Match reads
// nothing else of a reservation.
func (o Owners) SameAs(p Owners) bool { return o.spec == p.spec }

// Match reports whether pod matches any entry.
func (o Owners) Match(pod *corev1.Pod) bool {
	for i := range o.entries {
		if ownerMatches(&o.entries[i], o.selectors[i], o.namespace, pod) {
			return true
		}
	}
	return false
}

func ownerMatches(o *schedulingv1alpha1.ReservationOwner, sel labels.Selector, namespace string, pod *corev1.Pod) bool {
	if o.Object == nil && o.Controller == nil && o.LabelSelector == nil {
		return false // an empty entry matches nothing, not everything
	}
	if namespace != "" && HeldToNamespace(o) && pod.Namespace != namespace {
		return false
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
	if ok, why := consumable(r); !ok {
		return false, why
	}
	if why := IgnoredReason(pod); why != "" {
		return false, why
	}
	if !CompileOwners(r).Match(pod) {
		return false, fmt.Sprintf("the pod is not an owner of reservation %s", r.Name)
	}
	return admits(r, pod, affinity)
}

// UsableByOwner is Usable for a pod the caller has matched against r's
// owners and found without the reservation-ignored label (IgnoredReason):
// both depend on the pod, and are most of the cost when a pod is checked
// against every reservation of every node.
func UsableByOwner(r *schedulingv1alpha1.Reservation, pod *corev1.Pod, affinity *extension.ReservationAffinity) (bool, string) {
	if ok, why := consumable(r); !ok {
		return false, why
	}
	return admits(r, pod, affinity)
}

// OpenToOwners reports whether any owner of r without a reservation-affinity
// may consume it: r is consumable and has no taint an owner would have to
// tolerate. Then UsableByOwner(r, pod, nil) holds for every pod, and a cache
// that works this out once per version of r spares the check per pod.
func OpenToOwners(r *schedulingv1alpha1.Reservation) bool {
	if ok, _ := consumable(r); !ok {
		return false
	}
	for i := range r.Spec.Taints {
		if repels(&r.Spec.Taints[i]) {
			return false
		}
	}
	return true
}

// repels says whether a pod must tolerate t to consume the reservation.
func repels(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// IgnoredReason is why pod may consume no reservation at all (it carries the
// reservation-ignored label), "" when it may.
func IgnoredReason(pod *corev1.Pod) string {
	if extension.IsReservationIgnored(pod) {
		return fmt.Sprintf("the pod is labelled %s=true", extension.LabelReservationIgnored)
	}
	return ""
}

// consumable says whether r can be consumed now at all.
func consumable(r *schedulingv1alpha1.Reservation) (bool, string) {
	switch {
	case !IsAvailable(r):
		return false, fmt.Sprintf("reservation %s is %s", r.Name, phaseOf(r))
	case r.Spec.Unschedulable:
		return false, fmt.Sprintf("reservation %s is unschedulable", r.Name)
	}
	return true, ""
}

// admits applies r's taints and the pod's reservation-affinity.
func admits(r *schedulingv1alpha1.Reservation, pod *corev1.Pod, affinity *extension.ReservationAffinity) (bool, string) {
	tolerations := pod.Spec.Tolerations
	if affinity != nil && len(affinity.Tolerations) > 0 {
		tolerations = append(append([]corev1.Toleration(nil), tolerations...), affinity.Tolerations...)
	}
	for i := range r.Spec.Taints {
		t := &r.Spec.Taints[i]
		if !repels(t) {
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

// PlaceholderOf is the reservation a pod stands in for, "" for ordinary
// pods. Only a pod in PlaceholderNamespace, controlled by a Reservation, is
// a placeholder: the annotation alone is something any tenant can write on
// a pod in their own namespace, and the scheduler must not make a
// reservation Available (or skip a pod's accounting) on their say-so.
func PlaceholderOf(pod *corev1.Pod) string {
	name := pod.Annotations[PlaceholderAnnotation]
	if name == "" || pod.Namespace != PlaceholderNamespace() {
		return ""
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "Reservation" || ref.Name != name || !strings.HasPrefix(ref.APIVersion, schedulingv1alpha1.GroupName+"/") {
		return ""
	}
	return name
}

// PlaceholderNamespace is where koord-manager creates placeholder pods: its
// own namespace, which koord-scheduler shares ($POD_NAMESPACE, set by the
// chart for both; koord-system without it).
var PlaceholderNamespace = sync.OnceValue(func() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return DefaultNamespace
})

// DefaultNamespace is Koord's namespace when $POD_NAMESPACE is not set.
const DefaultNamespace = "koord-system"
