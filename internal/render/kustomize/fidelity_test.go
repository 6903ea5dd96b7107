package kustomize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/fidelity"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/render/target"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

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

func loadCase(t testing.TB, dir string) fidelityCase {
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
	diffs, _, err := fidelity.Compare(expected, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return diffs
}

// caseDirs returns the corpus cases whose names start with prefix, sorted. The corpus is the shared folder's
// (sharedtest.Fidelity: $FLEETWAVE_FIDELITY_DIR, else the shared folder's; absent or incomplete, tb is skipped
// with one line, or failed when FLEETWAVE_REQUIRE_SHARED=1).
func caseDirs(tb testing.TB, prefix string) []string {
	tb.Helper()
	var dirs []string
	for _, dir := range sharedtest.FidelityCaseDirs(tb) {
		if strings.HasPrefix(filepath.Base(dir), prefix) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		tb.Fatalf("the corpus has no %s* case", prefix)
	}
	return dirs
}

// TestFidelity builds every kust-* case of the corpus once per reference toolchain (sharedtest.FidelityTargets),
// as the Argo CD version it belongs to (helm 4 inflates helmCharts from 3.5), and compares it with Argo CD's
// output for that toolchain.
func TestFidelity(t *testing.T) {
	for _, ft := range sharedtest.FidelityTargets {
		t.Run("argocd-"+ft.ArgoCDVersion, func(t *testing.T) { testFidelity(t, ft.ArgoCDVersion, ft.Expected) })
	}
}

func testFidelity(t *testing.T, argocdVersion, expectedName string) {
	tgt, err := target.Parse(argocdVersion)
	if err != nil {
		t.Fatal(err)
	}
	errName := strings.TrimSuffix(expectedName, ".yaml") + "-error.txt"
	e := New()
	passed, total := 0, 0
	for _, dir := range caseDirs(t, "kust-") {
		total++
		name := filepath.Base(dir)
		ok := t.Run(name, func(t *testing.T) {
			c := loadCase(t, dir)
			repo, err := repofs.New(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			src := c.app.Spec.Source
			in := Input{
				FS:           repo.WithRecorder(&repofs.Recorder{}),
				AppPath:      src.Path,
				Kustomize:    src.Kustomize,
				Env:          c.buildEnv(),
				BuildOptions: c.env.KustomizeBuildOptions,
				KubeVersion:  src.GetKubeVersionOrDefault(tgt.ClusterVersion(c.env.KubeVersion)),
				APIVersions:  src.GetAPIVersionsOrDefault(c.env.APIVersions),
				Target:       tgt,
			}
			objs, err := e.Build(context.Background(), in)
			wantErr, errFile := os.ReadFile(filepath.Join(dir, errName))
			if errFile == nil {
				if err == nil {
					t.Fatalf("Argo CD fails on this case (%s), the build succeeded", bytes.TrimSpace(wantErr))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			expected, err := os.ReadFile(filepath.Join(dir, expectedName))
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
	t.Logf("kustomize fidelity (Argo CD %s, %s): %d/%d cases identical", argocdVersion, expectedName, passed, total)
}

// BenchmarkBuild builds each kust-* corpus case (warm: the Engine and kustomize's schema are reused).
func BenchmarkBuild(b *testing.B) {
	e := New()
	for _, d := range caseDirs(b, "kust-") {
		b.Run(filepath.Base(d), func(b *testing.B) {
			c := loadCase(b, d)
			repo, err := repofs.New(d, 0)
			if err != nil {
				b.Fatal(err)
			}
			src := c.app.Spec.Source
			in := Input{FS: repo, AppPath: src.Path, Kustomize: src.Kustomize, Env: c.buildEnv(),
				BuildOptions: c.env.KustomizeBuildOptions, KubeVersion: src.GetKubeVersionOrDefault(c.env.KubeVersion),
				APIVersions: src.GetAPIVersionsOrDefault(c.env.APIVersions)}
			for i := 0; i < b.N; i++ {
				if _, err := e.Build(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestConcurrentBuilds builds the corpus cases concurrently on one Engine and checks every result equals the
// sequential build.
func TestConcurrentBuilds(t *testing.T) {
	e := New()
	type job struct {
		name string
		in   Input
		want string
	}
	var jobs []job
	for _, dir := range caseDirs(t, "kust-") {
		c := loadCase(t, dir)
		repo, err := repofs.New(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		src := c.app.Spec.Source
		in := Input{FS: repo, AppPath: src.Path, Kustomize: src.Kustomize, Env: c.buildEnv(),
			BuildOptions: c.env.KustomizeBuildOptions, KubeVersion: src.GetKubeVersionOrDefault(c.env.KubeVersion),
			APIVersions: src.GetAPIVersionsOrDefault(c.env.APIVersions)}
		objs, err := e.Build(context.Background(), in)
		if err != nil {
			continue // reported by TestFidelity
		}
		b, _ := json.Marshal(objs)
		jobs = append(jobs, job{filepath.Base(dir), in, string(b)})
	}
	errs := make(chan error, 3*len(jobs))
	for r := 0; r < 3; r++ {
		for _, j := range jobs {
			go func() {
				objs, err := e.Build(context.Background(), j.in)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", j.name, err)
					return
				}
				if b, _ := json.Marshal(objs); string(b) != j.want {
					errs <- fmt.Errorf("%s: concurrent build differs from the sequential one", j.name)
					return
				}
				errs <- nil
			}()
		}
	}
	for i := 0; i < 3*len(jobs); i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
