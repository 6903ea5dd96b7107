package discover

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
