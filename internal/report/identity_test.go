package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/diff"
)

// helmApp is a Helm app as Argo CD renders a chart with the release-name pattern: release = the app's name
// ("c-0001-web"), destination namespace web, on cluster c-0001. Its Deployment changes revisionHistoryLimit
// (limit), and, when extra is set, its replicas too.
func helmApp(cluster int, wave string, waveIndex int, limit, replicas string) App {
	name := fmt.Sprintf("c-%04d-web", cluster)
	c := fmt.Sprintf("c-%04d", cluster)
	d := fmt.Sprintf(`--- base/apps/Deployment/web/%[1]s
+++ head/apps/Deployment/web/%[1]s
@@ -5,9 +5,9 @@
     app.kubernetes.io/instance: %[1]s
     app.kubernetes.io/name: webapp
   name: %[1]s
   namespace: web
 spec:
-  replicas: 1
-  revisionHistoryLimit: 5
+  replicas: %[4]s
+  revisionHistoryLimit: %[3]s
   selector:
     matchLabels:
       app.kubernetes.io/instance: %[1]s
@@ -30,3 +30,3 @@
         - name: CLUSTER
-          value: %[2]s-old
+          value: %[2]s
`, name, c, limit, replicas)
	return App{Name: name, Namespace: "argocd", Cluster: c, DestinationNamespace: "web", Kind: "web", Status: StatusChanged,
		Wave: wave, WaveIndex: waveIndex,
		Resources: []diff.Resource{{Key: diff.Key{Group: "apps", Kind: "Deployment", Namespace: "web", Name: name}, Change: diff.Modified, Diff: d}},
		Hooks:     []diff.Resource{}, Counts: diff.Summary{Modified: 1}}
}

func identityReport(apps ...App) *Report {
	r := &Report{Base: strings.Repeat("1", 40), Head: strings.Repeat("2", 40), Apps: apps}
	r.Summarize()
	return r
}

// TestGroupingModuloIdentity (#34): changes that differ only by what Argo CD and the chart derive from the app
// itself (release name = app name, instance label, destination namespace, cluster name in a value) are one
// group, shown once with placeholders where the apps differ; a real difference is never merged away.
func TestGroupingModuloIdentity(t *testing.T) {
	fleet := func(extra func(i int, a *App)) *Report {
		var apps []App
		for i := 0; i < 6; i++ {
			wave, wi := "canary", 1
			if i >= 2 {
				wave, wi = "production", 2
			}
			a := helmApp(i, wave, wi, "10", "1")
			if extra != nil {
				extra(i, &a)
			}
			apps = append(apps, a)
		}
		return identityReport(apps...)
	}
	for _, tc := range []struct {
		name    string
		r       *Report
		groups  []int  // apps per group, in order
		apart   string // an app that must be alone in its group
		section int    // sections
	}{
		{name: "identity only: one group", r: fleet(nil), groups: []int{6}, section: 1},
		{name: "one app with an extra change stands apart", r: fleet(func(i int, a *App) {
			if i == 3 {
				*a = helmApp(i, a.Wave, a.WaveIndex, "10", "3")
			}
		}), groups: []int{5, 1}, apart: "c-0003-web"},
		{name: "a non-identity value differs: not merged", r: fleet(func(i int, a *App) {
			if i%2 == 1 {
				*a = helmApp(i, a.Wave, a.WaveIndex, "20", "1")
			}
		}), groups: []int{3, 3}},
		{name: "another namespace is an identity", r: fleet(func(i int, a *App) {
			if i == 5 {
				a.DestinationNamespace = "web-b"
				for j := range a.Resources {
					a.Resources[j].Namespace = "web-b"
					a.Resources[j].Diff = strings.ReplaceAll(a.Resources[j].Diff, "/web/", "/web-b/")
					a.Resources[j].Diff = strings.ReplaceAll(a.Resources[j].Diff, "namespace: web\n", "namespace: web-b\n")
				}
			}
		}), groups: []int{6}, section: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups := tc.r.groups()
			var sizes []int
			for _, g := range groups {
				sizes = append(sizes, len(g.members))
				if tc.apart != "" && len(g.members) > 1 {
					for _, m := range g.members {
						if m.Name == tc.apart {
							t.Errorf("%s is grouped with %v", tc.apart, g.Apps)
						}
					}
				}
			}
			if fmt.Sprint(sizes) != fmt.Sprint(tc.groups) {
				t.Fatalf("group sizes %v; want %v", sizes, tc.groups)
			}
			if tc.section != 0 && len(sections(groups)) != tc.section {
				t.Errorf("%d sections; want %d", len(sections(groups)), tc.section)
			}
			// Nothing hidden: each app's own diff is its group's shown diff with its own values put back.
			for _, g := range groups {
				for _, m := range g.members {
					vals := map[string]string{}
					for _, s := range identityOf(m) {
						vals[s.placeholder] = s.value
					}
					for j, res := range g.first().Resources {
						if got := restore(res.Diff, vals); got != m.Resources[j].Diff {
							t.Errorf("%s: its group's diff with its identity put back differs from its own:\n%s\nwant\n%s", m.Name, got, m.Resources[j].Diff)
						}
					}
				}
			}
			md := tc.r.Markdown()
			for _, a := range tc.r.Apps {
				if !strings.Contains(md, "`"+a.Name+"`") {
					t.Errorf("the comment does not name %s", a.Name)
				}
			}
		})
	}

	md := fleet(nil).Markdown()
	for _, want := range []string{
		"#1 web: same change on 6 apps, changed (+0 ~1 -0 each)",
		"Placeholders stand for what differs by the app's own identity: `‹app›` each app's name, `‹cluster›` its cluster.",
		"     app.kubernetes.io/instance: ‹app›\n",
		"   namespace: web\n", // the same for every app: shown as it is
		"+          value: ‹cluster›\n",
		"- **canary**: `c-0000-web` → c-0000, `c-0001-web` → c-0001\n- **production**: `c-0002-web` → c-0002",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comment lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "+  revisionHistoryLimit: 10"); n != 1 {
		t.Errorf("the change is shown %d times; want once", n)
	}
	g := fleet(nil).groups()[0]
	if fmt.Sprint(g.Placeholders) != "[‹app› ‹cluster›]" {
		t.Errorf("placeholders %q", g.Placeholders)
	}

	// One app alone is shown as it is: no placeholder.
	one := identityReport(helmApp(7, "", 0, "10", "1")).Markdown()
	if strings.Contains(one, "‹") || !strings.Contains(one, "app.kubernetes.io/instance: c-0007-web") {
		t.Errorf("a section of one app shows placeholders:\n%s", one)
	}
}

// TestNormalizeIsReversible: substitution only at word boundaries, longest value first, and the original
// text back from the placeholders; an app whose text already holds a placeholder's mark is not normalized.
func TestNormalizeIsReversible(t *testing.T) {
	a := &App{Name: "c-0001-web", Cluster: "c-0001", DestinationNamespace: "web"}
	subs := identityOf(a)
	vals := map[string]string{}
	for _, s := range subs {
		vals[s.placeholder] = s.value
	}
	for _, tc := range []struct{ in, want string }{
		{"name: c-0001-web-service", "name: ‹app›-service"},
		{"cluster c-0001, c-00010, xc-0001", "cluster ‹cluster›, c-00010, xc-0001"},
		{"webhook web web.svc", "webhook ‹namespace› ‹namespace›.svc"},
		{"c-0001-web", "‹app›"},
		{"nothing here", "nothing here"},
		{"", ""},
	} {
		got := normalize(tc.in, subs)
		if got != tc.want {
			t.Errorf("normalize(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if back := restore(got, vals); back != tc.in {
			t.Errorf("restore(%q) = %q; want %q", got, back, tc.in)
		}
	}
	marked := &App{Name: "c-0001-web", Cluster: "c-0001", Status: StatusChanged,
		Resources: []diff.Resource{{Diff: "+ ‹app› c-0001-web\n"}}}
	if n, s := normalized(marked); n != marked || s != nil {
		t.Error("an app whose diff holds a placeholder's mark was normalized")
	}
	if s := identityOf(&App{Name: "ab", Cluster: "cd"}); len(s) != 0 {
		t.Errorf("identity values under %d characters substituted: %v", minIdentity, s)
	}
}
