package cli

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

// diff --argocd renders through Argo CD what fleetwave does not fetch: a chart from a repository that is not in the
// allowed repositories (single source, bumped by the change) and a multi-source app whose chart is such and
// whose $values live here; and it generates through Argo CD an ApplicationSet with a pull request generator,
// whose generated app is then rendered here. An ApplicationSet the change adds with a live generator is never
// sent to Argo CD: it is listed as not evaluated and fails the diff.
func TestDiffArgoCDFallbackRendererAndLiveGenerators(t *testing.T) {
	app := func(name, source string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  project: default\n" +
			source + "  destination: {name: prd-eu-1, namespace: " + name + "}\n"
	}
	vendor := func(version string) string {
		return app("vendor", "  source: {repoURL: 'https://charts.example.com', chart: ingress, targetRevision: '"+version+"'}\n")
	}
	multi := app("multi", "  sources:\n  - {repoURL: 'https://charts.example.com', chart: web, targetRevision: 2.0.0, helm: {valueFiles: [$values/values/web.yaml]}}\n"+
		"  - {repoURL: "+previewRepoURL+", targetRevision: HEAD, ref: values}\n")
	prs := func(path string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: prs, namespace: argocd}\nspec:\n" +
			"  generators:\n  - pullRequest: {github: {owner: example, repo: small}}\n" +
			"  template:\n    metadata: {name: 'pr-{{number}}'}\n    spec: {project: default, source: {repoURL: " + previewRepoURL +
			", path: " + path + "}, destination: {name: prd-eu-1, namespace: 'pr-{{number}}'}}\n"
	}
	dir := t.TempDir()
	files := map[string]string{
		"clusters.yaml":         "clusters:\n  - {name: prd-eu-1, server: https://prd-eu-1.example.com, labels: {env: prd}}\n",
		"apps/vendor.yaml":      vendor("1.0.0"),
		"apps/multi.yaml":       multi,
		"values/web.yaml":       "replicas: 1\n",
		"sets/prs.yaml":         prs("manifests/pr"),
		"manifests/pr/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pr}\ndata: {color: blue}\n",
		"manifests/pr2/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pr}\ndata: {color: green}\n",
	}
	for rel, c := range files {
		filetest.Write(t, dir, rel, c)
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "base")
	gitRun(t, dir, "checkout", "-q", "-b", "change")
	filetest.Write(t, dir, "apps/vendor.yaml", vendor("1.1.0"))
	filetest.Write(t, dir, "values/web.yaml", "replicas: 3\n")
	filetest.Write(t, dir, "sets/prs.yaml", prs("manifests/pr2")) // the template changes, the generator does not
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "change")
	base, head := gittest.Run(t, dir, "rev-parse", "main"), gittest.Run(t, dir, "rev-parse", "change")

	var mu sync.Mutex
	var asked []string
	sim := argocdsim.New(argocdsim.Config{
		Manifests: func(a *v1alpha1.Application, rev string) ([]string, error) {
			var revs []string
			for _, s := range a.Spec.GetSources() {
				revs = append(revs, s.TargetRevision)
			}
			mu.Lock()
			asked = append(asked, a.Name+"@"+strings.Join(revs, "+"))
			mu.Unlock()
			return []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + a.Name + `","namespace":"` + a.Name +
				`"},"data":{"renderedAt":"` + strings.Join(revs, "+") + `"}}`}, nil
		},
		LiveGenerator: func(kind string, g *v1alpha1.ApplicationSetGenerator) ([]map[string]any, error) {
			mu.Lock()
			asked = append(asked, "generate:"+kind)
			mu.Unlock()
			return []map[string]any{{"number": "7"}}, nil
		},
	})
	t.Cleanup(sim.Close)
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		sim.SetRef(v, v) // chart versions: the simulator resolves them as refs
	}
	sim.SetRef(base, base)
	sim.SetRef(head, head)
	for _, a := range []string{vendor("1.0.0"), multi} {
		held := &v1alpha1.Application{}
		if err := yamlToApp(a, held); err != nil {
			t.Fatal(err)
		}
		if err := sim.AddApp(held, argocdsim.AppOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)

	// Without a repositories file the charts are external; with one that allows only another host, they are not
	// allowed: either way Argo CD, with its own repository credentials, renders them.
	reposFile := filepath.Join(t.TempDir(), "repositories.yaml")
	if err := os.WriteFile(reposFile, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: other, namespace: argocd, labels: {argocd.argoproj.io/secret-type: repository}}\n"+
		"stringData: {type: helm, name: other, url: 'https://other.example.com'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--repositories", reposFile}} {
		t.Logf("diff %v", extra)
		mu.Lock()
		asked = nil
		mu.Unlock()
		args := append([]string{"diff", "-o", "json", "--repo", dir, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--argocd", srv.URL}, extra...)
		code, out, stderr := runWithCache(t, t.TempDir(), args...)
		var doc struct {
			Apps []struct {
				Name, Status, Error, Warning string
				Resources                    []struct{ Kind, Name, Diff string }
			}
			Unevaluated []struct {
				ApplicationSet, Reason string
				Changed                bool
			}
		}
		// With --repositories the vendor chart is "not allowed" (an error, exit 2), Argo CD no longer renders it (below).
		if (code != 0 && (extra == nil || code != 2)) || json.Unmarshal([]byte(out), &doc) != nil {
			t.Fatalf("code %d\n%s\n%s", code, out, stderr)
		}
		byName := map[string]int{}
		for i, a := range doc.Apps {
			byName[a.Name] = i
		}
		get := func(name string) (a struct {
			Name, Status, Error, Warning string
			Resources                    []struct{ Kind, Name, Diff string }
		}) {
			i, ok := byName[name]
			if !ok {
				t.Fatalf("no app %s in\n%s", name, out)
			}
			return doc.Apps[i]
		}
		// vendor's only source is a chart repository: Argo CD's app is not managed from this repository, so it is
		// not rendered through Argo CD at the revision the change picks (issue 38 item 5).
		v := get("vendor")
		if v.Status == "changed" || len(v.Resources) != 0 || !strings.Contains(v.Error, "exists in Argo CD, not managed from this repository") {
			t.Errorf("vendor: %+v", v)
		}
		m := get("multi")
		if m.Status != "changed" || len(m.Resources) != 1 || !strings.Contains(m.Resources[0].Diff, "+  renderedAt: 2.0.0+"+head) {
			t.Errorf("multi: %+v", m)
		}
		if p := get("pr-7"); p.Status != "changed" || len(p.Resources) != 1 || !strings.Contains(p.Resources[0].Diff, "+  color: green") {
			t.Errorf("pr-7 (generated by Argo CD, rendered here): %+v", p)
		}
		if len(doc.Unevaluated) != 0 {
			t.Errorf("unevaluated = %+v, want none", doc.Unevaluated)
		}
		mu.Lock()
		for _, want := range []string{"multi@2.0.0+" + base, "multi@2.0.0+" + head, "generate:pullRequest"} {
			if !slices.Contains(asked, want) {
				t.Errorf("Argo CD was not asked for %s (asked %v)", want, asked)
			}
		}
		for _, a := range asked {
			if strings.HasPrefix(a, "vendor@") {
				t.Errorf("Argo CD was asked to render another repository's app: %s", a)
			}
		}
		mu.Unlock()
	}

	// A change that adds an ApplicationSet with a live generator: not sent to Argo CD, listed, and the diff fails.
	gitRun(t, dir, "checkout", "-q", "change")
	filetest.Write(t, dir, "sets/scm.yaml", strings.ReplaceAll(strings.ReplaceAll(prs("manifests/pr"), "name: prs", "name: scm"),
		"pullRequest: {github: {owner: example, repo: small}}", "scmProvider: {github: {organization: example, api: 'https://attacker.example'}}"))
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "add an scm set")
	mu.Lock()
	asked = nil
	mu.Unlock()
	code, out, _ := runPreviewCmd(t, "diff", "-o", "json", "--repo", dir, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--argocd", srv.URL)
	var doc struct {
		Unevaluated []struct {
			ApplicationSet, Reason string
			Changed                bool
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code == 0 {
		t.Fatalf("with an added scmProvider set: code %d (want non-zero), %v\n%s", code, err, out)
	}
	if len(doc.Unevaluated) != 1 || doc.Unevaluated[0].ApplicationSet != "argocd/scm" || !doc.Unevaluated[0].Changed ||
		!strings.Contains(doc.Unevaluated[0].Reason, "this change adds it") {
		t.Errorf("unevaluated = %+v", doc.Unevaluated)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(asked, "generate:scmProvider") {
		t.Errorf("the added scmProvider set was sent to Argo CD: %v", asked)
	}
}

func yamlToApp(doc string, app *v1alpha1.Application) error { return yaml.Unmarshal([]byte(doc), app) }
