package directory

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

const fuzzSecret = "FUZZ-SECRET-9a8b7c6d"

// FuzzRender renders arbitrary manifest and Jsonnet content with arbitrary include/exclude patterns. A render
// must not panic nor read the file planted next to the checkout.
func FuzzRender(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"), "{a: importstr '../../outside/secret.txt'}", "*.yaml", "")
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[]}`), "import '/etc/passwd'", "", "*.json")
	f.Add([]byte("---\n- a\n- b\n"), "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: std.extVar('x')}}]", "{a,b}*", "[")
	f.Fuzz(func(t *testing.T, manifest []byte, jsonnetSrc, include, exclude string) {
		if strings.Contains(string(manifest)+jsonnetSrc, "SECRET") {
			return // the input itself spells the marker
		}
		parent := t.TempDir()
		root := filepath.Join(parent, "repo")
		for p, c := range map[string][]byte{
			"repo/app/m.yaml":        manifest,
			"repo/app/m.json":        manifest,
			"repo/app/sub/j.jsonnet": []byte(jsonnetSrc),
			"outside/secret.txt":     []byte(fuzzSecret),
		} {
			full := filepath.Join(parent, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, c, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		repo, err := repofs.New(root, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		objs, err := Render(ctx, Input{FS: repo.WithRecorder(&repofs.Recorder{}), AppPath: "app", Directory: v1alpha1.ApplicationSourceDirectory{
			Recurse: true, Include: include, Exclude: exclude,
			Jsonnet: v1alpha1.ApplicationSourceJsonnet{ExtVars: []v1alpha1.JsonnetVar{{Name: "x", Value: "v"}}, Libs: []string{"app"}},
		}})
		if err != nil && strings.Contains(err.Error(), fuzzSecret) {
			t.Fatalf("secret leaked into the error: %v", err)
		}
		for _, o := range objs {
			if o == nil {
				continue
			}
			b, _ := o.MarshalJSON()
			if strings.Contains(string(b), fuzzSecret) {
				t.Fatalf("secret leaked into the output: %s", b)
			}
		}
	})
}
