package discover

import (
	"errors"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// fakeArgoCD generates like Argo CD's generate endpoint would for the test's sets: one app per name in
// clusters, named by the template's name with "{{name}}" replaced. It counts its calls.
type fakeArgoCD struct {
	clusters []string
	err      error
	calls    int
	sets     []string
}

func (f *fakeArgoCD) generate(set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
	f.calls++
	f.sets = append(f.sets, set.Name)
	if f.err != nil {
		return nil, f.err
	}
	var out []v1alpha1.Application
	for _, c := range f.clusters {
		a := v1alpha1.Application{Spec: *set.Spec.Template.Spec.DeepCopy()}
		a.Name = strings.ReplaceAll(set.Spec.Template.Name, "{{name}}", c)
		out = append(out, a)
	}
	return out, nil
}

func liveSetDoc(name, generators, appName, path string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n" +
		"  generators:\n" + generators +
		"  template:\n    metadata: {name: '" + appName + "'}\n    spec: {project: default, source: {repoURL: " + repoURL +
		", path: " + path + "}, destination: {name: in-cluster, namespace: x}}\n"
}

const (
	scmGen  = "  - scmProvider: {github: {organization: example}}\n"
	scmGen2 = "  - scmProvider: {github: {organization: other, api: 'https://attacker.example'}}\n"
	// A pull request generator nested in a matrix, beside a list.
	nestedGen = "  - matrix: {generators: [{list: {elements: [{env: a}]}}, {pullRequest: {github: {owner: example, repo: fleet}}}]}\n"
	// A template whose source is a config-management plugin: source.plugin is not a plugin generator.
	pluginSource = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: cmp, namespace: argocd}\nspec:\n" +
		"  generators: [{list: {elements: [{name: one}]}}]\n  template:\n    metadata: {name: 'cmp-{{name}}'}\n" +
		"    spec: {project: default, source: {repoURL: " + repoURL + ", path: cmp, plugin: {name: x}}, destination: {name: in-cluster, namespace: x}}\n"
)

// TestLiveGeneratorsAreEvaluatedByArgoCDOnlyAsTheBaseDeclaresThem: ApplicationSets with generators that need a
// live service are generated through Argo CD when it is configured, never in a form the change introduces; without
// Argo CD they are listed as not evaluated, and only a change to them is marked as such.
func TestLiveGeneratorsAreEvaluatedByArgoCDOnlyAsTheBaseDeclaresThem(t *testing.T) {
	base := liveSetDoc("repos", scmGen, "svc-{{name}}", "svc")
	tests := []struct {
		name       string
		base, head string // "" = absent
		argo       *fakeArgoCD
		wantApps   []string // head apps from the set
		wantCalls  int      // generate calls over base and head
		unevalHead string   // substring of the head's Unevaluated reason ("" = none)
		changed    bool
	}{
		{"without Argo CD, unchanged: not evaluated, not changed", base, base, nil, nil, 0, "only Argo CD evaluates", false},
		{"without Argo CD, template changed: not evaluated, changed", base, liveSetDoc("repos", scmGen, "svc2-{{name}}", "svc"), nil, nil, 0, "only Argo CD evaluates", true},
		{"unchanged: generated once at base, reused at head", base, base, &fakeArgoCD{clusters: []string{"a", "b"}}, []string{"svc-a", "svc-b"}, 1, "", false},
		{"template changed: generated at both sides", base, liveSetDoc("repos", scmGen, "svc2-{{name}}", "svc"), &fakeArgoCD{clusters: []string{"a"}}, []string{"svc2-a"}, 2, "", false},
		{"generators changed: never sent to Argo CD", base, liveSetDoc("repos", scmGen2, "svc-{{name}}", "svc"), &fakeArgoCD{clusters: []string{"a"}}, nil, 1, "alters its generators", true},
		{"added by the change: never sent to Argo CD", "", base, &fakeArgoCD{clusters: []string{"a"}}, nil, 0, "adds it", true},
		{"nested pull request generator", liveSetDoc("prs", nestedGen, "pr-{{name}}", "svc"), liveSetDoc("prs", nestedGen, "pr-{{name}}", "svc"), &fakeArgoCD{clusters: []string{"7"}}, []string{"pr-7"}, 1, "", false},
		{"Argo CD refuses", base, base, &fakeArgoCD{err: errors.New("permission denied\nmore")}, nil, 1, "Argo CD could not generate it: permission denied", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := func(set string) map[string]string {
				m := map[string]string{"apps/good.yaml": appDoc("good", "argocd", "apps/good"), "sets/cmp.yaml": pluginSource}
				if set != "" {
					m["sets/live.yaml"] = set
				}
				return m
			}
			opts := func(root string) Options {
				o := Options{Root: root, Clusters: fleetClusters, IsThisRepo: thisRepo}
				if tt.argo != nil {
					o.Generate = tt.argo.generate
				}
				return o
			}
			baseInv := Discover(opts(filetest.Tree(t, files(tt.base))))
			ho := opts(filetest.Tree(t, files(tt.head)))
			ho.Reuse, ho.Changed = baseInv, map[string]bool{"sets/live.yaml": true}
			head := Discover(ho)

			var got []string
			for _, a := range head.Apps() {
				if a.AppSet == "argocd/repos" || a.AppSet == "argocd/prs" {
					got = append(got, a.Name())
					if !a.GeneratedByArgoCD {
						t.Errorf("%s not marked as generated by Argo CD", a.Name())
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.wantApps, ",") {
				t.Errorf("head apps = %q, want %q", got, tt.wantApps)
			}
			if _, ok := head.Get("argocd/cmp-one"); !ok {
				t.Error("a template's plugin source was taken for a plugin generator: cmp-one not generated offline")
			}
			calls := 0
			if tt.argo != nil {
				calls = tt.argo.calls
			}
			if calls != tt.wantCalls {
				t.Errorf("generate calls = %d, want %d", calls, tt.wantCalls)
			}
			if len(head.Problems) != 0 {
				t.Errorf("problems = %v, want none (a live generator is not a repository problem)", head.Problems)
			}
			switch {
			case tt.unevalHead == "" && len(head.Unevaluated) != 0:
				t.Errorf("unevaluated = %v, want none", head.Unevaluated)
			case tt.unevalHead != "":
				if len(head.Unevaluated) != 1 {
					t.Fatalf("unevaluated = %v, want one", head.Unevaluated)
				}
				u := head.Unevaluated[0]
				if !strings.Contains(u.Reason, tt.unevalHead) || u.Changed != tt.changed || u.File != "sets/live.yaml" || strings.Contains(u.Reason, "\n") {
					t.Errorf("unevaluated = %+v, want reason containing %q, changed %v, file sets/live.yaml, one line", u, tt.unevalHead, tt.changed)
				}
			}
		})
	}
}

func TestLiveGeneratorKinds(t *testing.T) {
	for _, tt := range []struct {
		gens string
		want string
	}{
		{"  - list: {elements: [{a: b}]}\n", ""},
		{scmGen, "scmProvider"},
		{nestedGen, "pullRequest"},
		{"  - merge: {mergeKeys: [a], generators: [{clusterDecisionResource: {configMapRef: x}}, {plugin: {configMapRef: {name: p}}}]}\n", "clusterDecisionResource,plugin"},
		{"  - matrix: {generators: [{matrix: {generators: [{list: {elements: []}}, {scmProvider: {gitea: {owner: o}}}]}}, {list: {elements: []}}]}\n", "scmProvider"},
	} {
		inv := Discover(Options{Root: filetest.Tree(t, map[string]string{"s.yaml": liveSetDoc("s", tt.gens, "x-{{name}}", "p")}), Clusters: fleetClusters, IsThisRepo: thisRepo})
		got := ""
		if len(inv.Unevaluated) == 1 {
			got = strings.Join(inv.Unevaluated[0].Generators, ",")
		}
		if got != tt.want {
			t.Errorf("%q: live generators %q, want %q (unevaluated %v, problems %v)", tt.gens, got, tt.want, inv.Unevaluated, inv.Problems)
		}
	}
}
