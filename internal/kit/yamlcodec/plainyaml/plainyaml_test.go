package plainyaml

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "gopkg.in/yaml.v3"
)

// fromV2 is yaml.v2's value in Parse's representation, false where it has something else (a non-string key,
// a float, a boolean).
func fromV2(v any) (any, bool) {
	switch x := v.(type) {
	case nil, string:
		return x, true
	case int:
		return int64(x), true
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, false
			}
			ev, ok := fromV2(e)
			if !ok {
				return nil, false
			}
			m[ks] = ev
		}
		return m, true
	case []any:
		s := []any{}
		for _, e := range x {
			ev, ok := fromV2(e)
			if !ok {
				return nil, false
			}
			s = append(s, ev)
		}
		return s, true
	}
	return nil, false
}

// fromV3 is yaml.v3's value in Parse's representation.
func fromV3(v any) (any, bool) {
	switch x := v.(type) {
	case nil, string:
		return x, true
	case int:
		return int64(x), true
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			ev, ok := fromV3(e)
			if !ok {
				return nil, false
			}
			m[k] = ev
		}
		return m, true
	case []any:
		s := []any{}
		for _, e := range x {
			ev, ok := fromV3(e)
			if !ok {
				return nil, false
			}
			s = append(s, ev)
		}
		return s, true
	}
	return nil, false
}

// check fails when Parse accepts a document that either library decodes differently (or refuses).
func check(t *testing.T, doc string) (map[string]any, bool) {
	t.Helper()
	got, ok := Parse([]byte(doc))
	if !ok {
		return nil, false
	}
	var v2, v3 any
	if err := yamlv2.Unmarshal([]byte(doc), &v2); err != nil {
		t.Fatalf("Parse accepts what yaml.v2 refuses (%v):\n%s", err, doc)
	}
	if err := yamlv3.Unmarshal([]byte(doc), &v3); err != nil {
		t.Fatalf("Parse accepts what yaml.v3 refuses (%v):\n%s", err, doc)
	}
	want2, ok2 := fromV2(v2)
	want3, ok3 := fromV3(v3)
	if !ok2 || !reflect.DeepEqual(any(got), want2) {
		t.Fatalf("Parse differs from yaml.v2:\n%s\nParse:   %#v\nyaml.v2: %#v", doc, got, v2)
	}
	if !ok3 || !reflect.DeepEqual(any(got), want3) {
		t.Fatalf("Parse differs from yaml.v3:\n%s\nParse:   %#v\nyaml.v3: %#v", doc, got, v3)
	}
	js, err := json.Marshal(got)
	if err != nil || string(AppendJSON(nil, got)) != string(js) {
		t.Fatalf("AppendJSON differs from json.Marshal (%v):\n%s\nAppendJSON:   %s\njson.Marshal: %s", err, doc, AppendJSON(nil, got), js)
	}
	return got, true
}

const application = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: c-0000-api
  namespace: argocd
  labels: {team: api}
  annotations:
    argocd.argoproj.io/sync-wave: 5  # a comment
# a comment line
spec:
  project: default
  source:
    repoURL: https://github.com/example/fleet.git
    targetRevision: main
    path: charts/web
    helm:
      releaseName: api
      valueFiles:
      - ../../values/common/api.yaml
      - $values/dev/api.yaml
      parameters:
        - name: image.tag
          value: v1.2.3
        -   name: replicas
            value: 3
  destination:
    name: c-0000
    namespace: api
  syncPolicy:
`

const kustomization = `resources: [../../../../kustomize/env/dev/auth]
namespace: auth
replicas: [{name: auth, count: 1}]
configMapGenerator:
- name: auth-cluster
  literals: [CLUSTER=c-0000, B = c d]
  files:
  -
  - x.yaml
patches: []
labels: {}
`

// The shapes GitOps files are written in are taken (else the fast path would never be used), and give what the
// libraries give.
func TestParseTakesPlainFiles(t *testing.T) {
	for _, doc := range []string{
		application,
		kustomization,
		"a: b\n",
		"  a: b\n  c:\n    - d\n",
		"a:\n- b\n- c\nd: e\n",
		"a:\n  - b: c\n    d: e\n  - f\n",
		"a: x:y\n",
		"a: b c  d\n",
		"a: 0\nb: 42\nc: 123456789012345678\n",
		"a: yesterday\nb: nope\nc: Truthy\n",
		"a: {b: [c, {d: e}], f: []}\n",
		"a: b # c\nd: e\n",
		"a: ../b\nc: ./d\ne: .\nf: [../g, ./h]\n",
		"a:\n  -\n    b: c\n",
		"a: b,c\n",
		"stringData: {name: c-0000, server: \"https://c-0000.example.com\"}\n",
		"a: \"1.2.3\"\nb: \"yes\"\nc: \"\"\nd: \" x #y \" # z\ne: [\"x/y\", \"a: b\", \"[c]\"]\n",
		"a:\n- \"x\"\n- {b: \"c, d\"}\n",
	} {
		if _, ok := check(t, doc); !ok {
			t.Errorf("Parse refuses a plain document:\n%s", doc)
		}
	}
}

// Everything outside the subset is refused, so that the caller asks the library: values that are not strings
// or small integers, syntax whose meaning differs or needs the library, errors.
func TestParseRefusesTheRest(t *testing.T) {
	for _, doc := range []string{
		"", "# only a comment\n", "- a\n", "a\n",
		"a: yes\n", "a: on\n", "a: NULL\n", "a: ~\n", "a: true\n", "y: b\n",
		"a: 1.5\n", "a: -1\n", "a: +1\n", "a: 012\n", "a: 0x1f\n", "a: 1_000\n", "a: 2001-12-14\n", "a: .inf\n",
		"a: 1234567890123456789\n", "a: .5\n", "a: .nan\n", "a: d#e\n",
		"a: 'b'\n", "a: &x b\nc: *x\n", "a: !!str 1\n", "a: |\n  b\n", "a: >\n  b\n",
		"a: b\n  c\n", "a:\n  b\n", "a: [b,\n  c]\n", "a: b\na: c\n", "a: {b: c, b: d}\n", "? a\n: b\n",
		"a:\tb\n", "a: b\r\n", "a: é\n", "%YAML 1.1\n---\na: b\n", "a: b\n---\nc: d\n",
		"a: b: c\n", "a: [b: c]\n", "a: [b, ]\n", "a: {b}\n", "a: {b:c}\n", "a: b\n- c\n", "a:\n    b: c\n  d: e\n",
		"a: \"b\" c\n", "a: \"b\"c\"\n", "a: \"b\n", "\"a\": b\n", "a: \"<b>\"\n", "a: \"b\\n\"\n", "a: {\"b\": c}\n",
		"a: [\"b\"c]\n", "a: b\"c\n", "- \"a: b\"\n", "a: \"b\n  c\"\n",
		"- - a\n", "a:\n- - b\n", "a: -b\n", "<<: {a: b}\n", "a: b]\n", "a: @b\n", "a: `b`\n", "1: a\n", "a b: c\n",
	} {
		if _, ok := check(t, doc); ok {
			t.Errorf("Parse takes a document outside the subset:\n%q", doc)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, doc := range []string{application, kustomization, "a: b\n", "a:\n- b\n- c: d\n  e: [f, {g: h}]\n", "a: \"b #c\" # d\ne: {f: \"g\"}\n"} {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		check(t, doc)
	})
}

func ExampleParse() {
	v, ok := Parse([]byte("resources: [base, ../overlay]\nreplicas: [{name: web, count: 2}]\n"))
	fmt.Println(v, ok)
	// Output: map[replicas:[map[count:2 name:web]] resources:[base ../overlay]] true
}

// Random documents of the subset's own shapes (and near misses: odd indentation, stray indicators, words the
// libraries type), so that the accepted paths are compared with both libraries far more often than fuzzing
// from bytes reaches them. Deterministic: the same documents every run.
func TestParseAgreesOnGeneratedDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5000))
	good := []string{"a", "name", "path", "../../x/y.yaml", "./z", "c-0000", "https://e.x/f.git", "v1.2.3", "1", "42", "0",
		"nope", ".", "$values/v.yaml", "k=v", "_x", "/abs", "{}", "[]", "[a, b]", "{a: [b, c]}", "[../a,b]", "a b", "x #c",
		`"x"`, `"a b"`, `""`, `"x #y"`, `"1"`, `"yes"`, `"x: y"`, `["a", b]`, `{a: "b, c"}`, `"x/y"`, `"x" # c`}
	odd := []string{"007", "1.5", "yes", "no", "on", "y", "true", "null", "~", "nope", "Off", ".", "..", ".5", ".inf", "x:y", "x: y",
		"a b", "a  b", "$values/v.yaml", "k=v", "-x", "- x", "#x", "x #c", "x#c", "[x]", "{x: y}", "", "{}", "[]",
		"[a, b]", "{a: [b, c]}", "[a,b]", "{a:b}", "[a, ]", "a,b", "2001-01-01", "0x10", "1e3", "<<", "=", "_x", "/abs",
		`"<"`, `"a"b`, `"a`, `a"`, `"a" "b"`, `["a]`, `{"a": b}`}
	keys := []string{"a", "b", "c", "name", "path", "values", "x.y/z", "k-1", "_k", "$k", "..k", "Key"}
	key := func() string {
		if rng.IntN(20) == 0 {
			return odd[rng.IntN(len(odd))]
		}
		return keys[rng.IntN(len(keys))]
	}
	word := func() string {
		if rng.IntN(20) == 0 {
			return odd[rng.IntN(len(odd))]
		}
		return good[rng.IntN(len(good))]
	}
	indentOf := func(depth int) string { return strings.Repeat(" ", depth*2+rng.IntN(2)*rng.IntN(2)*rng.IntN(2)) }
	var gen func(b *strings.Builder, depth int, seq bool)
	gen = func(b *strings.Builder, depth int, seq bool) {
		n := 1 + rng.IntN(4)
		for i := 0; i < n; i++ {
			ind := indentOf(depth)
			if rng.IntN(12) == 0 {
				b.WriteString(ind + "# comment\n")
			}
			if seq {
				b.WriteString(ind + "-")
				switch rng.IntN(4) {
				case 0:
					b.WriteString(" " + word() + "\n")
				case 1:
					b.WriteString(" " + key() + ": " + word() + "\n")
				case 2:
					b.WriteString("\n")
					if depth < 4 {
						gen(b, depth+1, rng.IntN(3) == 0)
					}
				default:
					b.WriteString(" " + key() + ":\n")
					if depth < 4 {
						gen(b, depth+2, rng.IntN(2) == 0)
					}
				}
				continue
			}
			b.WriteString(ind + key() + ":")
			switch rng.IntN(3) {
			case 0:
				b.WriteString(" " + word() + "\n")
			default:
				b.WriteString("\n")
				if depth < 4 {
					d := depth + 1
					if rng.IntN(3) == 0 {
						d = depth // a sequence at its key's indentation
					}
					gen(b, d, rng.IntN(2) == 0)
				}
			}
		}
	}
	taken := 0
	for i := 0; i < 30000; i++ {
		var b strings.Builder
		gen(&b, 0, false)
		if _, ok := check(t, b.String()); ok {
			taken++
		}
	}
	if taken < 3000 {
		t.Fatalf("only %d of 30000 generated documents taken: the comparison proves little", taken)
	}
	t.Logf("%d of 30000 generated documents taken and equal to both libraries'", taken)
}
