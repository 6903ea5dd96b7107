package render_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

const chartYAML = "apiVersion: v2\nname: demo\nversion: 0.1.0\n"
const cmTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ .Values.greeting | quote }}
  ns: {{ .Release.Namespace | quote }}
`

func mustApp(t *testing.T, y string) render.Request {
	t.Helper()
	app, err := render.ParseApplication([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return render.Request{App: app}
}

func renderYAML(t *testing.T, r *render.Renderer, req render.Request) (string, *render.Result, error) {
	t.Helper()
	res, err := r.Render(context.Background(), req)
	if err != nil {
		return "", nil, err
	}
	var buf bytes.Buffer
	if err := render.WriteYAML(&buf, res.Objects); err != nil {
		t.Fatal(err)
	}
	// EncodeYAML is the same stream in one buffer, wherever a render's YAML is looked at.
	if enc, err := render.EncodeYAML(res.Objects, 1<<40); err != nil || !bytes.Equal(enc, buf.Bytes()) {
		t.Fatalf("EncodeYAML: %v\n%s\nWriteYAML wrote:\n%s", err, enc, buf.Bytes())
	}
	return buf.String(), res, nil
}

// TestEncodeYAML: EncodeYAML writes what WriteYAML does, refuses past its bound, and names an object that does
// not encode as WriteYAML does.
func TestEncodeYAML(t *testing.T) {
	obj := func(kind, name string, extra interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"kind": kind, "metadata": map[string]interface{}{"name": name}, "x": extra}}
	}
	objs := []*unstructured.Unstructured{obj("A", "a", "1"), obj("B", "b", []interface{}{int64(2), "three"}), obj("C", "c", nil)}
	var buf bytes.Buffer
	if err := render.WriteYAML(&buf, objs); err != nil {
		t.Fatal(err)
	}
	for _, max := range []int64{int64(buf.Len()), int64(buf.Len()) - 1, 0} {
		got, err := render.EncodeYAML(objs, max)
		if max >= int64(buf.Len()) {
			if err != nil || !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("max %d: %q, %v; want %q", max, got, err, buf.Bytes())
			}
		} else if !errors.Is(err, render.ErrYAMLTooLarge) {
			t.Errorf("max %d of %d bytes: %v, want ErrYAMLTooLarge", max, buf.Len(), err)
		}
	}
	if got, err := render.EncodeYAML(nil, 0); err != nil || len(got) != 0 {
		t.Errorf("no objects: %q, %v", got, err)
	}
	bad := append(objs[:1:1], obj("D", "d", make(chan int)))
	werr := render.WriteYAML(io.Discard, bad)
	if _, err := render.EncodeYAML(bad, 1<<20); err == nil || werr == nil || err.Error() != werr.Error() {
		t.Errorf("an object that does not encode: %v, WriteYAML says %v", err, werr)
	}
}

func TestRenderHelmWithOverridesAndTracking(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"charts/demo/Chart.yaml":                   chartYAML,
		"charts/demo/values.yaml":                  "greeting: hello\n",
		"charts/demo/templates/cm.yaml":            cmTemplate,
		"charts/demo/.argocd-source.yaml":          "helm:\n  parameters:\n  - name: greeting\n    value: from-override\n",
		"charts/demo/.argocd-source-demo-prd.yaml": "helm:\n  releaseName: rel\n",
		"charts/demo/.argocd-source-other.yaml":    "helm:\n  releaseName: never\n",
		"unrelated/file.yaml":                      "a: 1\n",
	})
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: demo-prd, namespace: argocd}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: prd}
  source: {repoURL: https://example.com/fleet.git, path: charts/demo, targetRevision: HEAD}
`)
	req.Repos = func(string) (string, bool) { return root, true }
	out, res, err := renderYAML(t, render.New(render.Options{}), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"name: rel-cm",            // .argocd-source-<app>.yaml releaseName
		"greeting: from-override", // .argocd-source.yaml parameter
		"ns: prd",
		"argocd.argoproj.io/tracking-id: demo-prd:/ConfigMap:prd/rel-cm",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "never") {
		t.Errorf("another app's override was applied:\n%s", out)
	}
	joined := strings.Join(res.ReadFiles, ",")
	for _, want := range []string{"charts/demo/Chart.yaml", "charts/demo/values.yaml", "charts/demo/.argocd-source.yaml", "charts/demo/.argocd-source-demo-prd.yaml"} {
		if !strings.Contains(joined, want) {
			t.Errorf("ReadFiles lacks %s: %v", want, res.ReadFiles)
		}
	}
	// Helm loads every chart file (they are all in .Files), so another app's override file counts; files outside
	// the chart do not.
	if strings.Contains(joined, "unrelated") {
		t.Errorf("ReadFiles has files the render did not need: %v", res.ReadFiles)
	}
}

func TestRenderInstanceNameOutsideControlPlane(t *testing.T) {
	root := filetest.Tree(t, map[string]string{"m/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app, namespace: team-a}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: ns1}
  source: {repoURL: https://example.com/fleet.git, path: m}
`)
	req.Repos = func(string) (string, bool) { return root, true }
	req.Settings = render.Settings{TrackingMethod: "label"}
	out, _, err := renderYAML(t, render.New(render.Options{}), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "app.kubernetes.io/instance: team-a_app") {
		t.Errorf("label tracking with the instance name missing:\n%s", out)
	}
}

func TestRenderRefusals(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filetest.Tree(t, map[string]string{
		"ok/cm.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"many/cms.yaml":          strings.Repeat("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", 20),
		"big/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: " + strings.Repeat("x", 4000) + "}\n",
		"bomb/Chart.yaml":        chartYAML,
		"bomb/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: {{ repeat 5000 \"x\" | quote }}}\n",
		"plugin/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"twotypes/a.yaml":        "a: 1\n",
	})
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	app := func(src string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: evil, namespace: argocd}\nspec:\n  destination: {namespace: d}\n  source: " + src + "\n"
	}
	tests := []struct {
		name   string
		source string
		limits render.Limits
		repos  func(string) (string, bool)
		want   string // substring of the one-line error
		is     error
		rule   repofs.Rule
	}{
		{name: "path escapes", source: "{repoURL: r, path: ../../etc}", rule: repofs.RulePathEscape},
		{name: "absolute path", source: "{repoURL: r, path: /etc}", rule: repofs.RuleAbsolutePath},
		{name: "symlinked app path", source: "{repoURL: r, path: link}", rule: repofs.RuleSymlinkEscape},
		{name: "missing path", source: "{repoURL: r, path: nope}", want: "nope: app path does not exist"},
		{name: "document cap", source: "{repoURL: r, path: many}", limits: render.Limits{MaxDocuments: 5}, want: "refused (document-count)"},
		{name: "output cap", source: "{repoURL: r, path: bomb}", limits: render.Limits{MaxOutputBytes: 1000}, want: "refused (output-size)"},
		{name: "directory size cap", source: "{repoURL: r, path: big}", limits: render.Limits{MaxOutputBytes: 1000}, want: "exceeded max combined manifest file size"},
		{name: "file cap", source: "{repoURL: r, path: big}", limits: render.Limits{MaxFileBytes: 1000}, rule: repofs.RuleFileTooLarge},
		{name: "plugin", source: "{repoURL: r, path: plugin, plugin: {name: cmp}}", is: render.ErrPluginSource},
		{name: "chart repository", source: "{repoURL: 'https://charts.example.com', chart: redis, targetRevision: 1.0.0}", is: render.ErrExternalSource},
		{name: "other repository", source: "{repoURL: r, path: ok}", repos: func(string) (string, bool) { return "", false }, is: render.ErrExternalSource},
		{name: "two source types", source: "{repoURL: r, path: twotypes, helm: {}, directory: {}}", want: "multiple application sources defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := mustApp(t, app(tc.source))
			req.Repos = tc.repos
			if req.Repos == nil {
				req.Repos = func(string) (string, bool) { return root, true }
			}
			_, err := render.New(render.Options{Limits: tc.limits}).Render(context.Background(), req)
			if err == nil {
				t.Fatal("rendered; want a refusal")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, `app "evil"`) {
				t.Errorf("error is not one line naming the app: %q", msg)
			}
			if strings.Contains(msg, root) || strings.Contains(msg, outside) {
				t.Errorf("error reveals a local path: %q", msg)
			}
			var ref *repofs.Refusal
			switch {
			case tc.rule != "":
				if !errors.As(err, &ref) || ref.Rule != tc.rule {
					t.Errorf("error %q; want refusal %s", msg, tc.rule)
				}
			case tc.is != nil:
				if !errors.Is(err, tc.is) {
					t.Errorf("error %q; want %v", msg, tc.is)
				}
			default:
				if !strings.Contains(msg, tc.want) {
					t.Errorf("error %q; want it to contain %q", msg, tc.want)
				}
			}
		})
	}
}

func TestRenderTimeLimit(t *testing.T) {
	// A chart that loops far longer than the cap: the render must give up on time.
	root := filetest.Tree(t, map[string]string{
		"loop/Chart.yaml":        chartYAML,
		"loop/templates/cm.yaml": "{{- range $i := until 3000000 }}{{ $x := printf \"%d\" $i }}{{ $x = sha256sum $x }}{{- end }}\n",
	})
	req := mustApp(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: slow}\nspec:\n  destination: {namespace: d}\n  source: {repoURL: r, path: loop}\n")
	req.Repos = func(string) (string, bool) { return root, true }
	start := time.Now()
	_, err := render.New(render.Options{Limits: render.Limits{Timeout: 200 * time.Millisecond}}).Render(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "refused (time-limit)") {
		t.Fatalf("err = %v; want the time limit", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("gave up after %s", el)
	}
}

func TestRenderMultiSourceRefValues(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"charts/demo/Chart.yaml":        chartYAML,
		"charts/demo/values.yaml":       "greeting: hello\n",
		"charts/demo/templates/cm.yaml": cmTemplate,
		"envs/prd/values.yaml":          "greeting: from-ref\n",
		"plain/extra.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n",
	})
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: multi, namespace: argocd}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: prd}
  sources:
  - {repoURL: https://example.com/fleet.git, path: charts/demo, helm: {valueFiles: [$values/envs/prd/values.yaml]}}
  - {repoURL: https://example.com/fleet.git, ref: values}
  - {repoURL: https://example.com/fleet.git, path: plain}
`)
	req.Repos = func(string) (string, bool) { return root, true }
	out, res, err := renderYAML(t, render.New(render.Options{}), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "greeting: from-ref") {
		t.Errorf("$values ref file not applied:\n%s", out)
	}
	if i, j := strings.Index(out, "name: multi-cm"), strings.Index(out, "name: extra"); i < 0 || j < 0 || i > j {
		t.Errorf("sources not rendered in order:\n%s", out)
	}
	if got := strings.Join(res.SourceTypes, ","); got != "Helm,,Directory" {
		t.Errorf("source types = %s", got)
	}
	if !strings.Contains(strings.Join(res.ReadFiles, ","), "envs/prd/values.yaml") {
		t.Errorf("ref value file not in ReadFiles: %v", res.ReadFiles)
	}
}

func TestSourceTypeDetection(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"k/kustomization.yaml":     "resources: [cm.yaml]\n",
		"k/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"k/Chart.yaml":             chartYAML, // kustomize wins over helm, as in Argo CD's discovery
		"h/Chart.yaml":             chartYAML,
		"h/templates/x.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: h}\n",
		"d/sub/kustomization.yaml": "resources: []\n", // only the top of the app path counts
		"d/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n",
	})
	for path, want := range map[string]string{"k": "Kustomize", "h": "Helm", "d": "Directory"} {
		req := mustApp(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  destination: {namespace: n}\n  source: {repoURL: r, path: "+path+"}\n")
		req.Repos = func(string) (string, bool) { return root, true }
		res, err := render.New(render.Options{}).Render(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if res.SourceTypes[0] != want {
			t.Errorf("%s: type %s, want %s", path, res.SourceTypes[0], want)
		}
	}
}

func TestParseApplicationRejectsOtherKinds(t *testing.T) {
	for _, y := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {}\n",
		"{{{",
	} {
		if _, err := render.ParseApplication([]byte(y)); err == nil {
			t.Errorf("ParseApplication(%q) succeeded", y)
		}
	}
}

// A directory's disableExtensionFilter is read as Argo CD 3.6 reads it, and ignored as earlier releases, which
// do not have the field, ignore it: a file of another extension is rendered only as 3.6.
func TestDirectoryExtensionFilterByRelease(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"d/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
		"d/secret.yaml.enc": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other-extension}\n",
		"d/notes.md":        "not a manifest, excluded\n",
	})
	for _, tc := range []struct{ version, want string }{
		{"3.6", "other-extension"},
		{"3.5", ""},
		{"3.2", ""},
	} {
		req := mustApp(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec:\n  destination: {namespace: n}\n"+
			"  source: {repoURL: r, path: d, directory: {disableExtensionFilter: true, exclude: '*.md'}}\n")
		req.Repos = func(string) (string, bool) { return root, true }
		req.Settings.ArgoCDVersion = tc.version
		out, _, err := renderYAML(t, render.New(render.Options{}), req)
		if err != nil {
			t.Fatalf("as %s: %v", tc.version, err)
		}
		if !strings.Contains(out, "name: plain") || strings.Contains(out, "other-extension") != (tc.want != "") {
			t.Errorf("as %s: rendered\n%s", tc.version, out)
		}
	}
}

// TestOneRenderKeepsNoOutput: a Renderer repeats a chart's first render for the same inputs (Helm's output cache:
// random values repeat, as in Argo CD's manifest cache); one made for a single render keeps nothing, so each
// render is Helm's own.
func TestOneRenderKeepsNoOutput(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"c/Chart.yaml":        chartYAML,
		"c/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata: {v: {{ randAlphaNum 32 | quote }}}\n",
	})
	req := mustApp(t, "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec:\n  destination: {namespace: d}\n  source: {repoURL: https://example.com/r.git, path: c}\n")
	req.Repos = func(string) (string, bool) { return root, true }
	for _, one := range []bool{false, true} {
		r := render.New(render.Options{OneRender: one})
		first, _, err := renderYAML(t, r, req)
		if err != nil {
			t.Fatal(err)
		}
		second, _, err := renderYAML(t, r, req)
		if err != nil {
			t.Fatal(err)
		}
		if (first == second) == one {
			t.Errorf("OneRender %v: the second render repeats the first: %v", one, first == second)
		}
	}
}
