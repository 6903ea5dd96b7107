package directory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// fidelityDir locates the shared render-fidelity corpus: $FLEETWAVE_FIDELITY_DIR, else ../../../../shared/fidelity.
func fidelityDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FLEETWAVE_FIDELITY_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "fidelity")
	}
	if _, err := os.Stat(filepath.Join(dir, "cases")); err != nil {
		t.Skipf("render-fidelity corpus not found at %s (set FLEETWAVE_FIDELITY_DIR): skipping", dir)
	}
	return dir
}

// renderEnv is a case's render-env.yaml: the cluster/argocd-cm half of the manifest request.
type renderEnv struct {
	APIVersions           []string `json:"apiVersions"`
	AppLabelKey           string   `json:"appLabelKey"`
	ControlPlaneNamespace string   `json:"controlPlaneNamespace"`
	InstallationID        string   `json:"installationID"`
	KubeVersion           string   `json:"kubeVersion"`
	KustomizeBuildOptions string   `json:"kustomizeBuildOptions"`
	Revision              string   `json:"revision"`
	TrackingMethod        string   `json:"trackingMethod"`
}

type fidelityCase struct {
	dir string
	app v1alpha1.Application
	env renderEnv
}

func loadCase(t *testing.T, dir string) fidelityCase {
	t.Helper()
	c := fidelityCase{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &c.app); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "render-env.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &c.env); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c fidelityCase) appName() string { return c.app.InstanceName(c.env.ControlPlaneNamespace) }

// buildEnv mirrors reposerver/repository/repository.go newEnv.
func (c fidelityCase) buildEnv() *v1alpha1.Env {
	short := func(n int) string {
		if len(c.env.Revision) > n {
			return c.env.Revision[:n]
		}
		return c.env.Revision
	}
	src := c.app.Spec.Source
	return &v1alpha1.Env{
		{Name: "ARGOCD_APP_NAME", Value: c.appName()},
		{Name: "ARGOCD_APP_NAMESPACE", Value: c.app.Spec.Destination.Namespace},
		{Name: "ARGOCD_APP_PROJECT_NAME", Value: c.app.Spec.Project},
		{Name: "ARGOCD_APP_REVISION", Value: c.env.Revision},
		{Name: "ARGOCD_APP_REVISION_SHORT", Value: short(7)},
		{Name: "ARGOCD_APP_REVISION_SHORT_8", Value: short(8)},
		{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: src.RepoURL},
		{Name: "ARGOCD_APP_SOURCE_PATH", Value: src.Path},
		{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: src.TargetRevision},
	}
}

// track flattens *List objects and applies a minimal copy of util/argo/resource_tracking.go SetAppInstance, as
// reposerver/repository/repository.go GenerateManifests does after rendering.
func (c fidelityCase) track(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o == nil {
			continue
		}
		var targets []*unstructured.Unstructured
		switch {
		case o.IsList():
			if err := o.EachListItem(func(r runtime.Object) error {
				u, ok := r.(*unstructured.Unstructured)
				if !ok {
					return errors.New("list item has unexpected type")
				}
				targets = append(targets, u)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		case isNullListObj(o):
		default:
			targets = []*unstructured.Unstructured{o}
		}
		for _, u := range targets {
			gvk := u.GroupVersionKind()
			if gvk.Kind == "CustomResourceDefinition" && gvk.Group == "apiextensions.k8s.io" {
				out = append(out, u)
				continue
			}
			annotate := func() {
				ns := u.GetNamespace()
				if ns == "" {
					ns = c.app.Spec.Destination.Namespace
				}
				a := u.GetAnnotations()
				if a == nil {
					a = map[string]string{}
				}
				if c.env.InstallationID != "" {
					a["argocd.argoproj.io/installation-id"] = c.env.InstallationID
				} else {
					delete(a, "argocd.argoproj.io/installation-id")
				}
				a["argocd.argoproj.io/tracking-id"] = fmt.Sprintf("%s:%s/%s:%s/%s", c.appName(), gvk.Group, gvk.Kind, ns, u.GetName())
				u.SetAnnotations(a)
			}
			label := func() {
				l := u.GetLabels()
				if l == nil {
					l = map[string]string{}
				}
				v := c.appName()
				if len(v) > 63 && c.env.TrackingMethod != "label" {
					v = strings.TrimRight(v[:63], "-_.")
				}
				l[c.env.AppLabelKey] = v
				u.SetLabels(l)
			}
			switch c.env.TrackingMethod {
			case "label":
				label()
			case "annotation+label":
				annotate()
				label()
			default:
				annotate()
			}
			out = append(out, u)
		}
	}
	return out
}

func isNullListObj(o *unstructured.Unstructured) bool {
	if _, ok := o.Object["spec"]; ok {
		return false
	}
	if _, ok := o.Object["status"]; ok {
		return false
	}
	v, ok := o.Object["items"]
	return ok && v == nil
}

type keyed struct {
	key   string
	value any
}

// parseStream normalises a YAML stream like the corpus's compare tool.
func parseStream(b []byte) ([]keyed, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []keyed
	seen := map[string]int{}
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(j, &v); err != nil {
			return nil, err
		}
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		str := func(path ...string) string {
			var cur any = m
			for _, p := range path {
				mm, ok := cur.(map[string]any)
				if !ok {
					return ""
				}
				cur = mm[p]
			}
			s, _ := cur.(string)
			return s
		}
		name := str("metadata", "name")
		if name == "" {
			if g := str("metadata", "generateName"); g != "" {
				name = g + "*"
			}
		}
		k := fmt.Sprintf("%s/%s/%s/%s", str("apiVersion"), str("kind"), str("metadata", "namespace"), name)
		seen[k]++
		if seen[k] > 1 {
			k += "#" + strconv.Itoa(seen[k])
		}
		objs = append(objs, keyed{k, m})
	}
	return objs, nil
}

// compareObjects compares rendered objects with the expected stream as the compare tool does: a set keyed by
// apiVersion/kind/namespace/name, values compared after parsing. It returns the differences.
func compareObjects(t *testing.T, objs []*unstructured.Unstructured, expected []byte) []string {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	got, err := parseStream(buf.Bytes())
	if err != nil {
		t.Fatalf("parse rendered: %v", err)
	}
	exp, err := parseStream(expected)
	if err != nil {
		t.Fatalf("parse expected: %v", err)
	}
	gm := map[string]any{}
	for _, o := range got {
		gm[o.key] = o.value
	}
	em := map[string]any{}
	var diffs []string
	for _, o := range exp {
		em[o.key] = o.value
		g, ok := gm[o.key]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+o.key)
		case !reflect.DeepEqual(o.value, g):
			eb, _ := json.Marshal(o.value)
			gb, _ := json.Marshal(g)
			diffs = append(diffs, fmt.Sprintf("different %s\n  expected %s\n  got      %s", o.key, eb, gb))
		}
	}
	for _, o := range got {
		if _, ok := em[o.key]; !ok {
			diffs = append(diffs, "extra "+o.key)
		}
	}
	sort.Strings(diffs)
	return diffs
}

func caseDirs(t *testing.T, prefix string) []string {
	t.Helper()
	root := filepath.Join(fidelityDir(t), "cases")
	dirs, err := filepath.Glob(filepath.Join(root, prefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	return dirs
}

// TestFidelity renders every dir-* case of the corpus and compares it with Argo CD's expected-helm3.yaml.
func TestFidelity(t *testing.T) {
	passed, total := 0, 0
	for _, dir := range caseDirs(t, "dir-") {
		total++
		name := filepath.Base(dir)
		ok := t.Run(name, func(t *testing.T) {
			c := loadCase(t, dir)
			repo, err := repofs.New(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			src := c.app.Spec.Source
			in := Input{FS: repo.WithRecorder(&repofs.Recorder{}), AppPath: src.Path, Env: c.buildEnv()}
			if src.Directory != nil {
				in.Directory = *src.Directory
			}
			objs, err := Render(context.Background(), in)
			if wantErr, errFile := os.ReadFile(filepath.Join(dir, "expected-helm3-error.txt")); errFile == nil {
				if err == nil {
					t.Fatalf("Argo CD fails on this case (%s), the render succeeded", bytes.TrimSpace(wantErr))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			expected, err := os.ReadFile(filepath.Join(dir, "expected-helm3.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if diffs := compareObjects(t, c.track(t, objs), expected); len(diffs) > 0 {
				t.Errorf("%d differences:\n%s", len(diffs), strings.Join(diffs, "\n"))
			}
			if len(in.FS.Recorder().Files()) == 0 {
				t.Error("no file reads were recorded")
			}
		})
		if ok {
			passed++
		}
	}
	t.Logf("directory fidelity: %d/%d cases identical", passed, total)
}
