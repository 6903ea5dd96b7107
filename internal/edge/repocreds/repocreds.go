// Package repocreds reads the repositories an operator allows fleetwave to fetch from: a file of Argo CD
// declarative repository Secrets, the format platform teams already keep for Argo CD
// (https://argo-cd.readthedocs.io/en/stable/operator-manual/declarative-setup/#repositories).
//
// Two kinds of Secret are read, told apart by the label argocd.argoproj.io/secret-type:
//   - "repository": one repository, matched by URL as argo-cd's util/db/repository_secrets.go getRepositorySecret
//     matches it (git.SameURL: case-insensitive, a ".git" suffix ignored);
//   - "repo-creds": a credential template. Argo CD matches it by plain string prefix (getRepositoryCredentialIndex),
//     which is safe there because the URL is merged content; here the URL is a pull request's, and a template
//     https://charts.example.com would also cover https://charts.example.com.evil.io and
//     https://charts.example.com@evil.io. So a template covers a URL only when scheme, host and port are equal and
//     its path is a prefix of the URL's on a "/" boundary (the longest such template wins). A repository without
//     credentials of its own inherits a template's, as util/db/repository.go enrichCredsToRepo does.
//
// A URL with user information (https://user:pass@host/...) is never matched: a pull request does not choose the
// credentials, nor hide a host behind an "@".
//
// A repository is allowed when either kind matches its URL: a pull request cannot add a host. The fields read are
// secretToRepository's: url, type (helm, git, oci), name, enableOCI, username, password, insecure, insecureOCIForceHttp,
// tlsClientCertData, tlsClientCertKey, from data (base64) or stringData; and fleetwave's own passCredentials (see
// Repository.PassCredentials).
//
// The file may also hold Argo CD's argocd-tls-certs-cm ConfigMap: certificate authorities per repository host name,
// trusted for that host instead of the system's, as repo-server trusts the file of that name in its TLS data path
// (pkg/apis/application/v1alpha1/repository_types.go getCAPath, util/cert/cert.go GetCertBundlePathForRepository).
//
// Credentials are kept out of every message: Repository's String and the package's errors never print them, and
// Secrets lists them for redaction of anything else that might.
package repocreds

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Argo CD's label and its values (argo-cd common.LabelKeySecretType, LabelValueSecretTypeRepository,
// LabelValueSecretTypeRepoCreds).
const (
	LabelSecretType = "argocd.argoproj.io/secret-type"
	TypeRepository  = "repository"
	TypeRepoCreds   = "repo-creds"
)

// Repository is one allowed repository (or credential template) with its credentials.
type Repository struct {
	URL       string
	Type      string // "helm", "git", "oci"; "" is git, as in Argo CD
	Name      string
	EnableOCI bool
	Username  string
	Password  string
	Insecure  bool
	// InsecureOCIForceHTTP is insecureOCIForceHttp: an OCI registry reached over plain HTTP. Argo CD applies it to
	// native OCI sources only (v1alpha1.Repository.GetOCICreds; GetHelmCreds has no such field).
	InsecureOCIForceHTTP bool
	TLSClientCertData    string
	TLSClientCertKey     string
	// PassCredentials is the Secret's passCredentials: send the credentials also to a chart archive that the
	// repository's index.yaml places on another host, as helm does only with --pass-credentials
	// (helm.sh/helm/v3 pkg/getter/httpgetter.go: basic auth only when scheme and host equal the repository's,
	// unless passCredentialsAll). Argo CD keeps the flag on the Application (spec.source.helm.passCredentials),
	// which here is pull-request content, so only the operator's repository Secret can set it. Default false.
	PassCredentials bool
	// Source names where the entry was read (file and Secret name), for messages.
	Source string
}

// HasCredentials is v1alpha1.Repository.HasCredentials for the fields read here.
func (r Repository) HasCredentials() bool {
	return r.Username != "" || r.Password != "" || r.TLSClientCertData != "" || r.TLSClientCertKey != ""
}

// String prints the repository without any credential.
func (r Repository) String() string {
	return fmt.Sprintf("%s (%s)", RedactURL(r.URL), r.Source)
}

// Set is the allowed repositories. The zero value and nil allow nothing.
type Set struct {
	repos []Repository      // secret-type repository
	creds []Repository      // secret-type repo-creds
	cas   map[string]string // argocd-tls-certs-cm: PEM certificate authorities by host name
}

// TLSCertsConfigMap is the name of Argo CD's ConfigMap of repository certificate authorities (argo-cd
// common.ArgoCDTLSCertsConfigMapName).
const TLSCertsConfigMap = "argocd-tls-certs-cm"

// Load reads the file at path. An empty path returns an empty Set.
func Load(path string) (*Set, error) {
	if path == "" {
		return &Set{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("repositories file: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a YAML (or JSON) stream of Secrets, or a List of them. Every document must be a Secret labelled as a
// repository or repo-creds Secret with a url, or the ConfigMap argocd-tls-certs-cm; anything else is an error naming
// the document, so a typo does not silently allow nothing.
func Parse(name string, data []byte) (*Set, error) {
	s := &Set{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var raw map[string]interface{}
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: document %d: %v", name, doc, err)
		}
		if raw == nil {
			continue
		}
		items := []interface{}{raw}
		if k, _ := raw["kind"].(string); strings.HasSuffix(k, "List") {
			items, _ = raw["items"].([]interface{})
		}
		for i, it := range items {
			where := fmt.Sprintf("%s: document %d", name, doc)
			if len(items) > 1 || raw["items"] != nil {
				where = fmt.Sprintf("%s item %d", where, i+1)
			}
			b, err := yaml.Marshal(it)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
			if err := s.add(name, where, b); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

func (s *Set) add(file, where string, b []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(b, &tm); err == nil && tm.Kind == "ConfigMap" {
		return s.addCAs(where, b)
	}
	var sec corev1.Secret
	if err := yaml.UnmarshalStrict(b, &sec); err != nil {
		return fmt.Errorf("%s: not a Secret: %v", where, scrub(err))
	}
	if sec.Kind != "Secret" {
		return fmt.Errorf("%s: kind %q, want Secret", where, sec.Kind)
	}
	if sec.Name != "" {
		where = fmt.Sprintf("%s (Secret %s)", where, sec.Name)
	}
	typ := sec.Labels[LabelSecretType]
	if typ != TypeRepository && typ != TypeRepoCreds {
		return fmt.Errorf("%s: label %s is %q, want %q or %q", where, LabelSecretType, typ, TypeRepository, TypeRepoCreds)
	}
	get := func(k string) string {
		if v, ok := sec.StringData[k]; ok {
			return v
		}
		return string(sec.Data[k])
	}
	boolean := func(k string) (bool, error) {
		v := get(k)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s: %s: %q is not a boolean", where, k, v)
		}
		return b, nil
	}
	r := Repository{
		URL: strings.TrimSpace(get("url")), Type: get("type"), Name: get("name"),
		Username: get("username"), Password: get("password"),
		TLSClientCertData: get("tlsClientCertData"), TLSClientCertKey: get("tlsClientCertKey"),
		Source: file,
	}
	if sec.Name != "" {
		r.Source = file + " Secret " + sec.Name
	}
	var err error
	if r.EnableOCI, err = boolean("enableOCI"); err != nil {
		return err
	}
	if r.Insecure, err = boolean("insecure"); err != nil {
		return err
	}
	if r.InsecureOCIForceHTTP, err = boolean("insecureOCIForceHttp"); err != nil {
		return err
	}
	if r.PassCredentials, err = boolean("passCredentials"); err != nil {
		return err
	}
	if r.URL == "" {
		return fmt.Errorf("%s: no url", where)
	}
	switch r.Type {
	case "", "git", "helm", "oci":
	default:
		return fmt.Errorf("%s: type %q, want helm, git or oci", where, r.Type)
	}
	if typ == TypeRepository {
		s.repos = append(s.repos, r)
	} else {
		s.creds = append(s.creds, r)
	}
	return nil
}

// addCAs reads argocd-tls-certs-cm: each key a host name, each value PEM certificates (Argo CD writes each to
// <tls data path>/<host>).
func (s *Set) addCAs(where string, b []byte) error {
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(b, &cm); err != nil {
		return fmt.Errorf("%s: not a ConfigMap: %v", where, scrub(err))
	}
	if cm.Name != TLSCertsConfigMap {
		return fmt.Errorf("%s: ConfigMap %q, want %s (certificate authorities by host) or repository Secrets", where, cm.Name, TLSCertsConfigMap)
	}
	if s.cas == nil {
		s.cas = map[string]string{}
	}
	for host, data := range cm.Data {
		if host == "" || strings.ContainsAny(host, "/:\\") {
			return fmt.Errorf("%s (ConfigMap %s): key %q is not a host name", where, cm.Name, host)
		}
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(data)) {
			return fmt.Errorf("%s (ConfigMap %s): %s holds no PEM certificate", where, cm.Name, host)
		}
		if _, dup := s.cas[host]; dup {
			return fmt.Errorf("%s (ConfigMap %s): certificate authorities for %s are given twice", where, cm.Name, host)
		}
		s.cas[host] = data
	}
	return nil
}

// CertificateAuthorities returns the PEM certificate authorities argocd-tls-certs-cm gives for repoURL's host, or
// nil: getCAPath's host (the URL's host name without port; a scheme-less URL read as if it had one; none for ssh).
// Argo CD's Helm and OCI clients then trust them instead of the system's (util/helm/client.go and util/oci/client.go
// newTLSConfig: RootCAs is that pool alone).
func (s *Set) CertificateAuthorities(repoURL string) []byte {
	if s == nil || len(s.cas) == 0 || strings.HasPrefix(repoURL, "ssh://") || strings.HasPrefix(repoURL, "git@") {
		return nil
	}
	u := repoURL
	if !strings.Contains(u, "://") {
		u = "protocol://" + u
	}
	p, err := url.Parse(u)
	if err != nil || p.Hostname() == "" {
		return nil
	}
	if data, ok := s.cas[p.Hostname()]; ok {
		return []byte(data)
	}
	return nil
}

// scrub drops the YAML error's quoting of values, which could hold a credential; the message keeps its field.
func scrub(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.Contains(msg, "unknown field") {
		return msg[i+2:]
	}
	if strings.Contains(msg, "illegal base64") {
		return "a data value is not valid base64"
	}
	return "malformed document"
}

// Len is the number of entries (repositories and credential templates).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.repos) + len(s.creds)
}

// Lookup returns the repository repoURL is allowed as, with its credentials: a repository Secret of the same URL
// (inheriting a matching template's credentials when it has none), else the longest matching repo-creds template
// with repoURL as its URL. ok is false when nothing allows repoURL, and always when repoURL carries user
// information (HasUserinfo).
func (s *Set) Lookup(repoURL string) (Repository, bool) {
	if s == nil || repoURL == "" || HasUserinfo(repoURL) {
		return Repository{}, false
	}
	creds, hasCreds := s.credsFor(repoURL)
	for _, r := range s.repos {
		if SameURL(r.URL, repoURL) {
			if !r.HasCredentials() && hasCreds {
				r.Username, r.Password = creds.Username, creds.Password
				r.TLSClientCertData, r.TLSClientCertKey = creds.TLSClientCertData, creds.TLSClientCertKey
			}
			return r, true
		}
	}
	if hasCreds {
		creds.URL = repoURL
		creds.Name = ""
		return creds, true
	}
	return Repository{}, false
}

// ByName returns the repository Secret whose name is name (Helm dependencies may name a repository "@name" or
// "alias:name", which Argo CD resolves against the names of its repositories).
func (s *Set) ByName(name string) (Repository, bool) {
	if s == nil || name == "" {
		return Repository{}, false
	}
	for _, r := range s.repos {
		if r.Name == name {
			return s.Lookup(r.URL)
		}
	}
	return Repository{}, false
}

// OCIDependency returns the repository Secret whose credentials an `oci://` Helm dependency on dep (the
// repository without "oci://") is fetched with when no Secret matches its URL: reposerver/repository/repository.go
// getHelmDependencyRepos's last resort, the first enableOCI repository whose url prefixes dep or is prefixed by
// it, or `type: oci` repository likewise with "oci://" in front of dep. The result's URL is dep. Unlike Argo CD's
// string prefixes, both are compared as parsed URLs (same registry host and port, paths on a "/" boundary): dep
// comes from a pull request's Chart.yaml, and "registry.example" is a string prefix of "registry.example.com/x".
func (s *Set) OCIDependency(dep string) (Repository, bool) {
	if s == nil || dep == "" || HasUserinfo(dep) {
		return Repository{}, false
	}
	for _, r := range s.repos {
		if r.EnableOCI && (Covers(r.URL, dep) || Covers(dep, r.URL)) ||
			r.Type == "oci" && (Covers(r.URL, "oci://"+dep) || Covers("oci://"+dep, r.URL)) {
			r.URL = dep
			r.EnableOCI = true
			return r, true
		}
	}
	return Repository{}, false
}

// credsFor is getRepositoryCredentialIndex with parsed URLs: the template that Covers repoURL with the longest path.
func (s *Set) credsFor(repoURL string) (Repository, bool) {
	best, maxLen := -1, -1
	for i, c := range s.creds {
		if !Covers(c.URL, repoURL) {
			continue
		}
		if p, _ := parse(c.URL); len(p.path) > maxLen {
			best, maxLen = i, len(p.path)
		}
	}
	if best < 0 {
		return Repository{}, false
	}
	return s.creds[best], true
}

// Secrets returns every credential value, for redaction (config.Redact) of text that might contain one.
func (s *Set) Secrets() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, list := range [][]Repository{s.repos, s.creds} {
		for _, r := range list {
			for _, v := range []string{r.Password, r.TLSClientCertKey} {
				if v != "" {
					out = append(out, v)
				}
			}
			if u, err := url.Parse(r.URL); err == nil && u.User != nil {
				if p, ok := u.User.Password(); ok {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// NormalizeURL is argo-cd util/git NormalizeGitURL for http(s) and scheme-less URLs: lower case, surrounding space
// and a ".git" suffix dropped, re-printed by net/url. An unparsable URL normalises to itself, lower-cased.
func NormalizeURL(u string) string {
	u = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(u)), ".git")
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.String()
}

// SameURL is argo-cd util/git SameURL.
func SameURL(a, b string) bool {
	na, nb := NormalizeURL(a), NormalizeURL(b)
	return na != "" && na == nb
}

// RedactURL returns u without user information, for messages: a repoURL written with credentials in it must not
// carry them into an error.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		if i := strings.Index(u, "@"); i >= 0 && strings.Contains(u[:i], "://") {
			return u[:strings.Index(u, "://")+3] + u[i+1:]
		}
		return u
	}
	p.User = nil
	return p.String()
}

// repoURL is a repository URL taken apart for matching: lower case, a ".git" suffix and trailing "/" dropped, the
// default port of http, https and ssh made explicit, an scp-like git@host:path read as ssh://git@host/path and a
// URL without a scheme (an OCI registry) kept with an empty scheme.
type repoURL struct {
	scheme, host, port, path string
	user                     bool
}

var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22", "oci": "443"}

func parse(raw string) (repoURL, bool) {
	s := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(raw)), ".git")
	if s == "" {
		return repoURL{}, false
	}
	scheme := ""
	if i := strings.Index(s, "://"); i >= 0 {
		scheme = s[:i]
	} else if at, colon := strings.Index(s, "@"), strings.Index(s, ":"); at >= 0 && colon > at && !strings.Contains(s[:colon], "/") {
		// scp-like git@host:org/repo
		scheme, s = "ssh", "ssh://"+s[:colon]+"/"+s[colon+1:]
	} else {
		s = "none://" + s
	}
	p, err := url.Parse(s)
	if err != nil || p.Hostname() == "" || strings.ContainsAny(p.Host, "\\") {
		return repoURL{}, false
	}
	port := p.Port()
	if port == "" {
		port = defaultPorts[scheme]
	}
	return repoURL{scheme: scheme, host: p.Hostname(), port: port, path: strings.TrimRight(p.Path, "/"), user: p.User != nil}, true
}

// Covers reports whether template covers u: both parse, scheme, host and port are equal, and the template's path is
// u's path or a prefix of it ending at a "/". User information is not compared (an ssh template names its user).
func Covers(template, u string) bool {
	t, ok1 := parse(template)
	p, ok2 := parse(u)
	if !ok1 || !ok2 || t.scheme != p.scheme || t.host != p.host || t.port != p.port {
		return false
	}
	return t.path == "" || p.path == t.path || strings.HasPrefix(p.path, t.path+"/")
}

// SameHost reports whether a and b name the same scheme, host and port: where a credential of a may be sent.
func SameHost(a, b string) bool {
	pa, ok1 := parse(a)
	pb, ok2 := parse(b)
	return ok1 && ok2 && pa.scheme == pb.scheme && pa.host == pb.host && pa.port == pb.port
}

// HasUserinfo reports whether u carries user information ("user@" or "user:pass@" before its host), which a URL
// from pull-request content may not: an ssh URL's user (ssh://git@host/..., git@host:...) without a password is not
// counted. A URL that does not parse but has an "@" before its first "/" after the scheme counts too.
func HasUserinfo(u string) bool {
	u = strings.TrimSpace(u)
	rest := u
	if i := strings.Index(u, "://"); i >= 0 {
		rest = u[i+3:]
	}
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return false
	}
	lower := strings.ToLower(u)
	ssh := strings.HasPrefix(lower, "ssh://") || !strings.Contains(u, "://") && strings.Contains(rest[at:], ":")
	return !ssh || strings.Contains(rest[:at], ":")
}
