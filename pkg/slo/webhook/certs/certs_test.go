package certs

import (
	"crypto/x509"

	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
)

// verify checks the serving certificate the way the API server does: against
// the CA bundle, for the host it dials.
func verify(t *testing.T, data map[string][]byte, host string, at time.Time) {
	t.Helper()
	c, err := Serving(data)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data[KeyCACert]) {
		t.Fatal("ca.crt holds no certificate")
	}
	if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: at}); err != nil {
		t.Fatalf("serving certificate does not verify for %s at %v: %v", host, at, err)
	}
}

func TestRenew(t *testing.T) {
	hosts := []string{"koord-webhook-service.koord-system.svc", "127.0.0.1"}
	const life = 30 * 24 * time.Hour
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	first, reason, err := Renew(nil, hosts, life, t0)
	if err != nil || reason != "new CA" {
		t.Fatalf("reason %q err %v", reason, err)
	}
	verify(t, first, hosts[0], t0)
	verify(t, first, "127.0.0.1", t0)

	// Nothing to do while more than a third of the lifetime is left.
	same, reason, err := Renew(first, hosts, life, t0.Add(19*24*time.Hour))
	if err != nil || reason != "" || string(same[KeyCert]) != string(first[KeyCert]) {
		t.Fatalf("renewed at 19 of 30 days: %q %v", reason, err)
	}

	// Past two thirds: a new serving certificate from the same CA.
	second, reason, err := Renew(first, hosts, life, t0.Add(21*24*time.Hour))
	if err != nil || reason != "serving certificate renewed" {
		t.Fatalf("reason %q err %v", reason, err)
	}
	if string(second[KeyCert]) == string(first[KeyCert]) || string(second[KeyCACert]) != string(first[KeyCACert]) {
		t.Fatal("want a new serving certificate under the same CA bundle")
	}
	verify(t, second, hosts[0], t0.Add(21*24*time.Hour))

	// Other hosts: reissued.
	if _, reason, _ := Renew(second, []string{"other.svc"}, life, t0.Add(21*24*time.Hour)); reason != "serving certificate renewed" {
		t.Errorf("hosts changed: reason %q", reason)
	}

	// Past two thirds of the CA's life (ten serving lifetimes): a new CA,
	// and the old one stays in the bundle so that clients holding the old
	// bundle keep trusting until they catch up.
	late := t0.Add(7 * life)
	third, reason, err := Renew(second, hosts, life, late)
	if err != nil || reason != "new CA" {
		t.Fatalf("reason %q err %v", reason, err)
	}
	if n := strings.Count(string(third[KeyCACert]), "BEGIN CERTIFICATE"); n != 2 {
		t.Fatalf("bundle holds %d CAs, want the new and the old", n)
	}
	verify(t, third, hosts[0], late)
	// Once the old CA has expired it leaves the bundle.
	gone, _, err := Renew(third, hosts, life, t0.Add(10*life+time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(gone[KeyCACert]), "BEGIN CERTIFICATE"); n != 1 {
		t.Errorf("bundle holds %d CAs after the old one expired", n)
	}
}

// A short lifetime is kept for two thirds of it, the backdating for clock
// skew notwithstanding.
func TestRenewShortLifetime(t *testing.T) {
	now := time.Now()
	first, _, err := Renew(nil, []string{"a.svc"}, 30*time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, reason, _ := Renew(first, []string{"a.svc"}, 30*time.Second, now.Add(15*time.Second)); reason != "" {
		t.Errorf("renewed after 15 of 30 s: %q", reason)
	}
	if _, reason, _ := Renew(first, []string{"a.svc"}, 30*time.Second, now.Add(21*time.Second)); reason != "serving certificate renewed" {
		t.Errorf("after 21 of 30 s: %q", reason)
	}
}

func TestRenewReplacesGarbage(t *testing.T) {
	now := time.Now()
	data := map[string][]byte{KeyCACert: []byte("junk"), KeyCAKey: []byte("junk"), KeyCert: []byte("junk"), KeyKey: []byte("junk")}
	out, reason, err := Renew(data, []string{"a.svc"}, time.Hour, now)
	if err != nil || reason != "new CA" {
		t.Fatalf("reason %q err %v", reason, err)
	}
	verify(t, out, "a.svc", now)
	// A cert-manager Secret (no CA key) read as self-managed gets our own CA.
	cm := map[string][]byte{KeyCACert: out[KeyCACert], KeyCert: out[KeyCert], KeyKey: out[KeyKey]}
	if _, reason, _ := Renew(cm, []string{"a.svc"}, time.Hour, now); reason != "new CA" {
		t.Errorf("no CA key: reason %q", reason)
	}
	if _, _, err := Renew(nil, nil, time.Hour, now); err == nil {
		t.Error("no hosts: want an error")
	}
	if _, _, err := Renew(nil, []string{"a"}, 0, now); err == nil {
		t.Error("zero validity: want an error")
	}
}

func TestProviderServesTheLatest(t *testing.T) {
	p := &Provider{expiry: prometheus.NewGauge(prometheus.GaugeOpts{Name: "expiry"})}
	if _, err := p.GetCertificate(nil); err == nil || p.Ready(nil) == nil {
		t.Fatal("a provider with no certificate must fail handshakes and readiness")
	}
	now := time.Now()
	a, _, _ := Renew(nil, []string{"a.svc"}, time.Hour, now)
	b, _, _ := Renew(nil, []string{"a.svc"}, time.Hour, now)
	for _, data := range []map[string][]byte{a, b} {
		p.load(&corev1.Secret{Data: data})
		got, err := p.GetCertificate(nil)
		want, _ := Serving(data)
		if err != nil || p.Ready(nil) != nil || got.Leaf.SerialNumber.Cmp(want.Leaf.SerialNumber) != 0 {
			t.Fatalf("serving %v (%v), want the Secret's latest", got, err)
		}
	}
	// A Secret without a usable certificate leaves the last good one in place.
	p.load(&corev1.Secret{Data: map[string][]byte{KeyCert: []byte("junk")}})
	if got, _ := p.GetCertificate(nil); got == nil || testutil.ToFloat64(p.expiry) == 0 {
		t.Fatal("a broken Secret dropped the certificate being served")
	}
}

// FuzzRenew: whatever the Secret holds (someone edited it by hand), Renew
// returns a certificate that verifies, or an error; never a panic.
func FuzzRenew(f *testing.F) {
	good, _, _ := Renew(nil, []string{"a.svc"}, time.Hour, time.Now())
	f.Add(good[KeyCACert], good[KeyCAKey], good[KeyCert], good[KeyKey])
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []byte("x"), []byte(""), []byte("-----BEGIN PRIVATE KEY-----\n\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, ca, caKey, cert, key []byte) {
		now := time.Now()
		out, _, err := Renew(map[string][]byte{KeyCACert: ca, KeyCAKey: caKey, KeyCert: cert, KeyKey: key}, []string{"a.svc"}, time.Hour, now)
		if err != nil {
			return
		}
		verify(t, out, "a.svc", now)
	})
}
