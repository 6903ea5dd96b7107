package argocdsim

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWithResourceVersion: the stream reuses a commit's encoding; it must be byte for byte what encoding the
// object with its resourceVersion gives.
func TestWithResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta metav1.ObjectMeta
		want bool
	}{
		{"minimal", metav1.ObjectMeta{Name: "a", UID: "u-1"}, true},
		{"full", metav1.ObjectMeta{Name: "a", Namespace: "argocd", UID: "u-1", Generation: 3,
			Labels: map[string]string{"uid": `"uid":"x"`}, Annotations: map[string]string{"k": "v"},
			OwnerReferences: []metav1.OwnerReference{{UID: "owner", Name: "set"}}}, true},
		{"no uid", metav1.ObjectMeta{Name: "a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &v1alpha1.Application{ObjectMeta: tc.meta}
			a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example/x.git", Path: "p"}
			without, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			a.ResourceVersion = "42"
			want, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			got := withResourceVersion(without, "42")
			if !tc.want {
				if got != nil {
					t.Fatalf("got %s, want nil (no place to put it)", got)
				}
				return
			}
			if string(got) != string(want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// The corpus apps run revB; HEAD resolves to revA, where a sync takes them.
const (
	revA = "1111111111111111111111111111111111111111"
	revB = "2222222222222222222222222222222222222222"
)

// newCorpus is a simulator with the corpus apps (AddCorpus), closed when the test ends.
func newCorpus(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s := New(cfg)
	tb.Cleanup(s.Close)
	s.SetRef("HEAD", revA)
	if err := s.AddCorpus(revB); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestEncodeAppMatchesEncodingJSON holds the simulator's encoder (github.com/goccy/go-json) to encoding/json's
// bytes, on apps in the states a rollout meets: never synced, synced, an operation running, failed, Degraded,
// multi-source, refreshed, with history, resources, labels and annotations that need escaping, and stale.
func TestEncodeAppMatchesEncodingJSON(t *testing.T) {
	s := newCorpus(t, Config{SyncDuration: 20 * time.Millisecond, ReconcileDelay: 5 * time.Millisecond, ProgressingFor: 10 * time.Millisecond,
		StaleStatusFor: 15 * time.Millisecond})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	compared := map[string]bool{}
	check := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for name, st := range s.apps {
			for _, a := range []*v1alpha1.Application{st.app, s.viewLocked(st)} {
				got, err := encodeApp(a)
				if err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(a)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Fatalf("%s: encodings differ\ngoccy:         %s\nencoding/json: %s", name, got, want)
				}
				compared[string(got)] = true
			}
		}
	}
	check()
	post := func(path, body string) {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, name := range CorpusApps {
		post("/api/v1/applications/"+name+"/sync", `{"revision":"`+revA+`","prune":true}`)
		check()
	}
	deadline := time.Now().Add(150 * time.Millisecond)
	for time.Now().Before(deadline) {
		check()
		time.Sleep(2 * time.Millisecond)
	}
	resp, err := srv.Client().Get(srv.URL + "/api/v1/applications/synced?refresh=normal")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	check()
	if len(compared) < 20 {
		t.Fatalf("only %d distinct encodings compared: the apps did not go through their states", len(compared))
	}
}
