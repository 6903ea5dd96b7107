package helm

import (
	"bytes"
	"fmt"
	"log"
	"reflect"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// sortCases are chart outputs (template path to text) for which sortManifests must give exactly what Helm 3's
// SortManifests gives: hooks and manifests, their order, the error text.
var sortCases = map[string]map[string]string{
	"empty": {},
	"kinds and files in order": {
		"c/templates/z.yaml":            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
		"c/templates/a.yaml":            "kind: Service\nmetadata:\n  name: s\n---\nkind: Zebra\n---\nkind: Namespace\n---\nkind: Apple\n---\nkind: Zebra\nmetadata:\n  name: second\n",
		"c/templates/_helpers.tpl":      "kind: Secret\n",
		"c/templates/blank.yaml":        " \n\t\n",
		"c/charts/sub/templates/b.yaml": "---\n# only a comment\n---\nkind: ConfigMap\n\n---\n\n",
		"c/templates/m.yaml":            "---\n\n---\n",
	},
	"hooks": {
		"c/templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: pre
  annotations:
    helm.sh/hook: " Pre-Install , post-upgrade"
    helm.sh/hook-weight: "-5"
    helm.sh/hook-delete-policy: Hook-Succeeded, before-hook-creation
    helm.sh/hook-output-log-policy: hook-failed
---
kind: Pod
metadata:
  name: t
  annotations:
    helm.sh/hook: test-success
    helm.sh/hook-weight: heavy
---
kind: ConfigMap
metadata:
  name: unknown
  annotations:
    helm.sh/hook: pre-install,sometime
---
kind: ConfigMap
metadata:
  name: empty-hook
  annotations:
    helm.sh/hook: ""
---
kind: Secret
metadata:
  name: plain
  annotations:
    other: x
---
kind: ServiceAccount
metadata:
  annotations:
    helm.sh/hook: pre-delete
    helm.sh/hook-delete-policy: ""
`,
		"c/templates/more.yaml": "kind: Namespace\nmetadata:\n  name: n\n  annotations:\n    helm.sh/hook: post-install\n",
	},
	"slow path heads": {
		"c/templates/odd.yaml": "Kind: Pod\nmetadata:\n  name: 12\n---\nkind: ConfigMap\nmetadata:\n  annotations:\n    helm.sh/hook: test\n    helm.sh/hook-weight: 3\n---\nkind: &k Secret\nx: *k\n---\napiVersion: 1.5\nkind: Role\n",
	},
	"crlf and tabs": {
		"c/templates/w.yaml": "kind: Service\r\nmetadata:\r\n  name: a\r\n---\r\nkind: Pod\r\n\t\n---\t\nkind: Role\n",
	},
	"parse error after some": {
		"c/templates/a.yaml": "kind: Service\n---\nkind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: pre-install\n",
		"c/templates/b.yaml": "kind: Pod\n---\nkind: [unterminated\n",
		"c/templates/c.yaml": "kind: Role\n",
	},
	"json error": {
		"c/templates/a.yaml": "kind: Pod\nspec:\n  x: .nan\n",
	},
	"not a mapping": {
		"c/templates/a.yaml": "kind: Pod\n---\n- a\n- b\n",
	},
}

func TestSortManifests(t *testing.T) {
	for name, files := range sortCases {
		t.Run(name, func(t *testing.T) {
			hooks, manifests, err := checkSortManifests(t, files)
			if name != "empty" && len(hooks) == 0 && len(manifests) == 0 && err == nil {
				t.Error("nothing sorted: the case tests nothing")
			}
		})
	}
}

// TestSortManifestsLog holds the line logged for a skipped hook to Helm 3's.
func TestSortManifestsLog(t *testing.T) {
	var got, want bytes.Buffer
	defer log.SetOutput(log.Writer())
	defer log.SetFlags(log.Flags())
	log.SetFlags(0)
	files := sortCases["hooks"]
	log.SetOutput(&got)
	_, _, _ = sortManifests(files)
	log.SetOutput(&want)
	_, _, _ = releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if got.String() != want.String() || got.Len() == 0 {
		t.Errorf("logged %q, Helm 3 %q", got.String(), want.String())
	}
}

// checkSortManifests fails unless sortManifests(files) is Helm 3's SortManifests(files, nil, InstallOrder).
func checkSortManifests(t *testing.T, files map[string]string) ([]*release.Hook, []releaseutil.Manifest, error) {
	t.Helper()
	hooks, manifests, err := sortManifests(files)
	wantHooks, wantManifests, wantErr := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("error %v, Helm 3's %v", err, wantErr)
	}
	if !reflect.DeepEqual(hooks, wantHooks) {
		t.Errorf("hooks\n%s\nHelm 3's\n%s", dumpHooks(hooks), dumpHooks(wantHooks))
	}
	if !reflect.DeepEqual(manifests, wantManifests) {
		t.Errorf("manifests\n%s\nHelm 3's\n%s", dumpManifests(manifests), dumpManifests(wantManifests))
	}
	return hooks, manifests, err
}

func FuzzSortManifests(f *testing.F) {
	for _, files := range sortCases {
		for _, content := range files {
			f.Add(content, "kind: Service\n---\n"+content)
		}
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkSortManifests(t, map[string]string{"c/templates/a.yaml": a, "c/charts/s/templates/b.yaml": b, "c/templates/_p.tpl": a})
	})
}

func dumpHooks[H any](hooks []*H) string {
	s := ""
	for _, h := range hooks {
		s += fmt.Sprintf("%+v\n", *h)
	}
	return s
}

func dumpManifests[M any](ms []M) string {
	s := ""
	for _, m := range ms {
		s += fmt.Sprintf("%+v\n", m)
	}
	return s
}
