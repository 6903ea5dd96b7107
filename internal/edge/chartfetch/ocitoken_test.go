package chartfetch_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch/ocitest"
)

// A registry that wants bearer tokens (Docker Hub, GHCR, Harbor…): the repository Secret's username and password are
// exchanged at the token service the 401 challenge names, as oras-go's auth.Client does for Helm's registry client
// (helm pull) and for Argo CD's util/oci client, and the token is reused for the repository's requests.
func TestOCIBearerTokenRegistry(t *testing.T) {
	reg := ocitest.NewTokenAuth(t, "fleet", ociPassword)
	for _, v := range []string{"4.10.0", "4.11.0"} {
		reg.MustPushChart(t, chartArchive(t, ingress(v)), "charts")
	}
	reg.MustPushArtifact(t, "manifests/app", "1.0.0", ocitest.Blob{}, nil,
		ocitest.Blob{MediaType: layerTarGzip, Data: tgz(t, entry{name: "base/cm.yaml", body: "kind: ConfigMap\ndata: {v: token}\n"})})

	// The registry itself refuses basic auth: it only takes its token service's tokens.
	req, _ := http.NewRequest(http.MethodGet, "https://"+reg.Host+"/v2/charts/ingress-nginx/tags/list", nil)
	req.SetBasicAuth("fleet", ociPassword)
	resp, err := reg.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(ch, "Bearer realm=\""+reg.TokenURL+"\"") {
		t.Fatalf("basic auth on the registry: %s, challenge %q; want 401 with a bearer challenge", resp.Status, ch)
	}

	secrets := helmOCISecret(reg, "charts") + "---\n" + reg.Secret("app", "oci://"+reg.Host+"/manifests/app", map[string]string{"type": "oci"})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fetch func(f *chartfetch.Fetcher) (string, error)
		want  string
	}{
		{"chart at a version", func(f *chartfetch.Fetcher) (string, error) {
			ch, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "4.10.0")
			return chartFile(ch, "templates/cm.yaml"), err
		}, "version: 4.10.0"},
		{"chart at a constraint", func(f *chartfetch.Fetcher) (string, error) {
			ch, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "~4.10 || ^4.11")
			return chartFile(ch, "templates/cm.yaml"), err
		}, "version: 4.11.0"},
		{"dependency", func(f *chartfetch.Fetcher) (string, error) {
			data, v, err := f.Archive(ctx, "oci://"+reg.Host+"/charts", "ingress-nginx", "^4.10.0")
			if err == nil && len(data) == 0 {
				v = "an empty archive"
			}
			return "version: " + v, err
		}, "version: 4.11.0"},
		{"native OCI source", func(f *chartfetch.Fetcher) (string, error) {
			ch, err := f.Chart(ctx, "oci://"+reg.Host+"/manifests/app", "", "1.0.0")
			return chartFile(ch, "base/cm.yaml"), err
		}, "v: token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fetcher(t, secrets, chartfetch.Options{Transport: reg.Transport()})
			before := reg.Count("token")
			got, err := tc.fetch(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("fetched %q, want %q", got, tc.want)
			}
			// One repository, one scope (pull): one token for its tags, manifest and blob requests.
			if n := reg.Count("token") - before; n != 1 {
				t.Errorf("%d tokens issued, want 1 (the token is reused for the repository's requests)", n)
			}
		})
	}

	// Wrong password: the token service's 401 is one line with the hint, never the password.
	f := fetcher(t, strings.ReplaceAll(secrets, ociPassword, "not-the-"+ociPassword), chartfetch.Options{Transport: reg.Transport()})
	for _, fetch := range []func() error{
		func() error { _, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "4.10.0"); return err },
		func() error { _, err := f.Chart(ctx, reg.Host+"/charts", "ingress-nginx", "^4"); return err },
		func() error { _, err := f.Chart(ctx, "oci://"+reg.Host+"/manifests/app", "", "1.0.0"); return err },
	} {
		err := fetch()
		if err == nil || !strings.Contains(err.Error(), "401 Unauthorized (check the credentials of its repository Secret)") ||
			strings.Contains(err.Error(), ociPassword) || strings.Contains(err.Error(), "\n") {
			t.Errorf("wrong password: %v", err)
		}
	}
}

// A challenge naming a token service on a loopback or private address other than the registry's host gets no
// credentials: oras-go's validateRealm refuses it before asking (stricter than Argo CD v3.2.11, whose oras-go
// v2.6.0 sends them), and the error is one line without the password.
func TestOCIBearerRealmOnPrivateAddressRefused(t *testing.T) {
	reg := ocitest.NewTokenAuth(t, "fleet", ociPassword)
	reg.MustPushChart(t, chartArchive(t, ingress("4.10.0")), "charts")
	_, port, _ := strings.Cut(reg.Host, ":")
	byName := "localhost:" + port // the registry by name, its token service at 127.0.0.1
	reg.SetRealmHost(reg.Host)
	insecure := reg.Secret("charts", byName+"/charts", map[string]string{"type": "helm", "enableOCI": "true", "insecure": "true"})
	before := reg.Count("token")
	_, err := fetcher(t, insecure, chartfetch.Options{}).Chart(context.Background(), byName+"/charts", "ingress-nginx", "4.10.0")
	if err == nil || !strings.Contains(err.Error(), "loopback") || strings.Contains(err.Error(), ociPassword) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("realm on 127.0.0.1 for a registry named localhost: %v", err)
	}
	if n := reg.Count("token") - before; n != 0 {
		t.Errorf("the token service issued %d tokens: the credentials reached it", n)
	}
	// The same registry with its token service on its own host name works.
	reg.SetRealmHost("")
	if _, err := fetcher(t, insecure, chartfetch.Options{}).Chart(context.Background(), byName+"/charts", "ingress-nginx", "4.10.0"); err != nil {
		t.Fatalf("realm on the registry's host: %v", err)
	}
}

func chartFile(ch *chartfetch.Chart, name string) string {
	if ch == nil {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(ch.Dir, name))
	return string(b)
}
