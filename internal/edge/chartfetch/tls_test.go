package chartfetch_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/helmrepotest"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
)

// tlsCertsCM is Argo CD's argocd-tls-certs-cm with pem as the certificate authorities of host.
func tlsCertsCM(host, pem string) string {
	return "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-tls-certs-cm, namespace: argocd}\ndata:\n  " + host + ": |\n    " +
		strings.ReplaceAll(strings.TrimSpace(pem), "\n", "\n    ") + "\n"
}

// A repository whose certificate no system authority signed: argocd-tls-certs-cm's authorities for its host make it
// trusted without insecure, for Helm repositories and OCI registries alike, as repo-server trusts the file of that
// host in its TLS data path (getCAPath); authorities for another host do not.
func TestRepositoryCertificateAuthorities(t *testing.T) {
	ctx := context.Background()
	srv := helmrepotest.NewTLS(t, "fleet", password, ingress("1.0.0"))
	ca, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	reg := ocitest.New(t, "fleet", ociPassword)
	reg.MustPushChart(t, chartArchive(t, ingress("1.0.0")), "charts")
	secrets := srv.Secret("charts") + "---\n" + helmOCISecret(reg, "registry")
	fetch := map[string]func(f *chartfetch.Fetcher) error{
		"helm repository": func(f *chartfetch.Fetcher) error {
			_, err := f.Chart(ctx, srv.URL, "ingress-nginx", "1.0.0")
			return err
		},
		"oci registry": func(f *chartfetch.Fetcher) error {
			_, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "1.0.0")
			return err
		},
	}
	for _, tc := range []struct {
		name, extra string
		trusted     bool
	}{
		{"no authorities", "", false},
		{"authorities of the host", tlsCertsCM("127.0.0.1", string(ca)), true},
		{"authorities of another host", tlsCertsCM("charts.example.com", string(ca)), false},
	} {
		for kind, fn := range fetch {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				err := fn(fetcher(t, secrets+tc.extra, chartfetch.Options{}))
				switch {
				case tc.trusted && err != nil:
					t.Fatalf("certificate authorities of the host: %v", err)
				case !tc.trusted && (err == nil || !strings.Contains(err.Error(), "certificate")):
					t.Fatalf("a certificate no authority signed was accepted: %v", err)
				}
			})
		}
	}
}

// tlsClientCertData and tlsClientCertKey: the repository's client certificate, sent when the server asks for one.
// One half without the other is ignored, as util/helm/client.go newTLSConfig ignores it.
func TestRepositoryClientCertificate(t *testing.T) {
	ctx := context.Background()
	pool, certPEM, keyPEM := clientCertificate(t)
	srv := helmrepotest.NewTLSClientAuth(t, pool, ingress("1.0.0"))
	secret := func(fields string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: mtls\n  labels: {argocd.argoproj.io/secret-type: repository}\n" +
			"stringData:\n  type: helm\n  url: " + srv.URL + "\n  insecure: 'true'\n" + fields
	}
	indent := func(s string) string {
		return "|\n    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") + "\n"
	}
	for _, tc := range []struct {
		name, fields string
		ok           bool
	}{
		{"none", "", false},
		{"certificate and key", "  tlsClientCertData: " + indent(certPEM) + "  tlsClientCertKey: " + indent(keyPEM), true},
		{"certificate only", "  tlsClientCertData: " + indent(certPEM), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fetcher(t, secret(tc.fields), chartfetch.Options{}).Chart(ctx, srv.URL, "ingress-nginx", "1.0.0")
			if tc.ok && err != nil {
				t.Fatalf("with the client certificate: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "not a valid certificate")) {
				t.Fatalf("without a client certificate: %v, want the server's refusal", err)
			}
			if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
}

// clientCertificate makes a certificate authority and a client certificate it signed, PEM.
func clientCertificate(t *testing.T) (*x509.CertPool, string, string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client CA"}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "fleetwave"}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}
