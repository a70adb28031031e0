package validate

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
	"github.com/koord-project/koord/pkg/reservationutil"
	"github.com/koord-project/koord/pkg/slo/config"
	"github.com/koord-project/koord/pkg/slo/webhook/profile"
)

// ReservationWarnings tell the writer what Koord does differently from
// Koordinator with the Reservation: owners found by labels (or by a
// controller's name alone) are pods of one namespace only.
func ReservationWarnings(r *schedulingv1alpha1.Reservation) []string {
	ns := reservationutil.OwnerNamespace(r)
	if ns == "" {
		return nil
	}
	var out []string
	for i := range r.Spec.Owners {
		if o := &r.Spec.Owners[i]; (o.LabelSelector != nil || o.Controller != nil) && reservationutil.HeldToNamespace(o) {
			out = append(out, fmt.Sprintf("spec.owners[%d]: only pods of namespace %s are owners (the template's); annotate the Reservation %s=true to let pods of every namespace own it, as in Koordinator",
				i, ns, extension.AnnotationReservationOwnersAnyNamespace))
		}
	}
	return out
}

// Reservation checks what the CRD schema cannot: each owner names exactly
// one kind of match and its selector parses, and the template is a pod the
// pod rules would admit (its QoS and priority agree, its annotations parse).
func Reservation(r *schedulingv1alpha1.Reservation) field.ErrorList {
	var errs field.ErrorList
	owners := field.NewPath("spec", "owners")
	if len(r.Spec.Owners) == 0 {
		errs = append(errs, field.Required(owners, "a reservation needs at least one owner (object, controller or labelSelector)"))
	}
	for i := range r.Spec.Owners {
		o := &r.Spec.Owners[i]
		n := 0
		for _, set := range []bool{o.Object != nil, o.Controller != nil, o.LabelSelector != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(owners.Index(i), fmt.Sprintf("%d kinds", n), "an owner sets exactly one of object, controller and labelSelector"))
		}
		if o.LabelSelector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(o.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, owners.Index(i).Child("labelSelector"))...)
		}
	}
	if t := r.Spec.Template; t != nil {
		pod := &corev1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: t.Spec}
		tmpl := field.NewPath("spec", "template")
		// No admission resolves a template's priorityClassName into
		// spec.priority: a koord-* class name stands for its band, and a
		// template whose band cannot be told is not held to the pairs.
		var pairs field.ErrorList
		if band := extension.PriorityClassByName(t.Spec.PriorityClassName); pod.Spec.Priority == nil && band != extension.PriorityNone {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			if _, ok := pod.Labels[extension.LabelPodPriorityClass]; !ok {
				pod.Labels[extension.LabelPodPriorityClass] = string(band)
			}
		}
		if pod.Spec.Priority != nil || pod.Labels[extension.LabelPodPriorityClass] != "" {
			pairs = qosAndPriority(pod)
		}
		for _, e := range append(append(pairs, batchNeedsBE(pod)...), wholeCPUs(pod)...) {
			e.Field = tmpl.String() + "." + e.Field
			errs = append(errs, e)
		}
		errs = append(errs, Annotations(tmpl.Child("metadata", "annotations"), t.Annotations)...)
	}
	return errs
}

// Profile checks a ClusterColocationProfile: what would make the webhook
// fail for every pod it selects (selectors, probability, labels the API
// server would refuse, a patch that does not apply) and a QoS class with a
// priority class Koordinator forbids. priority is the value of the named
// PriorityClass, nil when it does not exist yet (a warning, not an error:
// the class may be created next).
func Profile(p *colocationv1alpha1.ClusterColocationProfile, priority *int32) (errs field.ErrorList, warnings []string) {
	spec := field.NewPath("spec")
	opts := metav1validation.LabelSelectorValidationOptions{}
	if p.Spec.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(p.Spec.NamespaceSelector, opts, spec.Child("namespaceSelector"))...)
	}
	if p.Spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(p.Spec.Selector, opts, spec.Child("selector"))...)
	}
	if pr := p.Spec.Probability; pr != nil {
		if _, err := profile.Probability(p); err != nil {
			errs = append(errs, field.Invalid(spec.Child("probability"), pr.String(), "must be 0-100 or a percentage from 0% to 100%"))
		}
	}
	if q := p.Spec.QoSClass; q != "" {
		if _, err := extension.ParseQoSClass(q); err != nil {
			errs = append(errs, field.NotSupported(spec.Child("qosClass"), q, []string{"LSE", "LSR", "LS", "BE", "SYSTEM"}))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(p.Spec.Labels, spec.Child("labels"))...)
	for k, v := range p.Spec.LabelKeysMapping {
		for _, key := range []string{k, v} {
			for _, msg := range utilvalidation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(spec.Child("labelKeysMapping").Key(k), key, msg))
			}
		}
	}
	for k := range p.Spec.LabelSuffixes {
		for _, msg := range utilvalidation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(spec.Child("labelSuffixes").Key(k), k, msg))
		}
	}
	for _, m := range []map[string]string{p.Spec.Annotations, p.Spec.AnnotationKeysMapping} {
		for k := range m {
			for _, msg := range utilvalidation.IsQualifiedName(k) {
				errs = append(errs, field.Invalid(spec.Child("annotations").Key(k), k, msg))
			}
		}
	}
	errs = append(errs, Annotations(spec.Child("annotations"), p.Spec.Annotations)...)
	if raw := p.Spec.Patch.Raw; len(raw) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			errs = append(errs, field.Invalid(spec.Child("patch"), "", "must be a JSON object (a strategic merge patch of a pod): "+err.Error()))
		} else if err := profile.Patch(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}, raw); err != nil {
			errs = append(errs, field.Invalid(spec.Child("patch"), "", "does not apply to a pod: "+err.Error()))
		}
	}
	if name := p.Spec.PriorityClassName; name != "" {
		if priority == nil {
			warnings = append(warnings, fmt.Sprintf("spec.priorityClassName: PriorityClass %s does not exist; pods this profile selects are refused until it does", name))
		} else if p.Spec.QoSClass != "" {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{extension.LabelPodQoS: p.Spec.QoSClass}}}
			pod.Spec.Priority = priority
			for _, e := range qosAndPriority(pod) {
				errs = append(errs, field.Forbidden(spec.Child("qosClass"), e.Detail))
			}
		}
	}
	return errs, warnings
}

// SLOConfig checks the slo-controller-config ConfigMap as koord-manager
// reads it: a key that does not parse or validate is an error naming it
// (koord-manager would keep the previous value of that key); fields no
// Koordinator version knows are warnings.
func SLOConfig(cm *corev1.ConfigMap) (warnings []string, err error) {
	cfg, err := config.Parse(cm)
	return cfg.Warnings, err
}
