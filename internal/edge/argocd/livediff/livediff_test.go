package livediff_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/objtest"
)

const (
	liveRev   = "1111111111111111111111111111111111111111"
	targetRev = "2222222222222222222222222222222222222222"
	// Secret values that must never appear in any output.
	liveSecret = "live-secret-value-x9"
	baseSecret = "base-secret-value-y8"
	headSecret = "head-secret-value-z7"
)

func deployment(replicas int, image string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: " + itoa(replicas) +
		"\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: app, image: " + image + "}]\n"
}

func configMap(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {" + data + "}\n"
}

func secret(value string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata: {name: web}\ndata: {token: " + base64.StdEncoding.EncodeToString([]byte(value)) + "}\n"
}

func itoa(n int) string { return string(rune('0' + n)) }

// liveJSON turns YAML docs into the live objects the simulator serves (namespace set, as in a cluster, plus the
// fields a cluster adds).
func liveJSON(t *testing.T, ns string, docs ...string) []string {
	t.Helper()
	var out []string
	for _, o := range objtest.Objs(t, docs...) {
		o.SetNamespace(ns)
		o.SetUID("0000-live")
		anns := o.GetAnnotations()
		if anns == nil {
			anns = map[string]string{}
		}
		anns["argocd.argoproj.io/tracking-id"] = "web:apps/Deployment:web/web"
		o.SetAnnotations(anns)
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// newSim serves a simulator over httptest whose app "web" (when added) has live state live.
func newSim(t *testing.T, live []string, apps ...*v1alpha1.Application) *argocd.Client {
	t.Helper()
	sim := argocdsim.New(argocdsim.Config{Manifests: func(app *v1alpha1.Application, revision string) ([]string, error) {
		return live, nil // target (Argo CD's own render) and live alike: managed-resources lists target objects
	}})
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", targetRev)
	for _, a := range apps {
		if err := sim.AddApp(a, argocdsim.AppOptions{LiveRevisions: []string{liveRev}}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	c, err := argocd.New(argocd.Options{BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func webApp(ignore ...v1alpha1.ResourceIgnoreDifferences) *v1alpha1.Application {
	a := &v1alpha1.Application{}
	a.Name, a.Namespace = "web", "argocd"
	a.Spec.Project = "default"
	a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example.com/gitops.git", Path: "web", TargetRevision: "HEAD"}
	a.Spec.Destination = v1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "web"}
	a.Spec.IgnoreDifferences = ignore
	return a
}

// outputs renders a report holding l in every format.
func outputs(t *testing.T, l *report.Live) string {
	t.Helper()
	rep := &report.Report{Base: "b", Head: "h", Apps: []report.App{{Name: "web", Namespace: "argocd", Cluster: "in-cluster", Status: report.StatusChanged, Live: l}}}
	rep.Summarize()
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	b.WriteString(rep.Markdown())
	return b.String()
}

func TestCompareLive(t *testing.T) {
	base := []string{deployment(1, "web:1"), configMap("color: blue, extra: a")}
	head := []string{deployment(1, "web:2"), configMap("color: blue, extra: a")}
	tests := []struct {
		name         string
		live         []string
		ignore       []v1alpha1.ResourceIgnoreDifferences
		wantDrift    []string
		wantLiveDiff []string // keys
		wantInDiff   []string
		notInDiff    []string
	}{
		{
			name: "no drift", live: base,
			wantDrift: []string{}, wantLiveDiff: []string{"apps/Deployment web/web"},
			wantInDiff: []string{"-      - image: web:1", "+      - image: web:2"},
		},
		{
			name: "scaled by hand", live: []string{deployment(3, "web:1"), configMap("color: blue, extra: a")},
			wantDrift: []string{"apps/Deployment web/web"}, wantLiveDiff: []string{"apps/Deployment web/web"},
			wantInDiff: []string{"-  replicas: 3", "+  replicas: 1", "+      - image: web:2"},
		},
		{
			name: "jsonPointers ignore the scale", live: []string{deployment(3, "web:1"), configMap("color: blue, extra: a")},
			ignore:    []v1alpha1.ResourceIgnoreDifferences{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}},
			wantDrift: []string{}, wantLiveDiff: []string{"apps/Deployment web/web"},
			wantInDiff: []string{"+      - image: web:2"}, notInDiff: []string{"replicas"},
		},
		{
			name: "jqPathExpressions ignore a key", live: []string{deployment(1, "web:1"), configMap("color: blue, extra: edited")},
			ignore:    []v1alpha1.ResourceIgnoreDifferences{{Kind: "ConfigMap", JQPathExpressions: []string{".data.extra"}}},
			wantDrift: []string{}, wantLiveDiff: []string{"apps/Deployment web/web"},
		},
		{
			name: "edited key without ignoreDifferences", live: []string{deployment(1, "web:1"), configMap("color: blue, extra: edited")},
			wantDrift: []string{"ConfigMap web/web"}, wantLiveDiff: []string{"ConfigMap web/web", "apps/Deployment web/web"},
			wantInDiff: []string{"-  extra: edited", "+  extra: a"},
		},
		{
			name: "resource deleted from the cluster", live: []string{deployment(1, "web:1")},
			wantDrift: []string{"ConfigMap web/web"}, wantLiveDiff: []string{"ConfigMap web/web", "apps/Deployment web/web"},
			wantInDiff: []string{"--- /dev/null"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSim(t, liveJSON(t, "web", tt.live...), webApp())
			app := webApp(tt.ignore...)
			lc := livediff.New(c, livediff.Options{Server: "sim"})
			lives, err := lc.CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: thisRepo, App: app, Base: objtest.Objs(t, base...), Head: objtest.Objs(t, head...), BaseNamespace: "web", HeadNamespace: "web"}})
			if err != nil {
				t.Fatal(err)
			}
			l := lives[0]
			if l == nil || l.Missing || l.Error != "" {
				t.Fatalf("live: %+v", l)
			}
			if l.Compared != 2 {
				t.Errorf("compared %d, want 2", l.Compared)
			}
			if !slices.Equal(l.Drift, tt.wantDrift) {
				t.Errorf("drift %q, want %q", l.Drift, tt.wantDrift)
			}
			var keys []string
			var text strings.Builder
			for _, r := range l.LiveDiff {
				keys = append(keys, r.Key.String())
				text.WriteString(r.Diff)
			}
			if !slices.Equal(keys, tt.wantLiveDiff) {
				t.Errorf("live diff %q, want %q\n%s", keys, tt.wantLiveDiff, text.String())
			}
			for _, s := range tt.wantInDiff {
				if !strings.Contains(text.String(), s) {
					t.Errorf("live diff lacks %q:\n%s", s, text.String())
				}
			}
			for _, s := range tt.notInDiff {
				if strings.Contains(text.String(), s) {
					t.Errorf("live diff has %q:\n%s", s, text.String())
				}
			}
			out := outputs(t, l)
			if wantDrift := len(tt.wantDrift) > 0; strings.Contains(out, "live state drifted from the base render") != wantDrift {
				t.Errorf("drift note shown = %v, want %v:\n%s", !wantDrift, wantDrift, out)
			}
		})
	}
}

func TestLiveSecretValuesNeverShown(t *testing.T) {
	c := newSim(t, liveJSON(t, "web", secret(liveSecret)), webApp())
	lc := livediff.New(c, livediff.Options{})
	lives, err := lc.CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: thisRepo, App: webApp(),
		Base: objtest.Objs(t, secret(baseSecret)), Head: objtest.Objs(t, secret(headSecret)), BaseNamespace: "web", HeadNamespace: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	l := lives[0]
	if !slices.Equal(l.Drift, []string{"Secret web/web"}) || len(l.LiveDiff) != 1 {
		t.Fatalf("live: %+v", l)
	}
	if sk := l.LiveDiff[0].SecretKeys; len(sk) != 1 || sk[0].Key != "data.token" || sk[0].Change != "changed" {
		t.Errorf("secret keys %+v", sk)
	}
	out := outputs(t, l)
	for _, v := range []string{liveSecret, baseSecret, headSecret} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			if strings.Contains(out, form) {
				t.Fatalf("output holds a Secret value (%q):\n%s", form, out)
			}
		}
	}
	if !strings.Contains(out, "<changed>") {
		t.Errorf("masked change not shown:\n%s", out)
	}
}

// A real Argo CD masks live Secret values with "+" runs, target and live together: equal runs are equal values.
func TestArgoCDMaskedSecret(t *testing.T) {
	masked := "apiVersion: v1\nkind: Secret\nmetadata: {name: web}\ndata: {token: '++++++++'}\n"
	c := newSim(t, liveJSON(t, "web", masked), webApp())
	lc := livediff.New(c, livediff.Options{})
	lives, err := lc.CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: thisRepo, App: webApp(),
		Base: objtest.Objs(t, secret(baseSecret)), Head: objtest.Objs(t, secret(headSecret)), BaseNamespace: "web", HeadNamespace: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	l := lives[0]
	if len(l.Drift) != 0 || len(l.LiveDiff) != 1 || len(l.Notes) != 0 {
		t.Fatalf("live: %+v", l)
	}
	if sk := l.LiveDiff[0].SecretKeys; len(sk) != 1 || sk[0].Key != "data.token" || sk[0].Change != "changed" {
		t.Errorf("secret keys %+v", sk)
	}
}

// Without Argo CD's target to read the masks by, only keys and metadata are compared, and a note says so.
func TestArgoCDMaskedSecretWithoutTarget(t *testing.T) {
	live := inCluster(t, objtest.Obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: web}\ndata: {token: '++++++++'}\n"), nil)
	f := &fakeArgo{settings: defaultSettings, items: []v1alpha1.ResourceDiff{item(t, live, nil, nil)}}
	l := compareOne(t, f, webApp(), objtest.Objs(t, secret(baseSecret)), objtest.Objs(t, secret(headSecret)), livediff.Options{})
	if len(l.Drift) != 0 || len(l.LiveDiff) != 0 || len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "only keys") {
		t.Fatalf("live: %+v", l)
	}
}

func TestAppMissingInArgoCD(t *testing.T) {
	c := newSim(t, nil) // no apps
	lc := livediff.New(c, livediff.Options{})
	lives, err := lc.CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: thisRepo, App: webApp(), Head: objtest.Objs(t, configMap("a: b")), HeadNamespace: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lives) != 1 || lives[0] == nil || !lives[0].Missing {
		t.Fatalf("lives %+v", lives)
	}
	if out := outputs(t, lives[0]); !strings.Contains(out, "not in Argo CD") {
		t.Errorf("no note:\n%s", out)
	}
}

func TestArgoCDUnreachable(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close()
	c, err := argocd.New(argocd.Options{BaseURL: url, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = livediff.New(c, livediff.Options{Server: url}).CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: thisRepo, App: webApp()}})
	if err == nil || !strings.Contains(err.Error(), "reading live state from argo cd at "+url) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
}

// A failing managed-resources call is that app's error, not the run's.
func TestManagedResourcesErrorIsPerApp(t *testing.T) {
	c := newSim(t, nil, webApp())
	lc := livediff.New(failing{c}, livediff.Options{})
	lives, err := lc.CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: thisRepo, App: webApp(), HeadNamespace: "web"}})
	if err != nil || lives[0] == nil || lives[0].Error != "boom" {
		t.Fatalf("lives %+v err %v", lives, err)
	}
}

type failing struct{ *argocd.Client }

func (failing) ManagedResources(context.Context, string) ([]v1alpha1.ResourceDiff, error) {
	return nil, errors.New("boom")
}

// RenderRemote returns Argo CD's render at a revision, warns when Argo CD's Application has another source than
// the change's, and reports an app Argo CD does not hold as preview.ErrNotInArgoCD.
func TestRenderRemote(t *testing.T) {
	c := newSim(t, []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"web"},"data":{"a":"b"}}`}, webApp())
	lc := livediff.New(c, livediff.Options{})
	rr, err := lc.RenderRemote(context.Background(), webApp(), []string{targetRev}, thisRepo)
	if err != nil || len(rr.Objects) != 1 || rr.Objects[0].GetKind() != "ConfigMap" || rr.Warning != "" {
		t.Fatalf("RenderRemote = %+v, %v", rr, err)
	}
	edited := webApp()
	edited.Spec.Source.Path = "web-v2"
	if rr, err = lc.RenderRemote(context.Background(), edited, []string{targetRev}, thisRepo); err != nil || !strings.Contains(rr.Warning, "sources of the Application it holds") {
		t.Fatalf("RenderRemote of an edited app = %+v, %v; want a warning", rr, err)
	}
	other := webApp()
	other.Name = "other"
	if _, err := lc.RenderRemote(context.Background(), other, []string{targetRev}, thisRepo); !errors.Is(err, preview.ErrNotInArgoCD) {
		t.Fatalf("RenderRemote of an unknown app: %v; want ErrNotInArgoCD", err)
	}
}

// thisRepo names the repository of webApp's source, as preview passes it (html, clone and ssh URLs).
var thisRepo = []string{"https://git.example.com/gitops", "https://git.example.com/gitops.git", "git@git.example.com:gitops.git"}

// A pull request's Application named like an Argo CD app of another repository (or of another project) is
// neither compared with that app's live state nor rendered through Argo CD (issue 38 item 5): the comment says
// "exists in Argo CD, not managed from this repository" and shows no live object.
func TestForeignAppNotRead(t *testing.T) {
	const liveValue = "other-team-live-value"
	foreign := webApp()
	foreign.Spec.Source.RepoURL = "https://git.example.com/other-team.git"
	otherProject := webApp()
	otherProject.Spec.Project = "team-b"
	lookalike := webApp()
	lookalike.Spec.Source.RepoURL = "https://git.example.com/gitops-evil.git"
	multi := webApp()
	multi.Spec.Source = nil
	multi.Spec.Sources = v1alpha1.ApplicationSources{{RepoURL: "https://charts.example.com", Chart: "web", TargetRevision: "1.0.0"},
		{RepoURL: "HTTPS://Git.Example.com/gitops", Ref: "values"}}
	for name, tc := range map[string]struct {
		held    *v1alpha1.Application
		repos   []string
		managed bool
	}{
		"another repository":           {held: foreign, repos: thisRepo},
		"another project":              {held: otherProject, repos: thisRepo},
		"a look-alike repository":      {held: lookalike, repos: thisRepo},
		"no repository named":          {held: webApp(), repos: nil},
		"a full name is no URL":        {held: foreign, repos: []string{"other-team"}},
		"this repository":              {held: webApp(), repos: thisRepo, managed: true},
		"this repository, by ssh":      {held: webApp(), repos: []string{"git@git.example.com:gitops.git"}, managed: false}, // SameURL: schemes differ
		"one of several sources (ref)": {held: multi, repos: thisRepo, managed: true},
	} {
		t.Run(name, func(t *testing.T) {
			c := newSim(t, liveJSON(t, "web", configMap("secretish: "+liveValue)), tc.held)
			lc := livediff.New(c, livediff.Options{})
			pr := webApp() // the pull request's Application: same namespace and name, this repository
			lives, err := lc.CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: tc.repos, App: pr,
				Head: objtest.Objs(t, configMap("secretish: from-the-pr")), HeadNamespace: "web"}})
			if err != nil {
				t.Fatal(err)
			}
			l := lives[0]
			if tc.managed {
				if l.NotManaged { // (the simulator may fail the comparison itself: a chart source it cannot resolve)
					t.Fatalf("this repository's app not compared: %+v", l)
				}
				return
			}
			if !l.NotManaged || l.Compared != 0 || len(l.LiveDiff) != 0 || len(l.Drift) != 0 {
				t.Fatalf("live: %+v; want NotManaged, nothing compared", l)
			}
			out := outputs(t, l)
			if strings.Contains(out, liveValue) || !strings.Contains(out, "exists in Argo CD, not managed from this repository") {
				t.Errorf("output:\n%s", out)
			}
			if _, err := lc.RenderRemote(context.Background(), pr, []string{targetRev}, tc.repos); !errors.Is(err, preview.ErrNotManagedHere) &&
				!errors.Is(err, preview.ErrNotInArgoCD) { // another project: FindApplication filters by project
				t.Errorf("RenderRemote: %v, want ErrNotManagedHere", err)
			}
		})
	}
}
