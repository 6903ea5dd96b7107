package helmtemplate

import (
	"reflect"
	"sort"
	"testing"

	"helm.sh/helm/v3/pkg/releaseutil"
	releaseutil4 "helm.sh/helm/v4/pkg/release/v1/util"
)

// splitCases are the edge cases of both SDKs' regexps and trimming; they seed FuzzSplitManifests too.
var splitCases = []string{
	"",
	"   \n\t ",
	"---",
	"---\n---\n---",
	"------",
	"----\na: 1",
	"---foo\na: 1",
	"a: 1\n---foo\nb: 2",
	"a: 1\n---\nb: 2",
	"a: 1\n---\n---\nb: 2\n---\n",
	"\n\n---\na: 1\n---\n\n",
	"---\na: 1",
	"  ---\na: 1",
	"a: 1 ---\nb: 2",
	"a: 1\n --- \nb: 2",
	"a: 1\n\n  \t\n---  \t\n\nb: 2",
	"a: |\n  text\n---\n  more\n",
	"a: |\n  text\n  ---\n  more\n",
	"a: 1\r\n---\r\nb: 2\r\n",
	"a: 1\r---\rb: 2",
	"a: 1\n\r\n---\r\n\r\nb: 2",
	"a: 1\t\n---\tb: 2",
	"a: 1\v\n---\vb: 2\v",
	"a: 1\f\n---\fb: 2\f",
	"\u0085a: 1\n---\n\u0085b: 2\u0085",
	"\u00a0a: 1\u00a0\n---\u00a0\nb: 2\u00a0",
	"a: 1\n\u00a0\n---\nb: 2",
	"a: 1\n\u0085---\nb: 2",
	"a: 1\n---\u2028b: 2\u2029",
	"a: 1\n---\n\n---\n\n---\nb: 2",
	"a: 1\n---\n \n---\nb: 2",
	"a: 1\n---\n\v\n---\nb: 2",
	"# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\n---\n# Source: c/templates/b.yaml\nkind: Secret\n",
	"a\n---b\n---\nc",
	"---\n\n---",
	"--- a\n--- b\n",
	"\n---",
	"-\n--\n---",
	"a\n----\nb",
	"x\n\n\n",
	"\xff\n---\n\xfe",
	"a\n---\n\u0085\n---\nb",
	"a\n---\n\u00a0",
}

// sdkSplit3 is Helm 3's SplitManifests as a list, in the order BySplitManifestsOrder gives its keys.
func sdkSplit3(s string) []string { return ordered(releaseutil.SplitManifests(s)) }

func sdkSplit4(s string) []string { return ordered(releaseutil4.SplitManifests(s)) }

func ordered(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []string
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

func TestSplitManifests(t *testing.T) {
	for _, s := range splitCases {
		if got, want := SplitManifests(s), sdkSplit3(s); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitManifests(%q) = %q, Helm 3's %q", s, got, want)
		}
		if got, want := SplitManifests4(s), sdkSplit4(s); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitManifests4(%q) = %q, helm 4's %q", s, got, want)
		}
	}
}

// TestSplitManifestsDiffer holds that the two SDKs' splits differ (so a test comparing one port with the
// wrong SDK would fail): helm 4 keeps trailing white space and takes only spaces and tabs after "---".
func TestSplitManifestsDiffer(t *testing.T) {
	for _, tc := range []struct {
		in           string
		want3, want4 []string
	}{
		{"a: 1\n---\nb: 2\n", []string{"a: 1", "b: 2"}, []string{"a: 1\n", "b: 2\n"}},
		{"a: 1\n---foo\n", []string{"a: 1", "foo"}, []string{"a: 1\n", "foo\n"}},
		{"a\r\n---\r\nb", []string{"a", "b"}, []string{"a\r\n", "b"}},
		{"a: 1\n  ---\nb: 2", []string{"a: 1\n  ---\nb: 2"}, []string{"a: 1\n  ---\nb: 2"}},
		{"a: 1\n\t\n---x", []string{"a: 1", "x"}, []string{"a: 1\n\t\n", "x"}},
		{"---\n---\n", []string{"---"}, nil},
	} {
		if got := SplitManifests(tc.in); !reflect.DeepEqual(got, tc.want3) {
			t.Errorf("SplitManifests(%q) = %q, want %q", tc.in, got, tc.want3)
		}
		if got := SplitManifests4(tc.in); !reflect.DeepEqual(got, tc.want4) {
			t.Errorf("SplitManifests4(%q) = %q, want %q", tc.in, got, tc.want4)
		}
	}
}

// FuzzSplitManifests holds both splits to the SDKs', and the head of every document Helm 3's split gives to
// sigs.k8s.io/yaml's (value and error).
func FuzzSplitManifests(f *testing.F) {
	for _, s := range splitCases {
		f.Add(s)
	}
	for _, tc := range headCases {
		f.Add(tc.doc)
		f.Add("kind: Service\n---\n" + tc.doc + "\n---\nkind: Pod\n")
	}
	sorter := Sorter{Unmarshal: func(doc []byte) (SimpleHead, error) { return sdkHead(string(doc)) }}
	f.Fuzz(func(t *testing.T, s string) {
		docs, want := SplitManifests(s), sdkSplit3(s)
		if !reflect.DeepEqual(docs, want) {
			t.Errorf("SplitManifests(%q) = %q, Helm 3's %q", s, docs, want)
		}
		for _, doc := range docs {
			got, err := sorter.head(doc)
			wantHead, wantErr := sdkHead(doc)
			// On an error the SDK drops the head, which sigs.k8s.io/yaml may have half filled in a random
			// order (convertToJSONableObject ranges over a map and allocates metadata as it meets it).
			if !sameError(err, wantErr) || err == nil && !reflect.DeepEqual(got, wantHead) {
				t.Errorf("head(%q) = %+v, %v; sigs.k8s.io/yaml %+v, %v", doc, got, err, wantHead, wantErr)
			}
		}
		if got, want := SplitManifests4(s), sdkSplit4(s); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitManifests4(%q) = %q, helm 4's %q", s, got, want)
		}
	})
}
