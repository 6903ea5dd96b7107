package discover

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// splitDocuments' shortcut for a stream of one document gives what apimachinery's YAMLReader gives.
func TestSplitDocumentsAsTheYAMLReader(t *testing.T) {
	shortcuts := 0
	for _, in := range []string{
		"", "\n", "  \n", "a: b", "a: b\n", "a: b\n\n", "a: |\n  x\n  ---\n", "a: b\n--- \nc: d\n", "---\na: b\n",
		"a: b\r\nc: d\r\n", "a: b\n---\n", "a: b\n--- # c\nd: e", "# only\n", " ---\na: b\n", "a: b---\n",
	} {
		var want [][]byte
		rd := utilyaml.NewYAMLReader(bufioReader([]byte(in)))
		for {
			d, err := rd.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", in, err)
			}
			if len(bytes.TrimSpace(d)) > 0 {
				want = append(want, d)
			}
		}
		got, err := splitDocuments([]byte(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitDocuments(%q) = %q, %v; the YAMLReader gives %q", in, got, err, want)
		}
		if _, ok := singleDocument([]byte(in)); ok {
			shortcuts++
		}
	}
	if shortcuts < 8 {
		t.Fatalf("only %d streams took the one-document shortcut", shortcuts)
	}
}

// Applications equal as values, and unequal ones with the same JSON (a nil and an empty list), are equal
// definitions; a different spec is not.
func TestDefinitionEqual(t *testing.T) {
	app := func(files []string, ns string) *v1alpha1.Application {
		a := &v1alpha1.Application{}
		a.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": ns}
		a.Spec.Source = &v1alpha1.ApplicationSource{Path: "p", Helm: &v1alpha1.ApplicationSourceHelm{ValueFiles: files}}
		a.Spec.Destination.Namespace = ns
		return a
	}
	for _, tc := range []struct {
		a, b *v1alpha1.Application
		want bool
	}{
		{app([]string{"v.yaml"}, "x"), app([]string{"v.yaml"}, "x"), true},
		{app(nil, "x"), app([]string{}, "x"), true},
		{app([]string{"v.yaml"}, "x"), app([]string{"w.yaml"}, "x"), false},
		{app(nil, "x"), app(nil, "y"), false},
	} {
		if got := DefinitionEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("DefinitionEqual(%+v, %+v) = %v", tc.a.Spec, tc.b.Spec, got)
		}
	}
}

// documentObject gives YAMLToJSON's bytes and what json.Unmarshal makes of them, whichever parser takes the
// document: plainyaml, blockyaml (quotes, inline values, literal blocks) or yaml.v2 itself; and yamlStrings
// finds every string yaml.v3 would, whichever takes the kustomization.
func TestDocumentObjectAsSigsYAML(t *testing.T) {
	docs := []string{
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: a\n  labels: {team: web}\nspec:\n  project: default\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: 'b', annotations: {\"x/y\": \"1\"}}\nspec:\n  source:\n" +
			"    repoURL: \"https://example.com/r.git\"\n    targetRevision: 1.10\n    helm:\n      values: |\n        replicas: 2\n        on: yes\n" +
			"      parameters:\n      - {name: a, value: 'true'}\n  syncPolicy: {automated: {prune: true}}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: &m {name: c}\nspec: {}\n", // aliases: yaml.v2's
		"kind: List\nitems:\n- 1\n- 1.5\n- 1e3\n- 0x1F\n- 2001-12-14\n- ~\n",
	}
	for _, doc := range docs {
		obj, js, err := documentObject([]byte(doc))
		wantJS, wantErr := yaml.YAMLToJSON([]byte(doc))
		var want map[string]any
		if wantErr == nil {
			wantErr = json.Unmarshal(wantJS, &want)
		}
		if (err == nil) != (wantErr == nil) || string(js) != string(wantJS) || !reflect.DeepEqual(obj, want) {
			t.Errorf("documentObject(%q)\n = %s %#v %v\nwant %s %#v %v", doc, js, obj, err, wantJS, want, wantErr)
		}
	}
	kust := "resources:\n- ../base\n- 'quoted.yaml'\npatches:\n- path: p.yaml\n- patch: |-\n    - op: add\n      path: /x\ngenerators: [gen.yaml]\n"
	got := map[string]bool{}
	for _, s := range yamlStrings([]byte(kust)) {
		got[s] = true
	}
	for _, s := range []string{"../base", "quoted.yaml", "p.yaml", "gen.yaml"} {
		if !got[s] {
			t.Errorf("yamlStrings misses %q: %v", s, got)
		}
	}
}
