package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	colocationv1alpha1 "github.com/koord-project/koord/apis/colocation/v1alpha1"
	"github.com/koord-project/koord/apis/extension"
	"github.com/koord-project/koord/pkg/features"
)

func testHandlers(t testing.TB, gates string) (Handlers, *prometheus.Registry) {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = colocationv1alpha1.AddToScheme(s)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "spark", Labels: map[string]string{"koordinator.sh/enable-colocation": "true"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "koord-batch"}, Value: 5000},
		&colocationv1alpha1.ClusterColocationProfile{ObjectMeta: metav1.ObjectMeta{Name: "spark"}, Spec: colocationv1alpha1.ClusterColocationProfileSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"koordinator.sh/enable-colocation": "true"}},
			QoSClass:          "BE", PriorityClassName: "koord-batch", SchedulerName: "koord-scheduler",
		}},
	).Build()
	g := features.New()
	if gates != "" {
		if err := g.Set(gates); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	h, err := New(c, Options{Gates: g, SkipNamespaces: []string{"kube-system", "koord-system"},
		SLOConfig: types.NamespacedName{Namespace: "koord-system", Name: "slo-controller-config"}, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return h, reg
}

func review(t testing.TB, op admissionv1.Operation, ns, name string, obj, old any, dryRun bool) []byte {
	t.Helper()
	raw, _ := json.Marshal(obj)
	req := &admissionv1.AdmissionRequest{UID: "u1", Operation: op, Namespace: ns, Name: name, Object: runtime.RawExtension{Raw: raw}, DryRun: &dryRun}
	if old != nil {
		req.OldObject.Raw, _ = json.Marshal(old)
	}
	b, _ := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	return b
}

func call(t testing.TB, h http.Handler, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)).WithContext(t.Context())
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	out := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
		t.Fatalf("response %q: %v", rec.Body.String(), err)
	}
	return out.Response
}

func plainPod(cpu string) *corev1.Pod {
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustQ(cpu)}
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: mustQ(cpu)}
	}
	return p
}

func TestMutatePod(t *testing.T) {
	h, reg := testHandlers(t, "")
	resp := call(t, h[PathMutatePod], review(t, admissionv1.Create, "spark", "", plainPod("500m"), nil, false))
	if !resp.Allowed || resp.PatchType == nil {
		t.Fatalf("response %+v: want an allowed patch", resp)
	}
	var ops []map[string]any
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	patch := string(resp.Patch)
	for _, want := range []string{`"koordinator.sh/qosClass":"BE"`, `"/spec/priority"`, `"/spec/schedulerName"`, `kubernetes.io~1batch-cpu`} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch %s lacks %s", patch, want)
		}
	}
	if strings.Contains(patch, "/metadata/namespace") {
		t.Errorf("patch %s sets the namespace", patch)
	}
	// Not selected (namespace), never intercepted (kube-system), not a create.
	for _, tc := range []struct {
		op admissionv1.Operation
		ns string
	}{{admissionv1.Create, "web"}, {admissionv1.Create, "kube-system"}, {admissionv1.Create, "koord-system"}, {admissionv1.Update, "spark"}} {
		resp := call(t, h[PathMutatePod], review(t, tc.op, tc.ns, "p", plainPod("500m"), plainPod("500m"), false))
		if !resp.Allowed || len(resp.Patch) != 0 {
			t.Errorf("%s in %s: %+v, want allowed untouched", tc.op, tc.ns, resp)
		}
	}
	if got := counter(t, reg, "koord_manager_webhook_requests_total", map[string]string{"webhook": "mutate-pod", "operation": "CREATE", "result": "patched"}); got != 1 {
		t.Errorf("patched requests %v, want 1", got)
	}
	// The gate off: nothing is changed.
	off, _ := testHandlers(t, "PodMutatingWebhook=false")
	if resp := call(t, off[PathMutatePod], review(t, admissionv1.Create, "spark", "", plainPod("500m"), nil, false)); !resp.Allowed || len(resp.Patch) != 0 {
		t.Errorf("gate off: %+v", resp)
	}
}

func TestValidatePod(t *testing.T) {
	h, reg := testHandlers(t, "")
	lsr := plainPod("1500m")
	lsr.Labels = map[string]string{extension.LabelPodQoS: "LSR"}
	lsr.Spec.Priority = ptr.To[int32](9000)
	for _, dry := range []bool{false, true} {
		resp := call(t, h[PathValidatePod], review(t, admissionv1.Create, "web", "", lsr, nil, dry))
		if resp.Allowed || !strings.Contains(resp.Result.Message, "an LSR pod must request a whole number of CPUs") {
			t.Errorf("dry run %v: %+v, want refused naming the rule", dry, resp.Result)
		}
	}
	if got := counter(t, reg, "koord_manager_webhook_rejections_total", map[string]string{"webhook": "validate-pod", "reason": "spec.containers[*].resources.requests.cpu"}); got != 2 {
		t.Errorf("rejections %v, want 2", got)
	}
	if resp := call(t, h[PathValidatePod], review(t, admissionv1.Create, "kube-system", "", lsr, nil, false)); !resp.Allowed {
		t.Errorf("kube-system is never intercepted: %+v", resp.Result)
	}
	lsr.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = mustQ("2")
	if resp := call(t, h[PathValidatePod], review(t, admissionv1.Create, "web", "", lsr, nil, false)); !resp.Allowed {
		t.Errorf("2 CPUs: %+v", resp.Result)
	}
}

func TestValidateConfigMap(t *testing.T) {
	h, _ := testHandlers(t, "")
	cm := &corev1.ConfigMap{Data: map[string]string{"colocation-config": `{"cpuReclaimThresholdPercent": "high"}`}}
	resp := call(t, h[PathValidateConfigMap], review(t, admissionv1.Update, "koord-system", "slo-controller-config", cm, nil, false))
	if resp.Allowed || !strings.Contains(resp.Result.Message, "key colocation-config") {
		t.Errorf("%+v, want refused naming colocation-config", resp.Result)
	}
	if resp := call(t, h[PathValidateConfigMap], review(t, admissionv1.Update, "koord-system", "other", cm, nil, false)); !resp.Allowed {
		t.Errorf("another ConfigMap: %+v", resp.Result)
	}
	cm.Data["colocation-config"] = `{"enable": true, "sparkle": 1}`
	resp = call(t, h[PathValidateConfigMap], review(t, admissionv1.Update, "koord-system", "slo-controller-config", cm, nil, false))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "sparkle") {
		t.Errorf("%+v, want allowed with a warning naming sparkle", resp)
	}
}

func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }
