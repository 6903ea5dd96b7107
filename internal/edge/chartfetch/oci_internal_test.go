package chartfetch

import (
	"fmt"
	"testing"
	"time"
)

// isHelmOCIRepo is Argo CD's IsHelmOciRepo, quirks included: a host with a port parses as a scheme when the host
// starts with a letter, and not at all when it starts with a digit (such a repository needs enableOCI).
func TestIsHelmOCIRepo(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"registry.example.com/charts", true},
		{"registry.example.com:5000/charts", true},
		{"ghcr.io/org", true},
		{"127.0.0.1:5000/charts", false},
		{"https://charts.example.com", false},
		{"oci://registry.example.com/charts", false},
		{"", false},
	} {
		if got := isHelmOCIRepo(tc.url); got != tc.want {
			t.Errorf("isHelmOCIRepo(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

func TestOCIRefAndHost(t *testing.T) {
	for _, tc := range []struct{ repoURL, chart, ref, host string }{
		{"registry.example.com/charts", "nginx", "registry.example.com/charts/nginx", "registry.example.com"},
		{"registry.example.com/charts/", "nginx", "registry.example.com/charts/nginx", "registry.example.com"},
		{"https://registry.example.com/charts", "nginx", "registry.example.com/charts/nginx", "registry.example.com"},
		{"oci://127.0.0.1:5000/manifests/app", "", "127.0.0.1:5000/manifests/app", "127.0.0.1:5000"},
		{"127.0.0.1:5000/charts", "x", "127.0.0.1:5000/charts/x", "127.0.0.1:5000"},
	} {
		if got := ociRef(tc.repoURL, tc.chart); got != tc.ref {
			t.Errorf("ociRef(%q, %q) = %q, want %q", tc.repoURL, tc.chart, got, tc.ref)
		}
		if got, err := repositoryHost(tc.repoURL); err != nil || got != tc.host {
			t.Errorf("repositoryHost(%q) = %q, %v; want %q", tc.repoURL, got, err, tc.host)
		}
	}
}

// The memos of tags and manifests a pull request names are bounded: past maxOCIMemos, stale ones go.
func TestOCIMemosBounded(t *testing.T) {
	f, err := New(Options{CacheDir: t.TempDir(), IndexTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3*maxOCIMemos; i++ {
		m := f.ociMemo(fmt.Sprintf("manifest\x00ref\x00tag-%d", i))
		m.mu.Lock()
		m.fetched, m.at = true, time.Now().Add(-time.Second)
		m.mu.Unlock()
	}
	f.mu.Lock()
	n := len(f.oci)
	f.mu.Unlock()
	if n > maxOCIMemos {
		t.Errorf("%d memos kept, want at most %d", n, maxOCIMemos)
	}
}
