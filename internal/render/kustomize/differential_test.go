//go:build differential

package kustomize

// The differential test runs Argo CD's own util/kustomize Build (edits, then `kustomize build`) with the pinned
// kustomize and helm binaries on a scratch copy of each testdata/diff case, and compares it with the in-process
// Build. It needs the binaries, so it is opt-in:
//
//	FLEETWAVE_KUSTOMIZE_BIN=/path/to/kustomize-v5.8.1 FLEETWAVE_HELM_BIN=/path/to/helm-v3.19.4 \
//	  go test -tags differential -run TestDifferential ./internal/render/kustomize/ [-update]
//
// With -update it writes Argo CD's output next to each case (case*.expected.yaml, or case*.expected-error.txt),
// the goldens TestGoldens checks without the binaries.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/git"
	argokustomize "github.com/argoproj/argo-cd/v3/util/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v: %s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", dst).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
}

func normalize(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		out[o.GetAPIVersion()+"/"+o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = v
	}
	return out
}

func TestDifferential(t *testing.T) {
	kbin, hbin := os.Getenv("FLEETWAVE_KUSTOMIZE_BIN"), os.Getenv("FLEETWAVE_HELM_BIN")
	if kbin == "" || hbin == "" {
		t.Skip("set FLEETWAVE_KUSTOMIZE_BIN and FLEETWAVE_HELM_BIN to run the differential test")
	}
	bin := t.TempDir()
	if err := os.Symlink(hbin, filepath.Join(bin, "helm")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	env := diffEnv
	cases, err := filepath.Glob("testdata/diff/*/case*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := New()
	for _, cf := range cases {
		if strings.Contains(cf, ".expected") {
			continue
		}
		t.Run(filepath.Base(filepath.Dir(cf))+"/"+filepath.Base(cf), func(t *testing.T) {
			c := loadDiffCase(t, cf)
			root := filepath.Dir(cf)
			kv, err := parseKubeVersion(c.KubeVersion)
			if err != nil {
				t.Fatal(err)
			}

			// Argo CD, on a scratch copy (its edits write into the checkout)
			scratch := t.TempDir()
			copyTree(t, root, scratch)
			k := argokustomize.NewKustomizeApp(scratch, filepath.Join(scratch, c.Path), git.NopCreds{}, "", kbin, "", "")
			want, _, cmds, argoErr := k.Build(c.Kustomize, &v1alpha1.KustomizeOptions{BuildOptions: c.BuildOptions}, env,
				&argokustomize.BuildOpts{KubeVersion: kv, APIVersions: c.APIVersions})

			repo, err := repofs.New(root, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Build(context.Background(), Input{FS: repo, AppPath: c.Path, Kustomize: c.Kustomize, Env: env,
				BuildOptions: c.BuildOptions, KubeVersion: c.KubeVersion, APIVersions: c.APIVersions})
			if golden.Updating() {
				writeGolden(t, cf, want, argoErr)
			}
			if argoErr != nil || err != nil {
				if (argoErr == nil) != (err == nil) {
					t.Fatalf("argo cd: %v\nin-process: %v", argoErr, err)
				}
				t.Logf("both fail:\nargo cd: %v\nin-process: %v", argoErr, err)
				return
			}
			wm, gm := normalize(t, want), normalize(t, got)
			var keys []string
			for k := range wm {
				keys = append(keys, k)
			}
			for k := range gm {
				if _, ok := wm[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !reflect.DeepEqual(wm[k], gm[k]) {
					wb, _ := json.Marshal(wm[k])
					gb, _ := json.Marshal(gm[k])
					t.Errorf("%s differs\nargo cd:    %s\nin-process: %s", k, wb, gb)
				}
			}
			var order []string
			for i := range want {
				if i < len(got) && want[i].GetName() != got[i].GetName() {
					order = append(order, want[i].GetName()+"≠"+got[i].GetName())
				}
			}
			if len(order) > 0 {
				t.Logf("document order differs: %s", strings.Join(order, ", "))
			}
			t.Logf("%d objects; argo cd ran: %s", len(want), strings.Join(cmds, " && "))
		})
	}
}

func writeGolden(t *testing.T, caseFile string, objs []*unstructured.Unstructured, argoErr error) {
	t.Helper()
	base := strings.TrimSuffix(caseFile, ".yaml")
	_ = os.Remove(base + ".expected.yaml")
	_ = os.Remove(base + ".expected-error.txt")
	if argoErr != nil {
		if err := os.WriteFile(base+".expected-error.txt", []byte(argoErr.Error()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var buf strings.Builder
	buf.WriteString("# generated by TestDifferential -update: Argo CD util/kustomize Build with the pinned kustomize and helm\n")
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	if err := os.WriteFile(base+".expected.yaml", []byte(buf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
