package helm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	jsonpatch "github.com/evanphx/json-patch"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/fidelity"
	"github.com/fleetwave/fleetwave/internal/render/helm"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/render/target"
)

// renderEnv is a case's render-env.yaml: the cluster/argocd-cm half of a manifest request.
type renderEnv struct {
	KubeVersion           string   `json:"kubeVersion"`
	APIVersions           []string `json:"apiVersions"`
	AppLabelKey           string   `json:"appLabelKey"`
	TrackingMethod        string   `json:"trackingMethod"`
	Revision              string   `json:"revision"`
	ControlPlaneNamespace string   `json:"controlPlaneNamespace"`
	InstallationID        string   `json:"installationID"`
	// ArgoCDVersion is the Argo CD release to render as (render.Settings' argocdVersion); "" = target.Newest.
	ArgoCDVersion string `json:"argocdVersion"`
}

// testCase is a corpus case or a fixture: an Application whose source paths are relative to dir, and for
// multi-source apps ref sources checked out under dir/refs/<ref>.
type testCase struct {
	dir string
	app *v1alpha1.Application
	env renderEnv
}

func readCase(t testing.TB, dir string, defaults renderEnv) testCase {
	t.Helper()
	tc := testCase{dir: dir, env: defaults}
	b, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tc.app = &v1alpha1.Application{}
	if err := yaml.Unmarshal(b, tc.app); err != nil {
		t.Fatalf("app.yaml: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "render-env.yaml")); err == nil {
		if err := yaml.Unmarshal(b, &tc.env); err != nil {
			t.Fatalf("render-env.yaml: %v", err)
		}
	}
	return tc
}

// helmSource returns the source to render (the single source, or the first multi-source entry with a path).
func (tc testCase) helmSource() *v1alpha1.ApplicationSource {
	if tc.app.Spec.Source != nil {
		return tc.app.Spec.Source.DeepCopy()
	}
	for _, s := range tc.app.Spec.Sources {
		if s.Path != "" {
			return s.DeepCopy()
		}
	}
	return nil
}

// isHelm reports whether the case's source renders with Helm (explicit helm block, or a Chart.yaml and no
// kustomization, as util/app/discovery does).
func (tc testCase) isHelm() bool {
	src := tc.helmSource()
	if src == nil || src.Kustomize != nil || src.Directory != nil || src.Plugin != nil {
		return false
	}
	if src.Helm != nil {
		return true
	}
	p := filepath.Join(tc.dir, src.Path)
	for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(p, k)); err == nil {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(p, "Chart.yaml"))
	return err == nil
}

func (tc testCase) instanceName() string {
	ns := tc.app.Namespace
	if ns == "" || ns == tc.env.ControlPlaneNamespace {
		return tc.app.Name
	}
	return ns + "_" + tc.app.Name
}

// input builds what the renderer core passes to the engine: overrides merged, environment, cluster settings.
func (tc testCase) input(t testing.TB) (helm.Input, *repofs.Recorder) {
	t.Helper()
	src := tc.helmSource()
	rec := &repofs.Recorder{}
	fsys, err := repofs.New(tc.dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fsys = fsys.WithRecorder(rec)
	appName := tc.instanceName()
	if err := mergeSourceParameters(src, tc.dir, appName); err != nil {
		t.Fatal(err)
	}
	refs := map[string]*repofs.FS{}
	for _, s := range tc.app.Spec.Sources {
		if s.Ref == "" {
			continue
		}
		r, err := repofs.New(filepath.Join(tc.dir, "refs", s.Ref), 0)
		if err != nil {
			t.Fatal(err)
		}
		refs["$"+s.Ref] = r.WithRecorder(rec)
	}
	tgt, err := target.Parse(tc.env.ArgoCDVersion)
	if err != nil {
		t.Fatal(err)
	}
	return helm.Input{
		FS: fsys, AppPath: src.Path, Helm: src.Helm, Env: newEnv(tc, src, appName), AppName: appName,
		Namespace: tc.app.Spec.Destination.Namespace, KubeVersion: src.GetKubeVersionOrDefault(tgt.ClusterVersion(tc.env.KubeVersion)),
		APIVersions: src.GetAPIVersionsOrDefault(tc.env.APIVersions), RefSources: refs, Target: tgt,
	}, rec
}

// newEnv is reposerver/repository/repository.go newEnv.
func newEnv(tc testCase, src *v1alpha1.ApplicationSource, appName string) *v1alpha1.Env {
	short := func(n int) string {
		if len(tc.env.Revision) > n {
			return tc.env.Revision[:n]
		}
		return tc.env.Revision
	}
	return &v1alpha1.Env{
		{Name: "ARGOCD_APP_NAME", Value: appName},
		{Name: "ARGOCD_APP_NAMESPACE", Value: tc.app.Spec.Destination.Namespace},
		{Name: "ARGOCD_APP_PROJECT_NAME", Value: tc.app.Spec.Project},
		{Name: "ARGOCD_APP_REVISION", Value: tc.env.Revision},
		{Name: "ARGOCD_APP_REVISION_SHORT", Value: short(7)},
		{Name: "ARGOCD_APP_REVISION_SHORT_8", Value: short(8)},
		{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: src.RepoURL},
		{Name: "ARGOCD_APP_SOURCE_PATH", Value: src.Path},
		{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: src.TargetRevision},
	}
}

// mergeSourceParameters is reposerver/repository/repository.go mergeSourceParameters (the renderer core's job;
// repeated here so the engine can be checked alone).
func mergeSourceParameters(src *v1alpha1.ApplicationSource, root, appName string) error {
	merged := *src.DeepCopy()
	for _, name := range []string{".argocd-source.yaml", ".argocd-source-" + appName + ".yaml"} {
		patch, err := os.ReadFile(filepath.Join(root, src.Path, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		data, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		if patch, err = yaml.YAMLToJSON(patch); err != nil {
			return err
		}
		if data, err = jsonpatch.MergePatch(data, patch); err != nil {
			return err
		}
		if err := json.Unmarshal(data, &merged); err != nil {
			return err
		}
	}
	merged.Chart, merged.Path, merged.RepoURL, merged.TargetRevision = src.Chart, src.Path, src.RepoURL, src.TargetRevision
	*src = merged
	return nil
}

// finish does what GenerateManifests does after helmTemplate: expand Lists, drop null lists, stamp tracking
// (util/argo/resource_tracking.go SetAppInstance) on everything but CRDs; then renders the stream as YAML.
func finish(t testing.TB, objs []*unstructured.Unstructured, tc testCase) []byte {
	t.Helper()
	appName := tc.instanceName()
	var out bytes.Buffer
	emit := func(u *unstructured.Unstructured) {
		gvk := u.GroupVersionKind()
		if !(gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition") {
			setTracking(u, tc.env, appName, tc.app.Spec.Destination.Namespace)
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	for _, o := range objs {
		if o == nil {
			continue
		}
		switch {
		case o.IsList():
			l, err := o.ToList()
			if err != nil {
				t.Fatal(err)
			}
			for i := range l.Items {
				emit(&l.Items[i])
			}
		case isNullList(o):
		default:
			emit(o)
		}
	}
	return out.Bytes()
}

func isNullList(o *unstructured.Unstructured) bool {
	if _, ok := o.Object["spec"]; ok {
		return false
	}
	if _, ok := o.Object["status"]; ok {
		return false
	}
	field, ok := o.Object["items"]
	if !ok {
		return false
	}
	return field == nil
}

func setTracking(u *unstructured.Unstructured, env renderEnv, appName, namespace string) {
	method := env.TrackingMethod
	if method == "" {
		method = "annotation"
	}
	key := env.AppLabelKey
	if key == "" {
		key = "app.kubernetes.io/instance"
	}
	if method == "annotation" || method == "annotation+label" {
		ns := u.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		gvk := u.GroupVersionKind()
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if env.InstallationID != "" {
			a["argocd.argoproj.io/installation-id"] = env.InstallationID
		} else {
			delete(a, "argocd.argoproj.io/installation-id")
		}
		a["argocd.argoproj.io/tracking-id"] = fmt.Sprintf("%s:%s/%s:%s/%s", appName, gvk.Group, gvk.Kind, ns, u.GetName())
		u.SetAnnotations(a)
	}
	if method == "label" || method == "annotation+label" {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		v := appName
		if method == "annotation+label" && len(v) > 63 {
			v = v[:63]
		}
		l[key] = v
		u.SetLabels(l)
	}
}

// compareStreams returns the differences between two YAML streams compared as keyed sets, and whether the
// object order differs.
func compareStreams(want, got []byte) (diffs []string, orderDiffers bool, err error) {
	diffs, sameOrder, err := fidelity.Compare(want, got)
	return diffs, len(diffs) == 0 && !sameOrder, err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
