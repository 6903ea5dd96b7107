package helmtemplate

import (
	"reflect"
	"testing"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// headCases are documents and whether fastHead answers for them (true) or leaves them to sigs.k8s.io/yaml
// (false: every case where the two could differ). They seed FuzzSortManifests too.
var headCases = []struct {
	doc  string
	fast bool
}{
	{"", true},
	{"# only a comment", true},
	{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b", true},
	{"apiVersion: v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-install\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: Hook-Succeeded, before-hook-creation\n", true},
	{"kind: Pod\nmetadata:\n  annotations: {}\n", true},
	{"kind: Pod\nmetadata: {}\n", true},
	{"kind: Pod\nmetadata:\n", true},
	{"kind: Pod\nmetadata:\n  annotations:\n", true},
	{"kind: Pod\nmetadata:\n  name:\n", true},
	{"kind: ~\napiVersion: null\n", true},
	{"kind: \"Pod\"\napiVersion: 'v1'\n", true},
	{"kind: Pod\nspec:\n  containers:\n  - name: a\n    ports: [1, 2]\n  x: 1.5\n", true},
	{"kind: ConfigMap\ndata:\n  8080: default/svc:80\n  true: 1\n  1.5: x\n", true}, // keys convertToJSONableObject converts
	{"kind: ConfigMap\ndata:\n  1: a\n  \"1\": b\n", true},                          // colliding keys outside the head
	{"kind: ConfigMap\nmetadata:\n  labels:\n    1: a\n  name: x\n", true},
	{"kind: a<b>&c\nmetadata:\n  name: \"\\u00e9\"\n", true},
	{"kind: Secret\nstringData:\n  Kind: x\n", true},                                                          // a folding key below the head
	{"kind: Secret\nmetadata:\n  annotations:\n    Name: x\n    helm.sh/hook: test\n", true},                  // annotation keys are map keys
	{"kind: Pod\nmetadata:\n  name: 2001-12-14\n  annotations:\n    a: 2001-12-14t21:59:43.10-05:00\n", true}, // timestamps stay strings
	{"kind: Pod\nmetadata:\n  name: \"\"\n  annotations:\n    \"\": \"\"\n", true},
	{"kind: Pod\nspec:\n  a:\n    b: [1, {c: .5}]\n    d: !!str 1\n", false}, // a tag: outside blockyaml's subset

	// Not a mapping: sigs.k8s.io/yaml's json errors.
	{"just a string", false},
	{"- a\n- b", false},
	{"42", false},
	// Outside blockyaml's subset: yaml.v2 decides, errors included.
	{"kind: [unterminated", false},
	{"kind: &a Pod\nx: *a", false},
	{"a: 1\n---\nb: 2", false},
	{"kind: Pod\n\tbad: tab", false},
	// json.Marshal's errors anywhere in the document.
	{"kind: Pod\nspec:\n  x: .nan\n", false},
	{"kind: Pod\nspec:\n  - .inf\n", false},
	{"kind: Pod\nspec:\n  x: -.Inf\n", false},
	// Keys convertToJSONableObject refuses.
	{"kind: Pod\nspec:\n  ~: x\n", false},
	{"kind: Pod\nspec:\n  18446744073709551615: x\n", false}, // uint64
	// Non-string keys at the head's levels.
	{"1: x\nkind: Pod\n", false},
	{"kind: Pod\nmetadata:\n  true: x\n", false},
	{"kind: Pod\nmetadata:\n  annotations:\n    1: x\n", false},
	// Keys that fold to a field name.
	{"Kind: Pod\n", false},
	{"kind: Pod\nKIND: Job\n", false},
	{"APIVERSION: v1\n", false},
	{"kind: Pod\nMetaData:\n  name: x\n", false},
	{"kind: Pod\nmetadata:\n  NAME: x\n", false},
	{"kind: Pod\nmetadata:\n  Annotations:\n    a: b\n", false},
	{"\u212aind: Pod\n", false},                               // KELVIN SIGN folds to k
	{"kind: Pod\nmetadata:\n  annotation\u017f: {}\n", false}, // LONG S folds to s
	{"kind: Pod\n\u00e9: x\n", false},
	// Head fields that are not strings.
	{"kind: 1\n", false},
	{"kind: 1.5e10\n", false},
	{"apiVersion: true\n", false},
	{"kind: [a]\n", false},
	{"kind: {a: b}\n", false},
	{"metadata: x\n", false},
	{"metadata: [a]\n", false},
	{"metadata:\n  name: 12\n", false},
	{"metadata:\n  annotations: x\n", false},
	{"metadata:\n  annotations:\n    a: 1\n", false},
	{"metadata:\n  annotations:\n    a: true\n", false},
	{"metadata:\n  annotations:\n    a:\n", false},
	{"metadata:\n  annotations:\n    a: [b]\n", false},
	// Invalid UTF-8 in head strings (json.Marshal writes U+FFFD).
	{"kind: \"\\xff\"\n", true}, // yaml.v2's \x escape is a code point: valid UTF-8
	{"metadata:\n  annotations:\n    a: \"\\ud800\"\n", false},
}

// sdkHead is what Helm 3's manifest_sorter.go does with a document.
func sdkHead(doc string) (SimpleHead, error) {
	var h releaseutil.SimpleHead
	err := yaml.Unmarshal([]byte(doc), &h)
	return SimpleHead(h), err
}

func TestFastHead(t *testing.T) {
	for _, tc := range headCases {
		got, ok := fastHead(tc.doc)
		if ok != tc.fast {
			t.Errorf("fastHead(%q) answers %v, want %v", tc.doc, ok, tc.fast)
		}
		want, err := sdkHead(tc.doc)
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("fastHead(%q) = %+v, sigs.k8s.io/yaml %+v, %v", tc.doc, got, want, err)
		}
		s := Sorter{Unmarshal: func(doc []byte) (SimpleHead, error) { return sdkHead(string(doc)) }}
		got, gotErr := s.head(tc.doc)
		if !sameError(gotErr, err) || err == nil && !reflect.DeepEqual(got, want) { // see FuzzSplitManifests
			t.Errorf("head(%q) = %+v, %v; sigs.k8s.io/yaml %+v, %v", tc.doc, got, gotErr, want, err)
		}
	}
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}
