// Package validate holds the rules koord-manager's validating webhooks
// enforce: on pods (QoS and priority that contradict each other, CPUs an
// LSR or LSE pod cannot be given, batch resources outside BE, Koord
// annotations that do not parse), Reservations, ClusterColocationProfiles
// and the slo-controller-config ConfigMap. Each rule returns field errors
// naming the field and the rule; the webhook package serves them.
package validate

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/koord-project/koord/apis/extension"
)

var labelsPath = field.NewPath("metadata", "labels")
var annotationsPath = field.NewPath("metadata", "annotations")

// forbiddenBands are the priority bands Koordinator refuses with a QoS class.
var forbiddenBands = map[extension.QoSClass][]extension.PriorityClass{
	extension.QoSBE:  {extension.PriorityNone, extension.PriorityProd},
	extension.QoSLSR: {extension.PriorityNone, extension.PriorityMid, extension.PriorityBatch, extension.PriorityFree},
}

// PodRules are the pod rules' switches.
type PodRules struct {
	// MutablePriority lets the koordinator.sh/priority label change after
	// creation (Koordinator's gate ColocationProfileSkipValidatingPriority).
	MutablePriority bool
}

// Pod checks a pod being created (old nil) or updated. The rules are
// Koordinator's pod webhook's, plus the parse of every Koord annotation a
// component reads from a pod. An update is refused only for what it
// changes: a pod admitted while the webhook was down (failurePolicy Ignore)
// or before Koord was installed keeps working, so the scheduler's and
// koordlet's own updates to it are not refused for what it always had.
func (r PodRules) Pod(pod, old *corev1.Pod) field.ErrorList {
	errs := contents(pod)
	if old == nil {
		return errs
	}
	had := map[string]bool{}
	for _, e := range contents(old) {
		had[e.Error()] = true
	}
	errs = slices.DeleteFunc(errs, func(e *field.Error) bool { return had[e.Error()] })
	return append(r.immutable(pod, old), errs...)
}

// contents are the rules on what a pod is, whether created or updated.
func contents(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	if qos, ok := pod.Labels[extension.LabelPodQoS]; ok {
		if _, err := extension.ParseQoSClass(qos); err != nil {
			errs = append(errs, field.NotSupported(labelsPath.Key(extension.LabelPodQoS), qos, []string{"LSE", "LSR", "LS", "BE", "SYSTEM"}))
		}
	}
	if v, ok := pod.Labels[extension.LabelPodPriority]; ok {
		if _, err := strconv.ParseInt(v, 0, 32); err != nil {
			errs = append(errs, field.Invalid(labelsPath.Key(extension.LabelPodPriority), v, "must be an integer (the pod's sub-priority within its band)"))
		}
	}
	errs = append(errs, qosAndPriority(pod)...)
	errs = append(errs, batchNeedsBE(pod)...)
	errs = append(errs, wholeCPUs(pod)...)
	return append(errs, Annotations(annotationsPath, pod.Annotations)...)
}

// immutable: the QoS class, the priority band and the sub-priority are
// fixed at creation; koordlet and the scheduler have acted on them.
func (r PodRules) immutable(pod, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	for _, k := range []string{extension.LabelPodQoS, extension.LabelPodPriority} {
		if k == extension.LabelPodPriority && r.MutablePriority {
			continue
		}
		if pod.Labels[k] != old.Labels[k] {
			errs = append(errs, field.Invalid(labelsPath.Key(k), pod.Labels[k], fmt.Sprintf("cannot change after the pod is created (was %q)", old.Labels[k])))
		}
	}
	if now, was := extension.PodPriorityClassRaw(pod), extension.PodPriorityClassRaw(old); now != was {
		errs = append(errs, field.Invalid(field.NewPath("spec", "priority"), string(now), fmt.Sprintf("the priority band cannot change after the pod is created (was %q)", was)))
	}
	return errs
}

func qosAndPriority(pod *corev1.Pod) field.ErrorList {
	qos := extension.QoSClass(pod.Labels[extension.LabelPodQoS])
	band := extension.PodPriorityClassRaw(pod)
	for _, b := range forbiddenBands[qos] {
		if band == b {
			name := string(band)
			if name == "" {
				name = "none (a priority outside the koord-prod, koord-mid, koord-batch and koord-free bands)"
			}
			return field.ErrorList{field.Forbidden(labelsPath.Key(extension.LabelPodQoS),
				fmt.Sprintf("%s=%s cannot be used with priority class %s: %s", extension.LabelPodQoS, qos, name, bandRule(qos)))}
		}
	}
	return nil
}

func bandRule(q extension.QoSClass) string {
	if q == extension.QoSBE {
		return "a BE pod needs the koord-batch, koord-free or koord-mid band"
	}
	return "an LSR pod needs the koord-prod band"
}

// batchNeedsBE: only BE pods may request batch resources; koordlet runs
// only BE pods on them.
func batchNeedsBE(pod *corev1.Pod) field.ErrorList {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu, mem := req[extension.BatchCPU], req[extension.BatchMemory]
	if cpu.IsZero() && mem.IsZero() {
		return nil
	}
	if pod.Labels[extension.LabelPodQoS] == string(extension.QoSBE) {
		return nil
	}
	return field.ErrorList{field.Required(labelsPath.Key(extension.LabelPodQoS),
		fmt.Sprintf("must be BE for a pod that requests %s or %s", extension.BatchCPU, extension.BatchMemory))}
}

// wholeCPUs: an LSR or LSE pod is given whole CPUs of its own, so it must
// ask for a whole number of them.
func wholeCPUs(pod *corev1.Pod) field.ErrorList {
	qos := extension.QoSClass(pod.Labels[extension.LabelPodQoS])
	if qos != extension.QoSLSR && qos != extension.QoSLSE {
		return nil
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu := req[corev1.ResourceCPU]
	path := field.NewPath("spec", "containers[*]", "resources", "requests", "cpu")
	switch {
	case cpu.IsZero():
		return field.ErrorList{field.Required(path, fmt.Sprintf("an %s pod must request CPUs (it is given whole CPUs of its own)", qos))}
	case cpu.MilliValue()%1000 != 0:
		return field.ErrorList{field.Invalid(path, cpu.String(), fmt.Sprintf("an %s pod must request a whole number of CPUs", qos))}
	}
	return nil
}

// annotationParsers are the Koord annotations users write on pods, each
// with the parser the component that reads it uses.
var annotationParsers = []struct {
	key   string
	parse func(map[string]string) error
}{
	{extension.AnnotationResourceSpec, func(a map[string]string) error { _, err := extension.GetResourceSpec(a); return err }},
	{extension.AnnotationNUMATopologySpec, func(a map[string]string) error { _, err := extension.GetNUMATopologySpec(a); return err }},
	{extension.AnnotationReservationAffinity, func(a map[string]string) error { _, err := extension.GetReservationAffinity(a); return err }},
	{extension.AnnotationPodCPUBurst, func(a map[string]string) error { _, err := extension.GetPodCPUBurst(a); return err }},
	{extension.AnnotationCustomEstimatedScalingFactors, func(a map[string]string) error {
		_, err := extension.GetCustomEstimatedScalingFactors(a)
		return err
	}},
	{extension.AnnotationCustomEstimatedSecondsAfterPodScheduled, func(a map[string]string) error {
		_, err := extension.GetCustomEstimatedSecondsAfterPodScheduled(a)
		return err
	}},
}

// Annotations parses every Koord annotation a user may set on a pod (or a
// Reservation's template): a malformed one is refused here rather than
// ignored later by the component that reads it.
func Annotations(path *field.Path, annotations map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, p := range annotationParsers {
		v, ok := annotations[p.key]
		if !ok {
			continue
		}
		if err := p.parse(annotations); err != nil {
			errs = append(errs, field.Invalid(path.Key(p.key), truncate(v), err.Error()))
		}
	}
	return errs
}

// truncate keeps a hostile value from filling the error message.
func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
