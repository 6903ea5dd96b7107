package directory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

func names(objs []*unstructured.Unstructured) string {
	var out []string
	for _, o := range objs {
		n := o.GetName()
		if o.Object == nil || o.GetKind() == "" {
			n = "<empty>"
		}
		out = append(out, n)
	}
	return strings.Join(out, ",")
}

var tree = map[string]string{
	"app/a.yaml":            cm("a") + "---\n" + cm("a2"),
	"app/b.json":            `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`,
	"app/c.yml":             cm("c"),
	"app/notes.yaml":        "just: some\nunrelated: yaml\n",
	"app/readme.txt":        cm("txt"),
	"app/s.yaml.sealed":     cm("sealed"),
	"app/skip.yaml":         "# +argocd:skip-file-rendering\n" + cm("skipped"),
	"app/sub/d.yaml":        cm("d"),
	"app/sub/deeper/e.yaml": cm("e"),
	"app/z-dep.yaml":        cm("zdep"),
	"app/z-db-dep.yaml":     cm("zdbdep"),
	"app/empty.yaml":        "---\n---\n",
}

// TestWalk covers file selection: order, recurse, include/exclude globs (gobwas, `*` crossing "/", `{a,b}`),
// ignored files.
func TestWalk(t *testing.T) {
	root := filetest.Tree(t, tree)
	tests := []struct {
		name string
		dir  v1alpha1.ApplicationSourceDirectory
		want string
	}{
		{name: "flat", want: "a,a2,b,c,zdbdep,zdep"},
		{name: "recurse", dir: v1alpha1.ApplicationSourceDirectory{Recurse: true}, want: "a,a2,b,c,d,e,zdbdep,zdep"},
		{name: "include star crosses slash", dir: v1alpha1.ApplicationSourceDirectory{Recurse: true, Include: "*.yaml"}, want: "a,a2,d,e,zdbdep,zdep"},
		{name: "include alternatives", dir: v1alpha1.ApplicationSourceDirectory{Recurse: true, Include: "{sub/*,*.json}"}, want: "b,d,e"},
		{name: "exclude", dir: v1alpha1.ApplicationSourceDirectory{Recurse: true, Include: "{*-dep.yaml,*.yml}", Exclude: "*-db-*"}, want: "c,zdep"},
		{name: "bad pattern matches nothing", dir: v1alpha1.ApplicationSourceDirectory{Include: "[a"}, want: ""},
		// Argo CD 3.6's disableExtensionFilter: any file name, include/exclude the only filters.
		{name: "extension filter off", dir: v1alpha1.ApplicationSourceDirectory{DisableExtensionFilter: true, Include: "*.{sealed,txt}"}, want: "txt,sealed"},
		{name: "extension filter off, no include", dir: v1alpha1.ApplicationSourceDirectory{DisableExtensionFilter: true, Exclude: "*.json"}, want: "a,a2,c,txt,sealed,zdbdep,zdep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app", Directory: tt.dir})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(objs); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFiles covers Argo CD's per-file rules.
func TestFiles(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    string
		wantErr string
	}{
		{name: "json list is one object", files: map[string]string{"app/l.json": `{"apiVersion":"v1","kind":"List","items":[]}`}, want: ""},
		{name: "two json objects", files: map[string]string{"app/x.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}} {}`}, wantErr: "multiple objects"},
		{name: "non-kubernetes json kept as an empty object", files: map[string]string{"app/package.json": `{"name":"web"}`}, want: "<empty>"},
		{name: "json array is an error", files: map[string]string{"app/x.json": `[1]`}, wantErr: "failed to unmarshal"},
		{name: "broken manifest", files: map[string]string{"app/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n"}, wantErr: "x.yaml"},
		{name: "broken unrelated yaml ignored", files: map[string]string{"app/x.yaml": "a: [\n"}, want: ""},
		{name: "second document broken", files: map[string]string{"app/x.yaml": cm("ok") + "---\nkind: [\n"}, wantErr: "x.yaml"},
		{name: "utf-16 with BOM", files: map[string]string{"app/x.yaml": string(utf16le(cm("wide")))}, want: "wide"},
		{name: "dangling symlink skipped", files: map[string]string{"app/x.yaml": "->missing.yaml", "app/y.yaml": cm("yy")}, want: "yy"},
		{name: "symlink inside the repository", files: map[string]string{"app/x.yaml": "->../other/o.yaml", "other/o.yaml": cm("o")}, want: "o"},
		{name: "symlink out of the repository", files: map[string]string{"app/x.yaml": "->/etc/hostname"}, wantErr: "refused (symlink-escape)"},
		{name: "symlink out with another name is ignored", files: map[string]string{"app/x.txt": "->/etc/hostname"}, want: ""},
		{name: "symlinked directory not walked", files: map[string]string{"app/sub": "->../other", "other/o.yaml": cm("o")}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filetest.Tree(t, tt.files)
			objs, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app",
				Directory: v1alpha1.ApplicationSourceDirectory{Recurse: true}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error %q", names(objs), err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "directory app: ") || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q is not one line naming the application", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(objs); got != tt.want {
				t.Fatalf("got %q, want %q (%d objects)", got, tt.want, len(objs))
			}
		})
	}
}

func utf16le(s string) []byte {
	out := []byte{0xFF, 0xFE}
	for _, r := range s {
		out = append(out, byte(r), 0)
	}
	return out
}

// TestSizeCap: the combined size of YAML/JSON files is capped; Jsonnet files do not count.
func TestSizeCap(t *testing.T) {
	root := filetest.Tree(t, map[string]string{"app/a.yaml": cm("a"), "app/b.yaml": cm("b"), "app/c.jsonnet": strings.Repeat(" ", 500) + "[]"})
	size := int64(len(cm("a")) + len(cm("b")))
	if _, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app", MaxManifestBytes: size}); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	_, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app", MaxManifestBytes: size - 1})
	if !errors.Is(err, ErrExceededMaxCombinedManifestFileSize) {
		t.Fatalf("got %v, want the size cap error", err)
	}
	if _, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app", MaxManifestBytes: -1}); err != nil {
		t.Fatalf("no cap: %v", err)
	}
}

// TestJsonnet covers TLAs and ext vars (code and string, envsubst), library paths and import confinement.
func TestJsonnet(t *testing.T) {
	env := &v1alpha1.Env{{Name: "ARGOCD_APP_NAME", Value: "myapp"}}
	files := map[string]string{
		"app/main.jsonnet": `local lib = import 'lib.libsonnet';
function(name, replicas) [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: name},
  data: {replicas: std.toString(replicas), lib: lib.v, ext: std.extVar('e'), code: std.toString(std.extVar('c'))}}]`,
		"libs/lib.libsonnet": `{v: importstr 'data.txt'}`,
		"libs/data.txt":      `from-lib`,
	}
	root := filetest.Tree(t, files)
	dir := v1alpha1.ApplicationSourceDirectory{Jsonnet: v1alpha1.ApplicationSourceJsonnet{
		TLAs:    []v1alpha1.JsonnetVar{{Name: "name", Value: "$ARGOCD_APP_NAME"}, {Name: "replicas", Value: "1+2", Code: true}},
		ExtVars: []v1alpha1.JsonnetVar{{Name: "e", Value: "x-${ARGOCD_APP_NAME}"}, {Name: "c", Value: "[1]", Code: true}},
		Libs:    []string{"/libs"},
	}}
	repo := repofstest.Open(t, root)
	objs, err := Render(context.Background(), Input{FS: repo, AppPath: "app", Directory: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetName() != "myapp" {
		t.Fatalf("got %v", names(objs))
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	want := map[string]string{"replicas": "3", "lib": "from-lib", "ext": "x-myapp", "code": "[1]"}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("data.%s = %q, want %q", k, data[k], v)
		}
	}
	if dir.Jsonnet.TLAs[0].Value != "$ARGOCD_APP_NAME" {
		t.Error("Render changed the caller's TLAs")
	}
	found := false
	for _, f := range repo.Recorder().Files() {
		found = found || f == "libs/data.txt"
	}
	if !found {
		t.Errorf("imports not recorded: %v", repo.Recorder().Files())
	}
}

// TestJsonnetSubstitutesTwice documents an Argo CD quirk kept for fidelity: makeJsonnetVM substitutes the TLAs
// in place, so each further Jsonnet file of the application sees them substituted again.
func TestJsonnetSubstitutesTwice(t *testing.T) {
	env := &v1alpha1.Env{{Name: "ARGOCD_APP_NAME", Value: "myapp"}}
	f := `function(n) {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: n}}`
	root := filetest.Tree(t, map[string]string{"app/a.jsonnet": f, "app/b.jsonnet": f})
	dir := v1alpha1.ApplicationSourceDirectory{Jsonnet: v1alpha1.ApplicationSourceJsonnet{
		TLAs: []v1alpha1.JsonnetVar{{Name: "n", Value: "x-$$ARGOCD_APP_NAME"}}}}
	objs, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app", Directory: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs); got != "x-$ARGOCD_APP_NAME,x-myapp" {
		t.Fatalf("got %q", got)
	}
}

// TestJsonnetConfinement: imports cannot read outside the checkout.
func TestJsonnetConfinement(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		files   map[string]string
		libs    []string
		wantErr string
	}{
		{name: "absolute import", files: map[string]string{"app/m.jsonnet": `{a: importstr '` + secret + `'}`}, wantErr: "refused (absolute-path)"},
		{name: "dot-dot import", files: map[string]string{"app/m.jsonnet": `{a: importstr '../../../../../../../../` + strings.TrimPrefix(secret, "/") + `'}`}, wantErr: "refused (path-escape)"},
		{name: "symlinked import", files: map[string]string{"app/m.jsonnet": `{a: importstr 'link.txt'}`, "app/link.txt": "->" + secret}, wantErr: "refused (symlink-escape)"},
		{name: "library outside", files: map[string]string{"app/m.jsonnet": `{}`}, libs: []string{"../.."}, wantErr: "refused (path-escape)"},
		{name: "library symlinked outside", files: map[string]string{"app/m.jsonnet": `{}`, "lib": "->" + outside}, libs: []string{"lib"}, wantErr: "refused (symlink-escape)"},
		{name: "import a directory", files: map[string]string{"app/m.jsonnet": `{a: import 'd'}`, "app/d/x": "1"}, wantErr: "not a regular file"},
		{name: "missing import", files: map[string]string{"app/m.jsonnet": `{a: import 'nope.libsonnet'}`}, wantErr: "no match locally or in the Jsonnet library paths"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filetest.Tree(t, tt.files)
			objs, err := Render(context.Background(), Input{FS: repofstest.Open(t, root), AppPath: "app",
				Directory: v1alpha1.ApplicationSourceDirectory{Jsonnet: v1alpha1.ApplicationSourceJsonnet{Libs: tt.libs}}})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, %v; want %q", names(objs), err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatal("the secret leaked into the error")
			}
		})
	}
}

// TestContext: a cancelled context stops the render.
func TestContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	root := filetest.Tree(t, tree)
	if _, err := Render(ctx, Input{FS: repofstest.Open(t, root), AppPath: "app"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}
