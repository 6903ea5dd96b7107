package helmtemplate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// node is a chart as the SDKs' *chart.Chart shows itself to SortDependencies.
type node struct {
	name, version string
	deps          []*node
}

func (n *node) Name() string                { return n.name }
func (n *node) Dependencies() []*node       { return n.deps }
func (n *node) SetDependencies(ds ...*node) { n.deps = ds }

func names(n *node) string {
	var parts []string
	for _, d := range n.deps {
		s := d.name + "@" + d.version
		if len(d.deps) > 0 {
			s += "(" + names(d) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestSortDependencies(t *testing.T) {
	for _, tc := range []struct {
		name string
		root *node
		want string
	}{
		{name: "no subcharts", root: &node{name: "app"}, want: ""},
		{name: "by name", root: &node{deps: []*node{{name: "redis", version: "1"}, {name: "common", version: "2"}}},
			want: "common@2 redis@1"},
		{name: "same name by version", root: &node{deps: []*node{{name: "db", version: "2.0.0"}, {name: "db", version: "1.0.0"}}},
			want: "db@1.0.0 db@2.0.0"},
		{name: "at every depth", root: &node{deps: []*node{
			{name: "z", version: "1", deps: []*node{{name: "b", version: "1"}, {name: "a", version: "1"}}},
			{name: "m", version: "1"},
		}}, want: "m@1 z@1(a@1 b@1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			SortDependencies(tc.root, func(n *node) string { return n.version })
			if got := names(tc.root); got != tc.want {
				t.Errorf("order %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDropNotes(t *testing.T) {
	files := map[string]string{
		"c/templates/NOTES.txt":            "thanks",
		"c/charts/sub/templates/NOTES.txt": "sub thanks",
		"c/templates/cm.yaml":              "kind: ConfigMap",
		"c/templates/notes.yaml":           "kind: Secret",
	}
	DropNotes(files)
	want := map[string]string{"c/templates/cm.yaml": "kind: ConfigMap", "c/templates/notes.yaml": "kind: Secret"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("left %v, want %v", files, want)
	}
}

type hookEvent string

func TestIsTestHook(t *testing.T) {
	for _, tc := range []struct {
		events []hookEvent
		want   bool
	}{
		{nil, false},
		{[]hookEvent{"pre-install", "post-install"}, false},
		{[]hookEvent{"test"}, true},
		{[]hookEvent{"pre-upgrade", "test"}, true},
		{[]hookEvent{"test-success"}, false}, // Helm 2's name, not a test hook for Helm 3 or 4
	} {
		if got := IsTestHook(tc.events); got != tc.want {
			t.Errorf("IsTestHook(%v) = %v, want %v", tc.events, got, tc.want)
		}
	}
}

func TestOutput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(o *Output)
		want  string
	}{
		{name: "nothing", build: func(*Output) {}, want: "\n"},
		{name: "resources then hooks", build: func(o *Output) {
			o.Hook("c/templates/job.yaml", "kind: Job")
			o.Resource("c/crds/crd.yaml", "kind: CustomResourceDefinition\n")
			o.Resource("c/templates/cm.yaml", "kind: ConfigMap")
		}, want: "---\n# Source: c/crds/crd.yaml\nkind: CustomResourceDefinition\n\n---\n# Source: c/templates/cm.yaml\nkind: ConfigMap\n" +
			"---\n# Source: c/templates/job.yaml\nkind: Job\n"},
		{name: "a release manifest the SDK wrote", build: func(o *Output) {
			o.Release("\n---\n# Source: c/templates/cm.yaml\nkind: ConfigMap\n\n")
			o.Hook("c/templates/t.yaml", "kind: Pod")
		}, want: "---\n# Source: c/templates/cm.yaml\nkind: ConfigMap\n---\n# Source: c/templates/t.yaml\nkind: Pod\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Output
			tc.build(&o)
			if got := string(o.Bytes()); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestOutputTrimsAsTheSDK: the texts are copied once, trimmed as a whole as the SDK trims its manifest
// (strings.TrimSpace of the concatenation), whatever white space and empty contents sit at either end.
func TestOutputTrimsAsTheSDK(t *testing.T) {
	contents := []string{"", " ", "\n\t ", "kind: A", " kind: B\n\n", "\u0085x\u00a0", "\u00a0", "\xc2", "a\x85"}
	for _, release := range []string{"", "\n \n", "---\nkind: R\n\n"} {
		for _, first := range contents {
			for _, last := range contents {
				var o Output
				var manifest, hooks strings.Builder
				if release != "" {
					o.Release(release)
					manifest.WriteString(release)
				}
				for i, c := range []string{first, "kind: M", last} {
					src := fmt.Sprintf("c/templates/%d.yaml", i)
					o.Resource(src, c)
					fmt.Fprintf(&manifest, "---\n# Source: %s\n%s\n", src, c)
				}
				o.Hook("c/templates/h.yaml", last)
				fmt.Fprintf(&hooks, "---\n# Source: %s\n%s\n", "c/templates/h.yaml", last)
				want := strings.TrimSpace(manifest.String()) + "\n" + hooks.String()
				if got := string(o.Bytes()); got != want {
					t.Fatalf("release %q, contents %q … %q:\ngot  %q\nwant %q", release, first, last, got, want)
				}
			}
		}
	}
	var o Output // only white space: an empty manifest
	o.Release(" \n\u00a0")
	if got := string(o.Bytes()); got != "\n" {
		t.Errorf("a white space release: %q, want %q", got, "\n")
	}
}
