package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/jonboulle/clockwork"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

var statusT0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// statusSims serves two simulated instances on a fixed clock: eu with web on test-eu (live at the new revision:
// Synced) and prd-eu (live at the old one: OutOfSync), us with web on prd-us and a chart on prd-us that is
// Degraded. The clock then moves on 90 minutes.
func statusSims(t *testing.T) (euURL, usURL string, clock *clockwork.FakeClock) {
	t.Helper()
	clock = clockwork.NewFakeClockAt(statusT0)
	cfg := argocdsim.Config{Clock: clock, SyncDuration: 100 * time.Millisecond, ReconcileDelay: 10 * time.Millisecond}
	cluster := func(name, env string) v1alpha1.Cluster {
		return v1alpha1.Cluster{Name: name, Server: "https://" + name + ".example.com", Labels: map[string]string{"env": env}}
	}
	_, euURL = newRolloutSim(t, cfg, []v1alpha1.Cluster{cluster("test-eu", "test"), cluster("prd-eu", "prd")},
		[]simApp{{name: "web-test-eu", cluster: "test-eu", labels: map[string]string{"team": "web"}, live: rolloutNew},
			{name: "web-prd-eu", cluster: "prd-eu", labels: map[string]string{"team": "web"}}})
	us, u := newRolloutSim(t, cfg, []v1alpha1.Cluster{cluster("prd-us", "prd")},
		[]simApp{{name: "web-prd-us", cluster: "prd-us", labels: map[string]string{"team": "web"}, live: rolloutNew}})
	usURL = u
	chart := &v1alpha1.Application{}
	chart.Name = "cache-prd-us"
	chart.Spec.Project = "data"
	chart.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://charts.example.com", Chart: "redis", TargetRevision: "19.0.1"}
	chart.Spec.Destination = v1alpha1.ApplicationDestination{Server: "https://prd-us.example.com", Namespace: "cache"}
	if err := us.AddApp(chart, argocdsim.AppOptions{LiveRevisions: []string{"19.0.1"}, Health: "Degraded"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(90 * time.Minute)
	return euURL, usURL, clock
}

func statusInstancesFile(t *testing.T, euURL, usURL string) string {
	t.Helper()
	return writeInstances(t, fmt.Sprintf(`instances:
  - name: eu
    url: %s
    token: {env: ARGOCD_EU_TOKEN}
    owns: [{destinations: ["*-eu"]}]
  - name: us
    url: %s
    token: {env: ARGOCD_US_TOKEN}
    owns: [{destinations: ["*-us", "https://prd-us.example.com"]}]
`, euURL, usURL))
}

var statusEnv = map[string]string{"ARGOCD_EU_TOKEN": "t0ken", "ARGOCD_US_TOKEN": "t0ken", "FLEETWAVE_ARGOCD_TOKEN": "t0ken"}

// runStatusCmd runs `fleetwave status args` with the clock at now.
func runStatusCmd(t *testing.T, env map[string]string, now time.Time, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut outBuffer
	deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return now }}
	code = Main(context.Background(), append([]string{"status"}, args...), deps)
	return code, out.String(), errOut.String()
}

// TestStatus: `fleetwave status` over two instances, in text and JSON (golden files: go test -update, then
// review the diff), and filtered by the flags status shares with the fleet page.
func TestStatus(t *testing.T) {
	euURL, usURL, clock := statusSims(t)
	file := statusInstancesFile(t, euURL, usURL)
	tests := []struct {
		name, golden string
		args         []string
	}{
		{"every app, text", "status/two-instances.txt", nil},
		{"every app, json", "status/two-instances.json", []string{"-o", "json"}},
		{"prd clusters out of sync", "status/prd-outofsync.txt", []string{"--cluster-label", "env=prd", "--sync", "outofsync"}},
		{"an instance, a selector", "status/eu-team-web.txt", []string{"--instance", "eu", "--selector", "team=web"}},
		{"a project and a health", "status/data-degraded.txt", []string{"--project", "data", "--health", "Degraded,Missing"}},
		{"a revision", "status/revision.txt", []string{"--revision", rolloutNew[:8]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runStatusCmd(t, statusEnv, clock.Now(), append([]string{"--argocd-instances", file}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			golden.Assert(t, tc.golden, out)
			for _, want := range []string{"fleetwave: status: Argo CD instance eu: ", "fleetwave: status: Argo CD instance us: "} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
	_, out, _ := runStatusCmd(t, statusEnv, clock.Now(), "--argocd-instances", file, "-o", "json")
	var doc struct {
		Apps   int
		Groups []struct {
			Key  string
			Apps []struct {
				Instance, Name, Sync, Health, Cluster, ClusterName string
				ClusterLabels                                      map[string]string
				LastSynced                                         time.Time
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Apps != 4 {
		t.Fatalf("json: %v, %d apps\n%s", err, doc.Apps, out)
	}
	for _, g := range doc.Groups {
		for _, a := range g.Apps {
			if a.Name == "web-prd-eu" && (a.Sync != "OutOfSync" || !a.LastSynced.Equal(statusT0.Add(-time.Hour+10*time.Second)) || a.ClusterLabels["env"] != "prd") {
				t.Errorf("web-prd-eu: %+v", a)
			}
			if a.Name == "cache-prd-us" && (a.ClusterName != "prd-us" || a.Health != "Degraded") {
				t.Errorf("cache-prd-us (destination by server): %+v", a)
			}
		}
	}
}

// A fleet of one Argo CD (--argocd) shows no instance column and no instance in the JSON.
func TestStatusOfOneInstance(t *testing.T) {
	euURL, _, clock := statusSims(t)
	code, out, stderr := runStatusCmd(t, statusEnv, clock.Now(), "--argocd", euURL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden.Assert(t, "status/one-instance.txt", out)
	_, js, _ := runStatusCmd(t, statusEnv, clock.Now(), "--argocd", euURL, "-o", "json")
	if strings.Contains(js, `"instance":`) {
		t.Errorf("a one-instance JSON names an instance:\n%s", js)
	}
}

// TestStatusWhenInstancesFail: an instance that does not answer is one line on stderr and the others are
// printed (exit 0); when none answers, the exit is 2 and the error names every instance; bad flags are usage
// errors.
func TestStatusWhenInstancesFail(t *testing.T) {
	euURL, _, clock := statusSims(t)
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	code, out, stderr := runStatusCmd(t, statusEnv, clock.Now(), "--argocd-instances", statusInstancesFile(t, euURL, deadURL))
	if code != 0 || !strings.Contains(out, "web-prd-eu") || strings.Contains(out, "web-prd-us") {
		t.Errorf("one instance down: exit %d\n%s\n%s", code, out, stderr)
	}
	if lines := strings.Count(stderr, "instance us did not answer"); lines != 1 || strings.Contains(stderr, "t0ken") {
		t.Errorf("want one line for us, and no token:\n%s", stderr)
	}
	code, _, stderr = runStatusCmd(t, statusEnv, clock.Now(), "--argocd-instances", statusInstancesFile(t, deadURL, deadURL))
	if code != 2 || !strings.Contains(stderr, "no Argo CD instance answered (eu, us)") {
		t.Errorf("both down: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--argocd", euURL, "--selector", "team in web"}, "is not a label selector"},
		{[]string{"--argocd", euURL, "-o", "yaml"}, "--output must be text or json"},
		{nil, "status needs --argocd"},
		{[]string{"--argocd", "argocd.example.com"}, "give its scheme"},
	} {
		code, _, stderr := runStatusCmd(t, map[string]string{"FLEETWAVE_ARGOCD_TOKEN": "t0ken"}, clock.Now(), tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.says) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", tc.args, code, tc.says, stderr)
		}
	}
}
