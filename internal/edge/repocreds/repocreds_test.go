package repocreds_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
)

const file = `apiVersion: v1
kind: Secret
metadata:
  name: ingress-nginx
  labels:
    argocd.argoproj.io/secret-type: repository
stringData:
  type: helm
  name: ingress-nginx
  url: https://kubernetes.github.io/ingress-nginx
---
apiVersion: v1
kind: Secret
metadata:
  name: private
  labels:
    argocd.argoproj.io/secret-type: repository
data:
  url: aHR0cHM6Ly9jaGFydHMuZXhhbXBsZS5jb20vcHJpdmF0ZQ== # https://charts.example.com/private
  username: Ym90 # bot
  password: aHVudGVyMg== # hunter2
  insecure: dHJ1ZQ== # true
---
apiVersion: v1
kind: SecretList
items:
- apiVersion: v1
  kind: Secret
  metadata:
    name: example-creds
    labels:
      argocd.argoproj.io/secret-type: repo-creds
  stringData:
    url: https://charts.example.com
    username: org
    password: org-password
- apiVersion: v1
  kind: Secret
  metadata:
    name: example-team-creds
    labels:
      argocd.argoproj.io/secret-type: repo-creds
  stringData:
    url: https://charts.example.com/team
    username: team
    password: team-password
`

func TestLookup(t *testing.T) {
	s, err := repocreds.Parse("repos.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url, user, pass string
		ok, insecure    bool
	}{
		{url: "https://kubernetes.github.io/ingress-nginx", ok: true},
		{url: "HTTPS://Kubernetes.github.io/ingress-nginx.git", ok: true}, // git.SameURL
		{url: "https://kubernetes.github.io/ingress", ok: false},
		{url: "https://charts.example.com/private", user: "bot", pass: "hunter2", ok: true, insecure: true},
		{url: "https://charts.example.com/other", user: "org", pass: "org-password", ok: true},    // repo-creds prefix
		{url: "https://charts.example.com/team/x", user: "team", pass: "team-password", ok: true}, // the longest prefix wins
		// A template covers a URL by scheme, host, port and a path prefix on a "/" boundary, never by string prefix
		// (issue 38 item 4: the URL is a pull request's).
		{url: "https://charts.example.com.evil.io/x", ok: false},
		{url: "https://charts.example.com@evil.io/x", ok: false},
		{url: "https://charts.example.com:8443/x", ok: false},
		{url: "http://charts.example.com/x", ok: false},
		{url: "https://charts.example.com:443/x", user: "org", pass: "org-password", ok: true},
		{url: "https://Charts.Example.com/teamx", user: "org", pass: "org-password", ok: true}, // not team's: no "/" boundary
		{url: "https://charts.example.com", user: "org", pass: "org-password", ok: true},
		{url: "https://x:y@charts.example.com/other", ok: false}, // userinfo: never matched
		{url: "https://evil.io/https://charts.example.com", ok: false},
	} {
		r, ok := s.Lookup(tc.url)
		if ok != tc.ok || r.Username != tc.user || r.Password != tc.pass || r.Insecure != tc.insecure {
			t.Errorf("Lookup(%s) = %+v, %v", tc.url, r, ok)
		}
		if strings.Contains(r.String(), "password") || strings.Contains(r.String(), "hunter2") {
			t.Errorf("String() prints a credential: %s", r)
		}
	}
	if r, ok := s.ByName("ingress-nginx"); !ok || r.URL != "https://kubernetes.github.io/ingress-nginx" {
		t.Errorf("ByName = %+v, %v", r, ok)
	}
	got := strings.Join(s.Secrets(), ",")
	if got != "hunter2,org-password,team-password" {
		t.Errorf("Secrets() = %s", got)
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		template, u string
		want        bool
	}{
		{"https://charts.example.com", "https://charts.example.com/a", true},
		{"https://charts.example.com/", "https://charts.example.com/a", true},
		{"https://charts.example.com", "https://charts.example.com.evil.io", false},
		{"https://charts.example.com", "https://charts.example.com@evil.io", false},
		{"http://127.0.0.1", "http://127.0.0.12/x", false},
		{"http://127.0.0.1", "http://127.0.0.1:80/x", true},
		{"https://github.com/org", "https://github.com/org/repo.git", true},
		{"https://github.com/org", "https://github.com/org-evil/repo", false},
		{"git@github.com:org", "git@github.com:org/repo.git", true},
		{"ssh://git@github.com/org", "git@github.com:org/repo", true},
		{"ssh://git@github.com/org", "git@github.com.evil.io:org/repo", false},
		{"registry.example.com/charts", "registry.example.com/charts/app", true},
		{"registry.example.com/charts", "registry.example.com.evil.io/charts", false},
		{"registry.example", "registry.example.com/charts", false},
		{"oci://registry.example.com", "registry.example.com/x", false}, // scheme differs
	} {
		if got := repocreds.Covers(tc.template, tc.u); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.template, tc.u, got, tc.want)
		}
	}
}

func TestHasUserinfo(t *testing.T) {
	for u, want := range map[string]bool{
		"https://charts.example.com/x":         false,
		"https://charts.example.com@evil.io":   true,
		"https://u:p@charts.example.com/x":     true,
		"charts.example.com@evil.io/x":         true,
		"oci://u@registry.example.com/x":       true,
		"git@github.com:org/repo.git":          false,
		"ssh://git@github.com/org/repo":        false,
		"ssh://git:pw@github.com/org/repo":     true,
		"https://charts.example.com/a@b/c":     false, // an "@" in the path is not user information
		"https://charts.example.com?x=a@b":     false,
		"registry.example.com:5000/charts/app": false,
	} {
		if got := repocreds.HasUserinfo(u); got != want {
			t.Errorf("HasUserinfo(%q) = %v, want %v", u, got, want)
		}
	}
}

// An oci:// dependency's last-resort repository is matched as a parsed URL, not a string prefix either way.
func TestOCIDependencyBoundary(t *testing.T) {
	s, err := repocreds.Parse("repos.yaml", []byte(`apiVersion: v1
kind: Secret
metadata:
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {url: "registry.example.com/charts", enableOCI: "true", username: u, password: p}
`))
	if err != nil {
		t.Fatal(err)
	}
	for dep, want := range map[string]bool{
		"registry.example.com/charts/app": true,
		"registry.example.com":            true, // prefixed by the repository's URL, as Argo CD allows
		"registry.example":                false,
		"registry.example.com.evil.io/x":  false,
		"registry.example.com/chartsevil": false,
		"registry.example.com@evil.io/x":  false,
	} {
		if _, ok := s.OCIDependency(dep); ok != want {
			t.Errorf("OCIDependency(%q) = %v, want %v", dep, ok, want)
		}
	}
}

func TestPassCredentials(t *testing.T) {
	s, err := repocreds.Parse("repos.yaml", []byte(`apiVersion: v1
kind: Secret
metadata:
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {url: "https://charts.example.com", type: helm, username: u, password: p, passCredentials: "true"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Lookup("https://charts.example.com"); !ok || !r.PassCredentials {
		t.Errorf("Lookup = %+v, %v: passCredentials not read", r, ok)
	}
	if r, _ := mustParse(t, file).Lookup("https://charts.example.com/private"); r.PassCredentials {
		t.Error("passCredentials defaults to true")
	}
}

func mustParse(t *testing.T, in string) *repocreds.Set {
	t.Helper()
	s, err := repocreds.Parse("repos.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInheritedCredentials(t *testing.T) {
	s, err := repocreds.Parse("repos.yaml", []byte(`apiVersion: v1
kind: Secret
metadata:
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {url: "https://charts.example.com/a", type: helm}
---
apiVersion: v1
kind: Secret
metadata:
  labels: {argocd.argoproj.io/secret-type: repo-creds}
stringData: {url: "https://charts.example.com", username: u, password: p-inherited}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.Lookup("https://charts.example.com/a")
	if !ok || r.Type != "helm" || r.Password != "p-inherited" {
		t.Errorf("Lookup = %+v, %v", r, ok)
	}
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"no label":     {"apiVersion: v1\nkind: Secret\nstringData: {url: x}\n", `label argocd.argoproj.io/secret-type is ""`},
		"no url":       {"apiVersion: v1\nkind: Secret\nmetadata: {labels: {argocd.argoproj.io/secret-type: repository}}\nstringData: {password: topsecret1}\n", "no url"},
		"bad type":     {"apiVersion: v1\nkind: Secret\nmetadata: {labels: {argocd.argoproj.io/secret-type: repository}}\nstringData: {url: x, type: svn}\n", `type "svn"`},
		"bad bool":     {"apiVersion: v1\nkind: Secret\nmetadata: {labels: {argocd.argoproj.io/secret-type: repository}}\nstringData: {url: x, insecure: maybe}\n", "insecure"},
		"not a secret": {"apiVersion: v1\nkind: Service\n", `kind "Service"`},
		"other cm":     {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm}\n", `ConfigMap "argocd-cm", want argocd-tls-certs-cm`},
		"no pem":       {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-tls-certs-cm}\ndata: {charts.example.com: not a certificate}\n", "charts.example.com holds no PEM certificate"},
		"not a host":   {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-tls-certs-cm}\ndata: {'charts.example.com:443': x}\n", `key "charts.example.com:443" is not a host name`},
		"bad base64":   {"apiVersion: v1\nkind: Secret\nmetadata: {labels: {argocd.argoproj.io/secret-type: repository}}\ndata: {password: 'topsecret!!'}\n", "not valid base64"},
		"unknown key":  {"apiVersion: v1\nkind: Secret\nmetadata: {labels: {argocd.argoproj.io/secret-type: repository}}\nstrData: {password: topsecret1}\n", "unknown field"},
	} {
		_, err := repocreds.Parse("repos.yaml", []byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("%s: error leaks the secret: %v", name, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	if got := repocreds.RedactURL("https://bot:hunter2@charts.example.com/x"); got != "https://charts.example.com/x" {
		t.Errorf("RedactURL = %s", got)
	}
}

// argocd-tls-certs-cm in the file: certificate authorities by host, found for a repository URL by getCAPath's
// host (no port; scheme-less and oci:// URLs too; never for ssh).
func TestCertificateAuthorities(t *testing.T) {
	ca := selfSigned(t)
	indented := "    " + strings.ReplaceAll(strings.TrimSpace(ca), "\n", "\n    ")
	s, err := repocreds.Parse("repos.yaml", []byte(file+"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-tls-certs-cm\n  namespace: argocd\n"+
		"data:\n  charts.example.com: |\n"+indented+"\n  registry.example.com: |\n"+indented+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 4 {
		t.Errorf("Len = %d: the ConfigMap is not a repository", s.Len())
	}
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"https://charts.example.com/private", true},
		{"https://charts.example.com:8443/private", true},
		{"registry.example.com:5000/charts", true},
		{"oci://registry.example.com/manifests/app", true},
		{"https://other.example.com/charts", false},
		{"ssh://charts.example.com/repo.git", false},
		{"", false},
	} {
		got := s.CertificateAuthorities(tc.url)
		if (got != nil) != tc.want || (got != nil && strings.TrimSpace(string(got)) != strings.TrimSpace(ca)) {
			t.Errorf("CertificateAuthorities(%q) = %q, want certificates: %v", tc.url, got, tc.want)
		}
	}
	// Twice for one host is an error, not a silent choice.
	twice := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-tls-certs-cm}\ndata:\n  charts.example.com: |\n" + indented + "\n"
	if _, err := repocreds.Parse("repos.yaml", []byte(twice+"---\n"+twice)); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("the same host twice: %v", err)
	}
}

func selfSigned(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
