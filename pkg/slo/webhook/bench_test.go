package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/koord-project/koord/pkg/slo/webhook/certs"
)

// BenchmarkMutatePod is one admission of a pod a profile selects, from the
// AdmissionReview body to the JSON patch, without the network.
func BenchmarkMutatePod(b *testing.B) {
	h, _ := testHandlers(b, "")
	body := review(b, admissionv1.Create, "spark", "", plainPod("500m"), nil, false)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, PathMutatePod, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h[PathMutatePod].ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Body.String())
		}
	}
}

// BenchmarkMutatePodOverTLS is the same admission as the API server sees it:
// an HTTPS request on a kept-alive connection to a server with the
// self-issued certificate. It reports the 99th percentile of the answers
// (p99-ms), the figure the webhook's 10 ms target is about.
func BenchmarkMutatePodOverTLS(b *testing.B) {
	h, _ := testHandlers(b, "")
	body := review(b, admissionv1.Create, "spark", "", plainPod("500m"), nil, false)
	data, _, err := certs.Renew(nil, []string{"127.0.0.1"}, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	cert, err := certs.Serving(data)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h[PathMutatePod])
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data[certs.KeyCACert])
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var took []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		resp, err := cl.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
		_ = resp.Body.Close()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
