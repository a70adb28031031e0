package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzAdmission sends every webhook an AdmissionReview whose object (and
// old object) are arbitrary bytes: a tenant writes the object. Each answer
// must be a well-formed AdmissionReview (allowed, denied or an error), never
// a panic or a dropped request.
func FuzzAdmission(f *testing.F) {
	f.Add([]byte(`{"metadata":{"labels":{"koordinator.sh/qosClass":"LSR"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1500m"}}}]}}`), []byte(`{}`), "CREATE")
	f.Add([]byte(`{"metadata":{"annotations":{"scheduling.koordinator.sh/resource-spec":"{"}},"spec":{"priority":5000}}`), []byte(`{"metadata":{"labels":{"koordinator.sh/qosClass":"BE"}}}`), "UPDATE")
	f.Add([]byte(`{"spec":{"owners":[{}],"template":{"metadata":{"labels":{"koordinator.sh/qosClass":"LSE"}}}}}`), []byte(`null`), "CREATE")
	f.Add([]byte(`{"spec":{"probability":"abc%","patch":{"spec":{"containers":7}},"selector":{"matchExpressions":[{"key":"a","operator":"In"}]}}}`), []byte(``), "CREATE")
	f.Add([]byte(`{"data":{"colocation-config":"{\"cpuReclaimThresholdPercent\": 900}"}}`), []byte(`{}`), "UPDATE")
	f.Add([]byte(`[]`), []byte(`7`), "DELETE")
	h, _ := testHandlers(f, "")
	f.Fuzz(func(t *testing.T, obj, old []byte, op string) {
		req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Operation(op), Namespace: "spark", Name: "slo-controller-config",
			Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: old}}
		// The configuration webhook reads koord-system's ConfigMap.
		for path, handler := range h {
			if path == PathValidateConfigMap {
				req.Namespace = "koord-system"
			} else {
				req.Namespace = "spark"
			}
			body, err := json.Marshal(&admissionv1.AdmissionReview{Request: req})
			if err != nil {
				return // not JSON-encodable as a RawExtension: the API server never sends it
			}
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			handler.ServeHTTP(rec, r)
			out := &admissionv1.AdmissionReview{}
			if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
				t.Fatalf("%s: no AdmissionReview in the answer %q", path, rec.Body.String())
			}
		}
	})
}
