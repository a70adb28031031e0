package validate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	schedulingv1alpha1 "github.com/koord-project/koord/apis/scheduling/v1alpha1"
)

type podOpt func(*corev1.Pod)

func qos(q string) podOpt { return func(p *corev1.Pod) { p.Labels[extension.LabelPodQoS] = q } }
func prio(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }
func label(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}
func annotation(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Annotations[k] = v }
}
func requests(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		p.Spec.Containers[0].Resources.Requests = l
	}
}

func pod(opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestPodRules(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string // "" admits
	}{
		// Koordinator's pairs.
		{"BE with koord-batch", pod(qos("BE"), prio(5000)), ""},
		{"BE with koord-mid", pod(qos("BE"), prio(7000)), ""},
		{"BE with koord-free", pod(qos("BE"), prio(3500)), ""},
		{"BE with koord-prod", pod(qos("BE"), prio(9000)), "metadata.labels[koordinator.sh/qosClass]: Forbidden: koordinator.sh/qosClass=BE cannot be used with priority class koord-prod"},
		{"BE with no band", pod(qos("BE"), prio(0)), "koordinator.sh/qosClass=BE cannot be used with priority class none"},
		{"BE with the priority-class label", pod(qos("BE"), prio(0), label(extension.LabelPodPriorityClass, "koord-batch")), ""},
		{"LSR with koord-prod and 2 CPUs", pod(qos("LSR"), prio(9000), requests("cpu", "2")), ""},
		{"LSR with koord-batch", pod(qos("LSR"), prio(5000), requests("cpu", "2")), "koordinator.sh/qosClass=LSR cannot be used with priority class koord-batch: an LSR pod needs the koord-prod band"},
		{"LSR with half a CPU", pod(qos("LSR"), prio(9000), requests("cpu", "1500m")), `spec.containers[*].resources.requests.cpu: Invalid value: "1500m": an LSR pod must request a whole number of CPUs`},
		{"LSE without CPUs", pod(qos("LSE"), prio(9000)), "spec.containers[*].resources.requests.cpu: Required value: an LSE pod must request CPUs"},
		{"LS with anything", pod(qos("LS"), prio(5000), requests("cpu", "100m")), ""},
		{"batch resources on an LS pod", pod(qos("LS"), prio(5000), requests(extension.BatchCPU, "1000")), "metadata.labels[koordinator.sh/qosClass]: Required value: must be BE for a pod that requests kubernetes.io/batch-cpu"},
		{"batch resources without a QoS label", pod(prio(5000), requests(extension.BatchMemory, "1Gi")), "must be BE for a pod that requests"},
		{"batch resources on a BE pod", pod(qos("BE"), prio(5000), requests(extension.BatchCPU, "1000")), ""},
		{"a pod without Koord labels", pod(requests("cpu", "1")), ""},
		// Labels and annotations that do not parse.
		{"unknown QoS class", pod(qos("Gold")), `metadata.labels[koordinator.sh/qosClass]: Unsupported value: "Gold"`},
		{"sub-priority not a number", pod(label(extension.LabelPodPriority, "high")), "metadata.labels[koordinator.sh/priority]: Invalid value: \"high\": must be an integer"},
		{"malformed resource-spec", pod(annotation(extension.AnnotationResourceSpec, `{"preferredCPUBindPolicy": 7`)), "metadata.annotations[scheduling.koordinator.sh/resource-spec]"},
		{"unknown bind policy", pod(annotation(extension.AnnotationResourceSpec, `{"preferredCPUBindPolicy":"Sideways"}`)), "metadata.annotations[scheduling.koordinator.sh/resource-spec]"},
		{"malformed numa-topology-spec", pod(annotation(extension.AnnotationNUMATopologySpec, `{"numaTopologyPolicy":"Always"}`)), "metadata.annotations[scheduling.koordinator.sh/numa-topology-spec]"},
		{"malformed reservation-affinity", pod(annotation(extension.AnnotationReservationAffinity, `[]`)), "metadata.annotations[scheduling.koordinator.sh/reservation-affinity]"},
		{"malformed cpuBurst", pod(annotation(extension.AnnotationPodCPUBurst, `{"cpuBurstPercent":"x"}`)), "metadata.annotations[koordinator.sh/cpuBurst]"},
		{"well-formed annotations", pod(annotation(extension.AnnotationResourceSpec, `{"preferredCPUBindPolicy":"FullPCPUs"}`), annotation(extension.AnnotationNUMATopologySpec, `{"numaTopologyPolicy":"SingleNUMANode"}`)), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := PodRules{}.Pod(tc.pod, nil)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want %q", got, tc.want)
			}
		})
	}
}

func TestPodUpdates(t *testing.T) {
	old := pod(qos("BE"), prio(5000), label(extension.LabelPodPriority, "100"))
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		rules PodRules
		want  string
	}{
		{"unchanged", pod(qos("BE"), prio(5000), label(extension.LabelPodPriority, "100")), PodRules{}, ""},
		{"QoS changed", pod(qos("LS"), prio(5000), label(extension.LabelPodPriority, "100")), PodRules{}, "metadata.labels[koordinator.sh/qosClass]: Invalid value: \"LS\": cannot change after the pod is created (was \"BE\")"},
		{"band changed", pod(qos("BE"), prio(7000), label(extension.LabelPodPriority, "100")), PodRules{}, "spec.priority: Invalid value: \"koord-mid\": the priority band cannot change"},
		{"sub-priority changed", pod(qos("BE"), prio(5000), label(extension.LabelPodPriority, "200")), PodRules{}, "metadata.labels[koordinator.sh/priority]"},
		{"sub-priority changed, gate on", pod(qos("BE"), prio(5000), label(extension.LabelPodPriority, "200")), PodRules{MutablePriority: true}, ""},
		{"a new malformed annotation", pod(qos("BE"), prio(5000), label(extension.LabelPodPriority, "100"), annotation(extension.AnnotationNUMATopologySpec, "x")), PodRules{}, "metadata.annotations[scheduling.koordinator.sh/numa-topology-spec]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rules.Pod(tc.pod, old).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want %q", got, tc.want)
			}
		})
	}
}

// A pod admitted while the webhook was down keeps what it had: an update
// (the scheduler's resource-status, say) is refused only for what it breaks.
func TestPodUpdatesRatchet(t *testing.T) {
	old := pod(qos("LSR"), prio(0), requests("cpu", "1500m"), annotation(extension.AnnotationResourceSpec, "{"))
	upd := old.DeepCopy()
	upd.Annotations[extension.AnnotationResourceStatus] = `{"cpuset":"0-1"}`
	if errs := (PodRules{}).Pod(upd, old); len(errs) > 0 {
		t.Errorf("an update that breaks nothing new was refused: %v", errs)
	}
	upd.Annotations[extension.AnnotationNUMATopologySpec] = "x"
	if errs := (PodRules{}).Pod(upd, old); len(errs) != 1 || errs[0].Field != "metadata.annotations[scheduling.koordinator.sh/numa-topology-spec]" {
		t.Errorf("errors %v, want only the new annotation's", errs)
	}
}

func TestReservation(t *testing.T) {
	good := func() *schedulingv1alpha1.Reservation {
		return &schedulingv1alpha1.Reservation{Spec: schedulingv1alpha1.ReservationSpec{
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
			Owners:   []schedulingv1alpha1.ReservationOwner{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}},
		}}
	}
	if errs := Reservation(good()); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
	// Owners by label: the writer is told they are one namespace's.
	if w := ReservationWarnings(good()); len(w) != 1 || !strings.Contains(w[0], "spec.owners[0]: only pods of namespace default are owners") {
		t.Errorf("warnings %q, want spec.owners[0] named with namespace default", w)
	}
	anyNS := good()
	anyNS.Annotations = map[string]string{extension.AnnotationReservationOwnersAnyNamespace: "true"}
	if w := ReservationWarnings(anyNS); len(w) != 0 {
		t.Errorf("warnings %q for a reservation open to every namespace", w)
	}
	// manifests/samples/reservation.yaml: an LSR template naming koord-prod
	// (no spec.priority: nothing resolves a template's class), and one
	// whose class is not a koord band.
	for _, class := range []string{"koord-prod", "team-high"} {
		r := good()
		r.Spec.Template.Labels = map[string]string{extension.LabelPodQoS: "LSR"}
		r.Spec.Template.Spec.PriorityClassName = class
		r.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		if errs := Reservation(r); len(errs) > 0 {
			t.Errorf("LSR template of class %s refused: %v", class, errs)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*schedulingv1alpha1.Reservation)
		want string
	}{
		{"no owners", func(r *schedulingv1alpha1.Reservation) { r.Spec.Owners = nil }, "spec.owners: Required value"},
		{"owner of two kinds", func(r *schedulingv1alpha1.Reservation) {
			r.Spec.Owners[0].Object = &corev1.ObjectReference{Name: "p"}
		}, "spec.owners[0]: Invalid value: \"2 kinds\": an owner sets exactly one of object, controller and labelSelector"},
		{"bad selector", func(r *schedulingv1alpha1.Reservation) {
			r.Spec.Owners[0].LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
		}, "spec.owners[0].labelSelector.matchExpressions[0].operator"},
		{"template LSR in the batch band", func(r *schedulingv1alpha1.Reservation) {
			r.Spec.Template.Labels = map[string]string{extension.LabelPodQoS: "LSR"}
			p := int32(5000)
			r.Spec.Template.Spec.Priority = &p
		}, "spec.template.metadata.labels[koordinator.sh/qosClass]"},
		{"template LSR with the koord-batch class", func(r *schedulingv1alpha1.Reservation) {
			r.Spec.Template.Labels = map[string]string{extension.LabelPodQoS: "LSR"}
			r.Spec.Template.Spec.PriorityClassName = "koord-batch"
		}, "spec.template.metadata.labels[koordinator.sh/qosClass]"},
		{"template annotation", func(r *schedulingv1alpha1.Reservation) {
			r.Spec.Template.Annotations = map[string]string{extension.AnnotationResourceSpec: "{"}
		}, "spec.template.metadata.annotations[scheduling.koordinator.sh/resource-spec]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.edit(r)
			got := Reservation(r).ToAggregate()
			if got == nil || !strings.Contains(got.Error(), tc.want) {
				t.Errorf("got %v, want %q", got, tc.want)
			}
		})
	}
}

func TestProfile(t *testing.T) {
	batch, prod := int32(5000), int32(9000)
	for _, tc := range []struct {
		name     string
		spec     colocationv1alpha1.ClusterColocationProfileSpec
		priority *int32
		want     string
		warning  string
	}{
		{"Koordinator's example", colocationv1alpha1.ClusterColocationProfileSpec{QoSClass: "BE", PriorityClassName: "koord-batch",
			Labels: map[string]string{"koordinator.sh/mutated": "true"}, Patch: runtime.RawExtension{Raw: []byte(`{"spec":{"terminationGracePeriodSeconds":30}}`)}}, &batch, "", ""},
		{"BE with koord-prod", colocationv1alpha1.ClusterColocationProfileSpec{QoSClass: "BE", PriorityClassName: "koord-prod"}, &prod,
			"spec.qosClass: Forbidden: koordinator.sh/qosClass=BE cannot be used with priority class koord-prod", ""},
		{"class not there yet", colocationv1alpha1.ClusterColocationProfileSpec{QoSClass: "BE", PriorityClassName: "later"}, nil, "",
			"PriorityClass later does not exist"},
		{"bad selector", colocationv1alpha1.ClusterColocationProfileSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}}, nil,
			"spec.selector.matchLabels", ""},
		{"bad label", colocationv1alpha1.ClusterColocationProfileSpec{Labels: map[string]string{"team": "a b"}}, nil, "spec.labels: Invalid value: \"a b\"", ""},
		{"probability", colocationv1alpha1.ClusterColocationProfileSpec{Probability: ptrIntStr("150%")}, nil, "spec.probability", ""},
		{"patch not an object", colocationv1alpha1.ClusterColocationProfileSpec{Patch: runtime.RawExtension{Raw: []byte(`[1]`)}}, nil, "spec.patch", ""},
		{"patch of the wrong shape", colocationv1alpha1.ClusterColocationProfileSpec{Patch: runtime.RawExtension{Raw: []byte(`{"spec":{"containers":7}}`)}}, nil, "spec.patch", ""},
		{"annotation it would write does not parse", colocationv1alpha1.ClusterColocationProfileSpec{Annotations: map[string]string{extension.AnnotationNUMATopologySpec: "x"}}, nil,
			"spec.annotations[scheduling.koordinator.sh/numa-topology-spec]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &colocationv1alpha1.ClusterColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tc.spec}
			errs, warnings := Profile(p, tc.priority)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want %q", got, tc.want)
			}
			if tc.warning != "" && (len(warnings) == 0 || !strings.Contains(warnings[0], tc.warning)) {
				t.Errorf("warnings %v, want %q", warnings, tc.warning)
			}
		})
	}
}

func TestSLOConfig(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "koord-system", Name: "slo-controller-config"},
		Data: map[string]string{"colocation-config": `{"enable": true, "cpuReclaimThresholdPercent": 70, "sparkle": 1}`}}
	warnings, err := SLOConfig(cm)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "sparkle") {
		t.Errorf("err %v warnings %v: want accepted with a warning naming sparkle", err, warnings)
	}
	cm.Data["resource-threshold-config"] = `{"clusterStrategy": {"cpuSuppressThresholdPercent": 150}}`
	if _, err := SLOConfig(cm); err == nil || !strings.Contains(err.Error(), "key resource-threshold-config") {
		t.Errorf("err %v, want one naming resource-threshold-config", err)
	}
}

func ptrIntStr(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }

// FuzzPod: a tenant's labels, annotations and requests of any value get an
// answer (admitted or refused with field errors), never a panic.
func FuzzPod(f *testing.F) {
	f.Add("LSR", "7", "1500m", extension.AnnotationResourceSpec, `{"preferredCPUBindPolicy": 7`, int32(9000), "BE")
	f.Add("BE", "x", "0", extension.AnnotationReservationAffinity, `{"name":""}`, int32(0), "")
	f.Add("", "", "1e3", extension.AnnotationPodCPUBurst, `{"cpuBurstPercent":-1}`, int32(5000), "LS")
	f.Fuzz(func(t *testing.T, q, sub, cpu, key, value string, priority int32, oldQoS string) {
		p := pod(qos(q), label(extension.LabelPodPriority, sub), annotation(key, value), prio(priority))
		if c, err := resource.ParseQuantity(cpu); err == nil {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: c, extension.BatchCPU: c}
		}
		old := pod(qos(oldQoS))
		for _, errs := range []field.ErrorList{PodRules{}.Pod(p, nil), PodRules{}.Pod(p, old)} {
			for _, e := range errs {
				if e.Field == "" {
					t.Fatalf("error without a field: %v", e)
				}
			}
		}
	})
}
