// Package certs gives koord-manager's webhook server its TLS certificate
// without cert-manager: the leader keeps a CA and a serving certificate in a
// Secret, renews them before they expire and writes the CA bundle into the
// webhook configurations; every replica serves whatever certificate the
// Secret holds now, so a renewal needs no restart. With cert-manager
// (Source "secret") the Secret is cert-manager's and this package only reads it.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// Keys of the Secret: cert-manager's and kubernetes.io/tls's names, plus
// the CA's key, which only a self-managed Secret holds.
const (
	KeyCACert = "ca.crt"
	KeyCAKey  = "ca.key"
	KeyCert   = "tls.crt"
	KeyKey    = "tls.key"
)

// caLifetimes is how many serving certificates' lifetimes a CA lives: the
// CA bundle in the webhook configurations then changes rarely.
const caLifetimes = 10

// backdate allows for clock skew between the replicas and the API server.
const backdate = time.Minute

// Renew returns the Secret data with a CA and a serving certificate for
// hosts (DNS names or IP addresses) valid at now: data's own when they are
// still good, new ones otherwise. A certificate is renewed once less than a
// third of its lifetime is left, or when it no longer matches (other hosts,
// another CA). A new CA is issued beside the old one: ca.crt lists both
// until the old one expires, so that clients holding either bundle keep
// trusting the server while the webhook configurations catch up. reason
// says what changed ("" for nothing).
func Renew(data map[string][]byte, hosts []string, validity time.Duration, now time.Time) (out map[string][]byte, reason string, err error) {
	if validity <= 0 {
		return nil, "", fmt.Errorf("certificate validity %v: must be positive", validity)
	}
	out = map[string][]byte{}
	caCerts := parseCerts(data[KeyCACert])
	caKey, _ := parseKey(data[KeyCAKey])
	var ca *x509.Certificate
	if len(caCerts) > 0 && caKey != nil && matchesKey(caCerts[0], caKey) && fresh(caCerts[0], now, validity*caLifetimes) {
		ca = caCerts[0]
	}
	if ca == nil {
		reason = "new CA"
		if ca, caKey, err = newCA(validity*caLifetimes, now); err != nil {
			return nil, "", err
		}
		caCerts = append([]*x509.Certificate{ca}, caCerts...)
	}
	// Old CAs stay in the bundle until they expire.
	caCerts = slices.DeleteFunc(caCerts, func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })
	var bundle bytes.Buffer
	for _, c := range caCerts {
		_ = pem.Encode(&bundle, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	out[KeyCACert] = bundle.Bytes()
	if out[KeyCAKey], err = encodeKey(caKey); err != nil {
		return nil, "", err
	}
	if !bytes.Equal(out[KeyCACert], data[KeyCACert]) && reason == "" {
		reason = "expired CA dropped"
	}

	leafs := parseCerts(data[KeyCert])
	key, _ := parseKey(data[KeyKey])
	if len(leafs) > 0 && key != nil && matchesKey(leafs[0], key) && fresh(leafs[0], now, validity) &&
		leafs[0].CheckSignatureFrom(ca) == nil && sameHosts(leafs[0], hosts) {
		out[KeyCert], out[KeyKey] = data[KeyCert], data[KeyKey]
		return out, reason, nil
	}
	if reason == "" {
		reason = "serving certificate renewed"
	}
	if out[KeyCert], out[KeyKey], err = newLeaf(ca, caKey, hosts, validity, now); err != nil {
		return nil, "", err
	}
	return out, reason, nil
}

// fresh: more than a third of the certificate's lifetime is left. The
// lifetime is the configured one, not NotAfter − NotBefore, which includes
// the backdating for clock skew.
func fresh(c *x509.Certificate, now time.Time, life time.Duration) bool {
	return now.After(c.NotBefore) && c.NotAfter.Sub(now) > life/3
}

func sameHosts(c *x509.Certificate, hosts []string) bool {
	dns, ips := splitHosts(hosts)
	if len(dns) != len(c.DNSNames) || len(ips) != len(c.IPAddresses) {
		return false
	}
	for i := range dns {
		if dns[i] != c.DNSNames[i] {
			return false
		}
	}
	for i := range ips {
		if !ips[i].Equal(c.IPAddresses[i]) {
			return false
		}
	}
	return true
}

func splitHosts(hosts []string) (dns []string, ips []net.IP) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else if h != "" {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newCA(validity time.Duration, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("koord-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return c, key, err
}

func newLeaf(ca *x509.Certificate, caKey crypto.Signer, hosts []string, validity time.Duration, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	dns, ips := splitHosts(hosts)
	if len(dns)+len(ips) == 0 {
		return nil, nil, errors.New("no host names for the serving certificate")
	}
	cn := "koord-webhook"
	if len(dns) > 0 {
		cn = dns[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dns,
		IPAddresses:  ips,
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, err
}

func encodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseCerts(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

func parseKey(b []byte) (crypto.Signer, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParseECPrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
	if err != nil {
		// Not k: a nil *rsa.PrivateKey in a crypto.Signer is not a nil Signer.
		return nil, err
	}
	return k, nil
}

type publicKeyEqual interface{ Equal(crypto.PublicKey) bool }

func matchesKey(c *x509.Certificate, k crypto.Signer) bool {
	pub, ok := k.Public().(publicKeyEqual)
	return ok && pub.Equal(c.PublicKey)
}

// Serving parses the serving certificate of Secret data; its leaf is set.
func Serving(data map[string][]byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(data[KeyCert], data[KeyKey])
	if err != nil {
		return nil, fmt.Errorf("keys %s and %s: %w", KeyCert, KeyKey, err)
	}
	return &c, nil
}
