package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
)

// secureServing makes srv serve HTTPS with a self-signed certificate, with
// everything but /healthz (kubelet's probe carries no credentials) behind
// the API server's authentication and authorization: a caller needs a token
// the API server accepts and the right to GET /metrics (ClusterRole
// koord-metrics-reader). The filter is controller-runtime's, as
// koord-manager uses it.
func secureServing(srv *http.Server, cfg *rest.Config) error {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, httpClient)
	if err != nil {
		return fmt.Errorf("metrics authorization: %w", err)
	}
	guarded, err := filter(klog.Background().WithName("metrics"), srv.Handler)
	if err != nil {
		return err
	}
	open := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			open.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
	host, _ := os.Hostname()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return nil
}
