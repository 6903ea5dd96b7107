// Package ocitest runs a real OCI registry on loopback: the CNCF distribution registry (its registry/handlers App
// with the in-memory storage driver and, with a username, htpasswd basic auth), served over TLS by httptest or over
// plain HTTP. Helm charts are pushed with Helm's own registry client (helm.sh/helm/v3/pkg/registry Client.Push),
// other artifacts with oras-go as `oras push` writes them. It counts the manifest, blob and tag-list requests, so
// tests can prove what was downloaded. Start serves outside tests too (the demo's chart server).
package ocitest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	// The registry's in-memory storage driver and htpasswd access controller register themselves.
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

// Registry is a running registry.
type Registry struct {
	*httptest.Server
	// Host is host:port, the registry part of a reference.
	Host               string
	Username, Password string
	PlainHTTP          bool
	// TokenURL is the token service's URL (the challenge's realm) of a NewTokenAuth registry.
	TokenURL string
	// Handler, when set, answers a request instead of the registry when it returns true (after authentication).
	Handler func(w http.ResponseWriter, r *http.Request) bool

	dir    string
	signer jose.Signer // NewTokenAuth: signs the tokens the token service issues
	mu     sync.Mutex
	counts map[string]int
	tokens map[string]bool // issued tokens
	// realmHost, when set (SetRealmHost), is the host the challenge names for the token service instead of the
	// one the client asked for.
	realmHost string
}

// New starts a TLS registry for a test, with basic auth when username is not "".
func New(t testing.TB, username, password string) *Registry {
	t.Helper()
	r, err := Start(username, password, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// NewPlainHTTP starts a registry over plain HTTP for a test.
func NewPlainHTTP(t testing.TB, username, password string) *Registry {
	t.Helper()
	r, err := Start(username, password, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// NewTokenAuth starts a TLS registry that authenticates as Docker Hub, GHCR, Harbor and most hosted registries do:
// the registry answers 401 with a `Bearer realm=…,service=…,scope=…` challenge (distribution's own token access
// controller, registry/auth/token), and its token service — TokenURL, in the same server — exchanges the username
// and password for a short-lived JWT scoped to the requested repository actions: by GET with basic auth (the
// distribution token protocol, what oras-go and `helm pull` use) or by POST with an OAuth2 password grant (what
// `helm registry login` tries first). Count("token") counts the tokens issued.
func NewTokenAuth(t testing.TB, username, password string) *Registry {
	t.Helper()
	r, err := start(username, password, false, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// Start starts a registry on 127.0.0.1 with htpasswd basic auth when username is not ""; Close stops it.
func Start(username, password string, plainHTTP bool) (*Registry, error) {
	return start(username, password, plainHTTP, false)
}

// tokenService, tokenIssuer name the token service in the challenge and the JWTs it issues.
const (
	tokenService = "fleetwave-test-registry"
	tokenIssuer  = "fleetwave-test-token-service"
	tokenKeyID   = "fleetwave-test-key"
)

func start(username, password string, plainHTTP, tokenAuth bool) (*Registry, error) {
	dir, err := os.MkdirTemp("", "fleetwave-registry-")
	if err != nil {
		return nil, err
	}
	r := &Registry{Username: username, Password: password, PlainHTTP: plainHTTP, dir: dir, counts: map[string]int{}, tokens: map[string]bool{}}
	var app http.Handler
	started := false
	defer func() {
		if !started { // the listener is open from NewUnstartedServer on
			if r.Server != nil {
				r.Server.Listener.Close()
			}
			_ = os.RemoveAll(dir)
		}
	}()
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.signer != nil && req.URL.Path == tokenPath {
			r.serveToken(w, req)
			return
		}
		r.count(req)
		r.mu.Lock()
		h := r.Handler
		r.mu.Unlock()
		if h != nil && r.authorized(req) && h(w, req) {
			return
		}
		if r.signer != nil {
			host := req.Host
			r.mu.Lock()
			if r.realmHost != "" {
				host = r.realmHost
			}
			r.mu.Unlock()
			w = &realmWriter{ResponseWriter: w, realm: r.TokenURL, host: host}
		}
		app.ServeHTTP(w, req)
	}))
	scheme := "https://"
	if plainHTTP {
		scheme = "http://"
	}
	r.Host = r.Server.Listener.Addr().String()
	cfg := &configuration.Configuration{}
	cfg.Storage = configuration.Storage{
		"inmemory":    configuration.Parameters{},
		"maintenance": configuration.Parameters{"uploadpurging": map[interface{}]interface{}{"enabled": false}},
	}
	cfg.HTTP.Secret = "fleetwave-test-registry"
	cfg.Log.AccessLog.Disabled = true
	cfg.Log.Level = "error"
	switch {
	case tokenAuth:
		jwks, err := r.newSigner()
		if err != nil {
			return nil, err
		}
		file := filepath.Join(dir, "jwks.json")
		if err := os.WriteFile(file, jwks, 0o600); err != nil {
			return nil, err
		}
		r.TokenURL = scheme + r.Host + tokenPath
		cfg.Auth = configuration.Auth{"token": configuration.Parameters{
			"realm": r.TokenURL, "service": tokenService, "issuer": tokenIssuer, "jwks": file}}
	case username != "":
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(file, []byte(username+":"+string(hash)+"\n"), 0o600); err != nil {
			return nil, err
		}
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "fleetwave-test", "path": file}}
	}
	// The registry logs every request through logrus's standard logger (NewApp does not apply cfg.Log): keep
	// its warnings (a 401 challenge on every first request) and errors (the 404 of every HEAD a push makes to
	// check for a blob) out of test and benchmark output. Process-wide, so only in this test-support package.
	logrus.SetLevel(logrus.FatalLevel)
	app = handlers.NewApp(context.Background(), cfg)
	if plainHTTP {
		r.Server.Start()
	} else {
		r.Server.StartTLS()
	}
	started = true
	return r, nil
}

// Close stops the registry and removes its files.
func (r *Registry) Close() {
	r.Server.Close()
	_ = os.RemoveAll(r.dir)
}

// SetRealmHost makes a NewTokenAuth registry's challenge name its token service on host (a realm on another host
// than the client asked for); "" restores the client's.
func (r *Registry) SetRealmHost(host string) {
	r.mu.Lock()
	r.realmHost = host
	r.mu.Unlock()
}

// SetHandler sets Handler.
func (r *Registry) SetHandler(h func(w http.ResponseWriter, r *http.Request) bool) {
	r.mu.Lock()
	r.Handler = h
	r.mu.Unlock()
}

func (r *Registry) authorized(req *http.Request) bool {
	if r.signer != nil {
		prefix, tok, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		r.mu.Lock()
		defer r.mu.Unlock()
		return strings.EqualFold(prefix, "bearer") && r.tokens[tok]
	}
	if r.Username == "" {
		return true
	}
	u, p, ok := req.BasicAuth()
	return ok && u == r.Username && p == r.Password
}

// count records GET requests by kind: "manifest", "blob", "tags".
func (r *Registry) count(req *http.Request) {
	if req.Method != http.MethodGet || !r.authorized(req) {
		return
	}
	// /v2/<name>/manifests/<reference>, /v2/<name>/blobs/<digest>, /v2/<name>/tags/list: the kind is the
	// second-to-last element (a repository's name may itself hold "manifests" or "blobs").
	elems := strings.Split(strings.TrimSuffix(req.URL.Path, "/"), "/")
	if len(elems) < 4 || elems[1] != "v2" {
		return
	}
	kind := ""
	switch elems[len(elems)-2] + "/" + elems[len(elems)-1] {
	case "tags/list":
		kind = "tags"
	default:
		switch elems[len(elems)-2] {
		case "manifests":
			kind = "manifest"
		case "blobs":
			kind = "blob"
		default:
			return
		}
	}
	r.mu.Lock()
	r.counts[kind]++
	r.mu.Unlock()
}

// Count returns the number of authorized GET requests of a kind ("manifest", "blob", "tags"), or of the tokens
// issued ("token", NewTokenAuth).
func (r *Registry) Count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[kind]
}

// HTTPClient returns a client that trusts the registry's certificate.
func (r *Registry) HTTPClient() *http.Client {
	if r.PlainHTTP {
		return &http.Client{}
	}
	return r.Server.Client()
}

// Transport returns a transport that trusts the registry's certificate, for chartfetch.Options.Transport.
func (r *Registry) Transport() *http.Transport {
	if r.PlainHTTP {
		return http.DefaultTransport.(*http.Transport).Clone()
	}
	tr := r.Server.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12}
	return tr
}

// PushChart pushes a packaged chart (a .tgz) to <host>/<repository>/<name>:<version> with Helm's registry client,
// as `helm push` does; it returns the manifest digest.
func (r *Registry) PushChart(archive []byte, repository string) (string, error) {
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(r.HTTPClient()),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(r.dir, "config.json")),
	}
	if r.Username != "" {
		opts = append(opts, registry.ClientOptBasicAuth(r.Username, r.Password))
	}
	if r.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return "", err
	}
	meta, err := chartMeta(archive)
	if err != nil {
		return "", err
	}
	ref := fmt.Sprintf("%s/%s/%s:%s", r.Host, strings.Trim(repository, "/"), meta.name, strings.ReplaceAll(meta.version, "+", "_"))
	res, err := c.Push(archive, ref)
	if err != nil {
		return "", fmt.Errorf("helm push %s: %w", ref, err)
	}
	return res.Manifest.Digest, nil
}

// MustPushChart is PushChart for a test.
func (r *Registry) MustPushChart(t testing.TB, archive []byte, repository string) string {
	t.Helper()
	d, err := r.PushChart(archive, repository)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Blob is a blob of an artifact: its media type and content.
type Blob struct {
	MediaType string
	Data      []byte
}

// PushArtifact pushes a manifest with config and layers to <host>/<repository>:<tag> as `oras push` does (an
// OCI image manifest; an empty config when config.MediaType is ""), with annotations; it returns the manifest
// digest.
func (r *Registry) PushArtifact(repository, tag string, config Blob, annotations map[string]string, layers ...Blob) (string, error) {
	ctx := context.Background()
	repo, err := remote.NewRepository(r.Host + "/" + strings.Trim(repository, "/"))
	if err != nil {
		return "", err
	}
	repo.PlainHTTP = r.PlainHTTP
	repo.Client = &auth.Client{Client: r.HTTPClient(), Cache: auth.NewCache(),
		Credential: auth.StaticCredential(r.Host, auth.Credential{Username: r.Username, Password: r.Password})}
	if config.MediaType == "" {
		config = Blob{MediaType: ocispec.MediaTypeEmptyJSON, Data: []byte("{}")}
	}
	push := func(b Blob) (ocispec.Descriptor, error) {
		d := ocispec.Descriptor{MediaType: b.MediaType, Digest: digest.FromBytes(b.Data), Size: int64(len(b.Data))}
		if exists, err := repo.Exists(ctx, d); err == nil && exists {
			return d, nil
		}
		return d, repo.Push(ctx, d, bytes.NewReader(b.Data))
	}
	cd, err := push(config)
	if err != nil {
		return "", fmt.Errorf("pushing the config: %w", err)
	}
	man := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: cd, Annotations: annotations, Layers: []ocispec.Descriptor{}}
	for i, l := range layers {
		d, err := push(l)
		if err != nil {
			return "", fmt.Errorf("pushing layer %d: %w", i, err)
		}
		man.Layers = append(man.Layers, d)
	}
	body, err := json.Marshal(man)
	if err != nil {
		return "", err
	}
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(body), Size: int64(len(body))}
	if err := repo.PushReference(ctx, md, bytes.NewReader(body), tag); err != nil {
		return "", fmt.Errorf("pushing the manifest: %w", err)
	}
	return md.Digest.String(), nil
}

// MustPushArtifact is PushArtifact for a test.
func (r *Registry) MustPushArtifact(t testing.TB, repository, tag string, config Blob, annotations map[string]string, layers ...Blob) string {
	t.Helper()
	d, err := r.PushArtifact(repository, tag, config, annotations, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Secret returns an Argo CD repository Secret for url with the registry's credentials and the given extra
// stringData fields (enableOCI, type, insecure…), as YAML.
func (r *Registry) Secret(name, url string, fields map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: argocd\n  labels:\n    argocd.argoproj.io/secret-type: repository\nstringData:\n  name: %s\n  url: %q\n", name, name, url)
	if r.Username != "" {
		fmt.Fprintf(&b, "  username: %q\n  password: %q\n", r.Username, r.Password)
	}
	for _, k := range sortedKeys(fields) {
		fmt.Fprintf(&b, "  %s: %q\n", k, fields[k])
	}
	return b.String()
}

type meta struct{ name, version string }

func chartMeta(archive []byte) (meta, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return meta{}, fmt.Errorf("not a chart archive: %w", err)
	}
	return meta{ch.Metadata.Name, ch.Metadata.Version}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
