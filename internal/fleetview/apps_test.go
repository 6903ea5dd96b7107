package fleetview

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

var appsNow = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// smallFleet is an inventory of five apps: web on three clusters of two instances (one out of sync for 2h, one
// degraded for 5m), db on one, and a job whose last rollout has not reached it.
func smallFleet(instance func(string) string) *inventory.Inventory {
	inv := inventory.New(func() time.Time { return appsNow })
	prd := map[string]string{"env": "prd"}
	stg := map[string]string{"env": "stg"}
	op := &inventory.Operation{By: "admin", Phase: "Succeeded", Revision: "0123456789abcdef", StartedAt: appsNow.Add(-3 * time.Hour),
		FinishedAt: appsNow.Add(-3*time.Hour + 20*time.Second), Message: "successfully synced (all tasks run)"}
	for _, a := range []inventory.App{
		{Key: inventory.Key{Instance: instance("eu"), Namespace: "argocd", Name: "web-prd-eu"}, Project: "web", Cluster: "https://prd-eu.example.com",
			ClusterName: "prd-eu", ClusterLabels: prd, Labels: map[string]string{"team": "web"}, Source: "https://git.example.com/gitops.git apps/web",
			Revision: "0123456789abcdef", Sync: "OutOfSync", SyncSince: appsNow.Add(-2 * time.Hour), Health: "Healthy", HealthSince: appsNow.Add(-3 * time.Hour),
			Operation: op, Rollout: &inventory.Rollout{ID: "12", Revision: "0123456789abcdef", Reached: true}},
		{Key: inventory.Key{Instance: instance("eu"), Namespace: "argocd", Name: "web-stg-eu"}, Project: "web", Cluster: "https://stg-eu.example.com",
			ClusterName: "stg-eu", ClusterLabels: stg, Labels: map[string]string{"team": "web"}, Source: "https://git.example.com/gitops.git apps/web",
			Revision: "fedcba9876543210", Sync: "Synced", SyncSince: appsNow.Add(-time.Hour), Health: "Degraded", HealthSince: appsNow.Add(-5 * time.Minute),
			Operation: &inventory.Operation{By: "automated", Phase: "Running", StartedAt: appsNow.Add(-time.Minute)}},
		{Key: inventory.Key{Instance: instance("us"), Namespace: "argocd", Name: "web-prd-us"}, Project: "web", Cluster: "https://prd-us.example.com",
			ClusterName: "prd-us", ClusterLabels: prd, Labels: map[string]string{"team": "web"}, Source: "https://git.example.com/gitops.git apps/web",
			Revision: "0123456789abcdef", Sync: "Synced", SyncSince: appsNow.Add(-time.Hour), Health: "Healthy", HealthSince: appsNow.Add(-time.Hour),
			Operation: op, Rollout: &inventory.Rollout{ID: "12", Revision: "0123456789abcdef", Reached: true}},
		{Key: inventory.Key{Instance: instance("us"), Namespace: "argocd", Name: "db-prd-us"}, Project: "data", Cluster: "https://prd-us.example.com",
			ClusterName: "prd-us", ClusterLabels: prd, Source: "https://charts.example.com postgresql",
			Revision: "12.1.0", Sync: "Synced", SyncSince: appsNow.Add(-time.Hour), Health: "Healthy", HealthSince: appsNow.Add(-time.Hour)},
		{Key: inventory.Key{Instance: instance("us"), Namespace: "jobs", Name: "report"}, Project: "data", Cluster: "in-cluster",
			ClusterName: "in-cluster", Revision: "aaaabbbbccccdddd", Sync: "OutOfSync", SyncSince: appsNow.Add(-40 * time.Minute), Health: "Healthy",
			Rollout: &inventory.Rollout{ID: "13", Revision: "eeeeffff00001111"}},
	} {
		inv.Apply(a)
	}
	return inv
}

func named(s string) string { return s }
func unnamed(string) string { return "" }

func appsServer(t testing.TB, inv Inventory, drift time.Duration) *httptest.Server {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts := Options{Token: testToken, ArgoCDURL: "https://argocd.example.com", InstanceURLs: map[string]string{"eu": "https://argocd-eu.example.com"},
		Poll: 20 * time.Millisecond, InsecureCookie: true, Now: func() time.Time { return appsNow }, DriftAfter: drift}
	if inv != nil {
		opts.Inventory = inv
	}
	h, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

var bearer = map[string]string{"Authorization": "Bearer " + testToken}

// TestAppsPage: the page of a small fleet across two instances, as a golden file (go test -update to redraw,
// then review the diff): groups by what the apps deploy, each app's cluster, instance (linked to its own
// Argo CD), revision, sync, how long out of sync, health, last operation and last rollout, lasting drift marked
// and counted.
func TestAppsPage(t *testing.T) {
	srv := appsServer(t, smallFleet(named), 30*time.Minute)
	resp, body := get(t, http.DefaultClient, srv.URL+"/fleet/apps", bearer)
	if resp.StatusCode != 200 {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
	golden.Assert(t, "apps.html", body)
	for _, want := range []string{
		`<a href="https://argocd-eu.example.com/applications/argocd/web-prd-eu">web-prd-eu</a> <strong class="mark">lasting drift</strong>`,
		`<span data-since="2026-11-29T07:00:00Z">2h 0m</span>`,
		`<strong>2 in lasting drift</strong>`,
		`<a href="/fleet/rollouts/13">#13</a>: <strong>not reached</strong>`,
		`3 app(s), 2 revision(s)`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, testToken) || strings.Contains(body, "<script>") || strings.Contains(body, "onclick=") {
		t.Error("the token, an inline script or a handler in the page")
	}
}

// A fleet of one Argo CD configured the old way (instance "") shows no instance column; links go to ArgoCDURL.
func TestAppsPageOfOneInstance(t *testing.T) {
	srv := appsServer(t, smallFleet(unnamed), 0)
	_, body := get(t, http.DefaultClient, srv.URL+"/fleet/apps", bearer)
	if strings.Contains(body, ">Instance<") || strings.Contains(body, "(default)") || strings.Contains(body, "lasting drift") {
		t.Errorf("a one-instance page shows instances or drift without a threshold:\n%s", body)
	}
	if !strings.Contains(body, `<a href="https://argocd.example.com/applications/argocd/web-prd-eu">web-prd-eu</a>`) {
		t.Errorf("no link to the one Argo CD:\n%s", body)
	}
}

func TestAppsPageWithoutInventory(t *testing.T) {
	srv := appsServer(t, nil, 0)
	resp, body := get(t, http.DefaultClient, srv.URL+"/fleet/apps", bearer)
	if resp.StatusCode != 200 || !strings.Contains(body, "The inventory is not configured") {
		t.Errorf("%d\n%s", resp.StatusCode, body)
	}
	if resp, _ := get(t, http.DefaultClient, srv.URL+"/fleet/apps/live", bearer); resp.StatusCode != 404 {
		t.Errorf("live without an inventory: %d", resp.StatusCode)
	}
}

func TestAppsPageNeedsTheToken(t *testing.T) {
	srv := appsServer(t, smallFleet(named), 0)
	for _, tc := range []struct {
		url    string
		header map[string]string
		code   int
	}{
		{srv.URL + "/fleet/apps?project=web", nil, 303},
		{srv.URL + "/fleet/apps?fragment=1", nil, 401},
		{srv.URL + "/fleet/apps/live", map[string]string{"Accept": "text/event-stream"}, 401},
		{srv.URL + "/fleet/apps", map[string]string{"Authorization": "Bearer nope"}, 303},
	} {
		resp, body := get(t, noRedirect(), tc.url, tc.header)
		if resp.StatusCode != tc.code || strings.Contains(body, "web-prd-eu") {
			t.Errorf("%s: %d, want %d", tc.url, resp.StatusCode, tc.code)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", tc.url, csp)
		}
	}
	if resp, _ := get(t, noRedirect(), srv.URL+"/fleet/apps?project=web", nil); resp.Header.Get("Location") != "/fleet/login?next=%2Ffleet%2Fapps%3Fproject%3Dweb" {
		t.Errorf("sign-in does not come back to the filtered view: %q", resp.Header.Get("Location"))
	}
}

var appName = regexp.MustCompile(`/applications/[^/"]+/([^"]+)">`)

func shownApps(body string) string {
	var out []string
	for _, m := range appName.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return strings.Join(out, " ")
}

// TestAppsFilters: the query filters the page (inventory.Filter), several fields together, and "drift" keeps the
// apps in lasting drift; a bad selector says so and filters nothing.
func TestAppsFilters(t *testing.T) {
	srv := appsServer(t, smallFleet(named), 30*time.Minute)
	// Only the eu instance has a URL (InstanceURLs): the linked apps are eu's; the count says how many match.
	tests := []struct {
		query, want, says string
	}{
		{"", "web-prd-eu web-stg-eu", "5</strong> of 5 apps"},
		{"instance=eu", "web-prd-eu web-stg-eu", "2</strong> of 5 apps"},
		{"instance=us", "", "3</strong> of 5 apps"},
		{"cluster=env%3Dstg", "web-stg-eu", "1</strong> of 5 apps"},
		{"project=data", "", "2</strong> of 5 apps"},
		{"sync=OutOfSync", "web-prd-eu", "2</strong> of 5 apps · 2 OutOfSync"},
		{"health=degraded", "web-stg-eu", "1</strong> of 5 apps"},
		{"revision=0123", "web-prd-eu", "2</strong> of 5 apps"},
		{"selector=team%3Dweb&cluster=env%3Dprd", "web-prd-eu", "2</strong> of 5 apps"},
		{"drift=1", "web-prd-eu", "2</strong> of 5 apps"},
		{"drift=1&instance=us", "", "1</strong> of 5 apps"},
		{"selector=team+in+web", "web-prd-eu web-stg-eu", `is not a label selector`},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			_, body := get(t, http.DefaultClient, srv.URL+"/fleet/apps?"+tc.query, bearer)
			if got := shownApps(body); got != tc.want {
				t.Errorf("linked apps %q, want %q", got, tc.want)
			}
			if !strings.Contains(body, tc.says) {
				t.Errorf("page lacks %q", tc.says)
			}
		})
	}
	// The form shows the filter it applied, and the fragment the same apps.
	_, body := get(t, http.DefaultClient, srv.URL+"/fleet/apps?cluster=env%3Dstg&health=Degraded", bearer)
	if !strings.Contains(body, `name="cluster" value="env=stg"`) || !strings.Contains(body, `data-fragment="/fleet/apps?cluster=env%3Dstg&amp;fragment=1&amp;health=Degraded"`) {
		t.Errorf("form or fragment address lost the filter:\n%s", body)
	}
	_, frag := get(t, http.DefaultClient, srv.URL+"/fleet/apps?cluster=env%3Dstg&fragment=1", bearer)
	if shownApps(frag) != "web-stg-eu" || strings.Contains(frag, "<form") {
		t.Errorf("fragment:\n%s", frag)
	}
}

// manyApps is an inventory of n apps: services of 10 clusters each across two instances, every 7th out of sync,
// every 13th degraded.
func manyApps(n int) *inventory.Inventory {
	inv := inventory.New(func() time.Time { return appsNow })
	clusters := []string{"prd-eu-1", "prd-eu-2", "prd-us-1", "prd-us-2", "prd-ap-1", "stg-eu-1", "stg-us-1", "stg-ap-1", "test-eu-1", "test-us-1"}
	for i := range n {
		svc, cl := i/len(clusters), clusters[i%len(clusters)]
		inst := "eu"
		if strings.Contains(cl, "-us-") || strings.Contains(cl, "-ap-") {
			inst = "us"
		}
		a := inventory.App{Key: inventory.Key{Instance: inst, Namespace: "argocd", Name: fmt.Sprintf("svc-%04d-%s", svc, cl)},
			Project: fmt.Sprintf("team-%02d", svc%40), Cluster: "https://" + cl + ".example.com", ClusterName: cl,
			ClusterLabels: map[string]string{"env": cl[:strings.Index(cl, "-")], "region": cl[strings.Index(cl, "-")+1:]},
			Labels:        map[string]string{"team": fmt.Sprintf("team-%02d", svc%40)},
			Source:        fmt.Sprintf("https://git.example.com/gitops.git apps/svc-%04d", svc), Revision: fmt.Sprintf("%08x%032x", svc*7919+i%3, i),
			Sync: "Synced", SyncSince: appsNow.Add(-time.Hour), Health: "Healthy", HealthSince: appsNow.Add(-time.Hour),
			Operation: &inventory.Operation{By: "admin", Phase: "Succeeded", StartedAt: appsNow.Add(-2 * time.Hour), FinishedAt: appsNow.Add(-2*time.Hour + 30*time.Second)},
			Rollout:   &inventory.Rollout{ID: "41", Revision: fmt.Sprintf("%08x%032x", svc*7919, 0), Reached: i%3 == 0}}
		if i%7 == 0 {
			a.Sync, a.SyncSince = "OutOfSync", appsNow.Add(-time.Duration(i%120)*time.Minute)
		}
		if i%13 == 0 {
			a.Health, a.HealthSince = "Degraded", appsNow.Add(-time.Duration(i%90)*time.Minute)
		}
		inv.Apply(a)
	}
	return inv
}

// TestAppsPageAt10000Apps: the page of 10,000 apps is served fast and small: its first page and a filtered
// view, the server's time (the whole request, through the token check) and the bytes sent. The browser's side
// (navigation to content ready under a second) is TestAppsPageInBrowser.
func TestAppsPageAt10000Apps(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 apps skipped in -short mode")
	}
	srv := appsServer(t, manyApps(10000), 30*time.Minute)
	for _, q := range []string{"", "?cluster=env%3Dprd&sync=OutOfSync", "?drift=1", "?page=20"} {
		get(t, http.DefaultClient, srv.URL+"/fleet/apps"+q, bearer) // warm
		best := time.Hour
		var body string
		for range 3 {
			start := time.Now()
			_, body = get(t, http.DefaultClient, srv.URL+"/fleet/apps"+q, bearer)
			best = min(best, time.Since(start))
		}
		t.Logf("/fleet/apps%s of 10,000 apps: %s, %d KB", q, best.Round(time.Millisecond), len(body)/1024)
		if !strings.Contains(body, "of 10000 apps") {
			t.Fatalf("%s: not the page of 10,000 apps", q)
		}
		if len(body) > 600<<10 || (best > 400*time.Millisecond && !raceEnabled) {
			t.Errorf("/fleet/apps%s: %s and %d KB, want under 400ms and 600 KB", q, best, len(body)/1024)
		}
	}
}

func BenchmarkAppsPage10000(b *testing.B) {
	srv := appsServer(b, manyApps(10000), 30*time.Minute)
	req, _ := http.NewRequest("GET", srv.URL+"/fleet/apps?cluster=env%3Dprd", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	for b.Loop() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := bufio.NewReader(resp.Body).WriteTo(discard{})
		resp.Body.Close()
		b.SetBytes(n)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestAppsLiveStream: the stream says "change" when an app the page shows changes, not for a change the
// page's filter hides, and when an app crosses the drift threshold with no change of its own.
func TestAppsLiveStream(t *testing.T) {
	inv := smallFleet(named)
	srv := appsServer(t, inv, 0)
	lines := stream(t, srv.URL+"/fleet/apps/live?project=data")
	quiet(t, lines, 150*time.Millisecond)
	// A change of an app of project web: not on this page.
	inv.Apply(inventory.App{Key: inventory.Key{Instance: "eu", Namespace: "argocd", Name: "web-prd-eu"}, Project: "web", Sync: "Synced", Health: "Healthy"})
	quiet(t, lines, 150*time.Millisecond)
	// db goes out of sync: on the page.
	inv.Apply(inventory.App{Key: inventory.Key{Instance: "us", Namespace: "argocd", Name: "db-prd-us"}, Project: "data", Sync: "OutOfSync", Health: "Healthy"})
	select {
	case l := <-lines:
		if l != "event: change" {
			t.Fatalf("got %q, want event: change", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change event after an app of the page changed")
	}
}

func stream(t *testing.T, u string) <-chan string {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); l != "" && !strings.HasPrefix(l, "data:") && !strings.HasPrefix(l, ":") {
				lines <- l
			}
		}
		close(lines)
	}()
	return lines
}

func quiet(t *testing.T, lines <-chan string, d time.Duration) {
	t.Helper()
	select {
	case l := <-lines:
		t.Fatalf("stream spoke without a change on the page: %q", l)
	case <-time.After(d):
	}
}

// TestAppsLiveStreamAtTheDriftThreshold: an app crossing DriftAfter changes the page (its mark, the count) with
// no change in the inventory: the stream wakes at that time.
func TestAppsLiveStreamAtTheDriftThreshold(t *testing.T) {
	const after = 1500 * time.Millisecond // room for the stream to open first, under the race detector too
	inv := inventory.New(time.Now)
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := New(st, Options{Token: testToken, Poll: 20 * time.Millisecond, Inventory: inv, DriftAfter: after})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the stream's own cleanup, which ends the request
	start := time.Now()
	inv.Apply(inventory.App{Key: inventory.Key{Name: "web"}, Sync: "OutOfSync", SyncSince: start, Health: "Healthy"})
	lines := stream(t, srv.URL+"/fleet/apps/live")
	if opened := time.Since(start); opened >= after {
		t.Skipf("the stream took %s to open, past the threshold: nothing to see", opened)
	}
	select {
	case l := <-lines:
		if l != "event: change" {
			t.Fatalf("got %q", l)
		}
		if since := time.Since(start); since < after {
			t.Fatalf("change %s after the app went out of sync, before the threshold", since)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change when the app crossed the threshold")
	}
}
