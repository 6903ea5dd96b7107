package fleetview

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// TestRolloutPageAcrossInstances: in a rollout across Argo CD instances each app shows its instance (linked to
// its own instance's UI), and a running wave says which instance holds its apps and why. A one-instance
// rollout shows no instance column (TestRolloutPageShowsWhereTheFleetStands).
func TestRolloutPageAcrossInstances(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ro, _, err := st.CreateRollout(ctx, store.NewRollout{Repo: "example/fleet", PRNumber: 7, MergeSHA: "0123456789abcdef0123456789abcdef01234567",
		Plan: json.RawMessage(`{"waves":[{"name":"production"}]}`), Waves: []store.NewWave{{Name: "production", Steps: []store.NewStep{
			{App: store.AppKey{Namespace: "argocd", Name: "web"}, Cluster: "prd-us-1"},
			{App: store.AppKey{Instance: "eu", Namespace: "argocd", Name: "web"}, Cluster: "prd-eu-1"},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	waves, _ := st.ListWaves(ctx, ro.ID)
	w := waves[0]
	w.State = store.WaveRunning
	w.GateState = json.RawMessage(`{"unreachable":[{"instance":"eu","since":"2026-05-01T10:02:00Z","why":"dial tcp 10.0.0.7:443: connect: connection refused"}]}`)
	if _, err := st.UpdateWave(ctx, w); err != nil {
		t.Fatal(err)
	}
	h, err := New(st, Options{Token: testToken, ArgoCDURL: "https://argocd.example.com",
		InstanceURLs: map[string]string{"eu": "https://argocd-eu.example.com"}, Poll: 20 * time.Millisecond, InsecureCookie: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	_, body := get(t, http.DefaultClient, srv.URL+"/fleet/rollouts/"+itoa(ro.ID), map[string]string{"Authorization": "Bearer " + testToken})
	for _, want := range []string{
		`<th scope="col">Instance</th><th scope="col">App</th>`,
		`<td>(default)</td><td><a href="https://argocd.example.com/applications/argocd/web">web</a>`,
		`<td>eu</td><td><a href="https://argocd-eu.example.com/applications/argocd/web">web</a>`,
		`<strong>Instance eu unreachable</strong> since 2026-05-01 10:02:00 UTC: dial tcp 10.0.0.7:443: connect: connection refused.`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
