package livediff_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gdiff "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/diff"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/objtest"
)

// fakeArgo answers as a real Argo CD does for one app "web": its Application (status.resources), its managed
// resources as the controller caches them (liveState the cluster's object, normalizedLiveState after Argo CD's
// own normalisation, Secrets masked) and GET /api/v1/settings as JSON.
type fakeArgo struct {
	app      v1alpha1.Application
	items    []v1alpha1.ResourceDiff
	settings string
}

func (f *fakeArgo) ListApplications(context.Context, argocd.ListQuery) (*v1alpha1.ApplicationList, error) {
	return &v1alpha1.ApplicationList{Items: []v1alpha1.Application{f.app}}, nil
}

func (f *fakeArgo) ManagedResources(context.Context, string) ([]v1alpha1.ResourceDiff, error) {
	return f.items, nil
}

func (f *fakeArgo) FindApplication(context.Context, string, string) (*v1alpha1.Application, error) {
	return nil, errors.New("not used")
}

func (f *fakeArgo) Manifests(context.Context, string, string) (*argocd.ManifestResponse, error) {
	return nil, errors.New("not used")
}

func (f *fakeArgo) SourcesManifests(context.Context, string, []string) (*argocd.ManifestResponse, error) {
	return nil, errors.New("not used")
}

func (f *fakeArgo) GenerateApplicationSet(context.Context, *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
	return nil, errors.New("not used")
}

func (f *fakeArgo) ProjectSyncWindows(context.Context, string) (v1alpha1.SyncWindows, error) {
	return nil, errors.New("not used")
}

func (f *fakeArgo) Settings(context.Context) (*argocd.Settings, error) {
	if f.settings == "" {
		return nil, errors.New("settings not served")
	}
	var s argocd.Settings
	err := json.Unmarshal([]byte(f.settings), &s)
	return &s, err
}

// defaultSettings is GET /api/v1/settings of an Argo CD with an empty argocd-cm (status ignored everywhere).
const defaultSettings = `{"appLabelKey":"app.kubernetes.io/instance","trackingMethod":"annotation",` +
	`"resourceOverrides":{"*/*":{"ignoreDifferences":"jsonPointers:\n- /status\n","ignoreResourceUpdates":""}}}`

// inCluster returns obj as the cluster holds it after Argo CD applied config (client-side apply): namespace,
// uid, resourceVersion, tracking annotation, last-applied configuration, and the managed fields given.
func inCluster(t *testing.T, obj, config *unstructured.Unstructured, managedFields ...string) *unstructured.Unstructured {
	t.Helper()
	o := obj.DeepCopy()
	o.SetNamespace("web")
	o.SetUID("6f1c1a52-7d0e-4c59-9b0e-2a4c3f1d9e01")
	o.SetResourceVersion("4711")
	anns := o.GetAnnotations()
	if anns == nil {
		anns = map[string]string{}
	}
	tracking := "web:" + o.GroupVersionKind().Group + "/" + o.GetKind() + ":web/" + o.GetName()
	anns["argocd.argoproj.io/tracking-id"] = tracking
	if config != nil {
		c := config.DeepCopy()
		c.SetNamespace("web")
		ca := c.GetAnnotations()
		if ca == nil {
			ca = map[string]string{}
		}
		ca["argocd.argoproj.io/tracking-id"] = tracking
		c.SetAnnotations(ca)
		b, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		anns["kubectl.kubernetes.io/last-applied-configuration"] = string(b)
	}
	o.SetAnnotations(anns)
	var mf []any
	for _, m := range managedFields {
		var e any
		if err := json.Unmarshal([]byte(m), &e); err != nil {
			t.Fatal(err)
		}
		mf = append(mf, e)
	}
	if len(mf) > 0 {
		o.Object["metadata"].(map[string]any)["managedFields"] = mf
	}
	return o
}

// item is one managed-resources item. normalized is Argo CD's normalizedLiveState (nil: liveState itself).
func item(t *testing.T, live, target, normalized *unstructured.Unstructured) v1alpha1.ResourceDiff {
	t.Helper()
	obj := live
	if obj == nil {
		obj = target
	}
	r := v1alpha1.ResourceDiff{Group: obj.GroupVersionKind().Group, Kind: obj.GetKind(), Namespace: "web", Name: obj.GetName()}
	js := func(o *unstructured.Unstructured) string {
		if o == nil {
			return "null"
		}
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if normalized == nil {
		normalized = live
	}
	if target != nil {
		target = withNamespace(target)
	}
	r.LiveState, r.TargetState, r.NormalizedLiveState, r.PredictedLiveState = js(live), js(target), js(normalized), js(target)
	r.Modified = r.LiveState != r.TargetState
	return r
}

func withNamespace(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	o.SetNamespace("web")
	return o
}

// compareOne runs the comparison of app "web" (renders base and head) against f.
func compareOne(t *testing.T, f *fakeArgo, app *v1alpha1.Application, base, head []*unstructured.Unstructured, opts livediff.Options) *report.Live {
	t.Helper()
	if f.app.Name == "" {
		f.app = *webApp()
	}
	lives, err := livediff.New(f, opts).CompareLive(context.Background(), []preview.LiveApp{{RepoURLs: thisRepo, App: app, Base: base, Head: head, BaseNamespace: "web", HeadNamespace: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	l := lives[0]
	if l == nil || l.Missing || l.Error != "" {
		t.Fatalf("live: %+v", l)
	}
	return l
}

func liveDiffText(l *report.Live) (keys []string, text string) {
	var b strings.Builder
	for _, r := range l.LiveDiff {
		keys = append(keys, r.Key.String())
		b.WriteString(r.Diff)
	}
	return keys, b.String()
}

// Managed fields as the API server records them: argocd-controller applied the Deployment (client-side), then
// hpa-like (an HPA's manager, here a named field manager) set spec.replicas, which moved the field to it.
const (
	controllerFields = `{"manager":"argocd-controller","operation":"Update","apiVersion":"apps/v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:argocd.argoproj.io/tracking-id":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}}`
	hpaFields        = `{"manager":"hpa-like","operation":"Update","apiVersion":"apps/v1","time":"2026-01-01T00:05:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}},"subresource":"scale"}`
	editFields       = `{"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1","time":"2026-01-01T00:05:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}`
)

// (a) spec.ignoreDifferences[].managedFieldsManagers: fields a trusted manager owns are not drift, and are not
// in what a sync would change (argo-cd util/argo/diff preDiffNormalize, util/argo/managedfields).
func TestManagedFieldsManagers(t *testing.T) {
	base := objtest.Obj(t, deployment(1, "web:1"))
	head := objtest.Obj(t, deployment(1, "web:2"))
	scaled := objtest.Obj(t, deployment(4, "web:1"))
	scaled.Object["status"] = map[string]any{"replicas": int64(4), "readyReplicas": int64(4)}
	trusted := []v1alpha1.ResourceIgnoreDifferences{{Group: "apps", Kind: "Deployment", ManagedFieldsManagers: []string{"hpa-like"}}}
	// What Argo CD serves as normalizedLiveState when the app trusts hpa-like: the owned field removed.
	normalizedWithout := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o = o.DeepCopy()
		unstructured.RemoveNestedField(o.Object, "spec", "replicas")
		return o
	}
	tests := []struct {
		name       string
		live       *unstructured.Unstructured
		normalized *unstructured.Unstructured
		ignore     []v1alpha1.ResourceIgnoreDifferences
		wantDrift  []string
		wantInDiff []string
		notInDiff  []string
	}{
		{
			name: "scaled by a trusted manager: no drift, replicas not in the live diff",
			live: inCluster(t, scaled, base, controllerFields, hpaFields), ignore: trusted,
			wantDrift: []string{}, wantInDiff: []string{"+      - image: web:2"}, notInDiff: []string{"replicas"},
		},
		{
			name:       "Argo CD's normalizedLiveState already lacks replicas: still no drift",
			live:       inCluster(t, scaled, base, controllerFields, hpaFields),
			normalized: normalizedWithout(inCluster(t, scaled, base, controllerFields, hpaFields)), ignore: trusted,
			wantDrift: []string{}, notInDiff: []string{"replicas"},
		},
		{
			name: "scaled by a manager the app does not trust: drift",
			live: inCluster(t, scaled, base, controllerFields, editFields), ignore: trusted,
			wantDrift: []string{"apps/Deployment web/web"}, wantInDiff: []string{"-  replicas: 4", "+  replicas: 1"},
		},
		{
			name:      "no managedFieldsManagers: drift",
			live:      inCluster(t, scaled, base, controllerFields, hpaFields),
			wantDrift: []string{"apps/Deployment web/web"}, wantInDiff: []string{"-  replicas: 4", "+  replicas: 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeArgo{settings: defaultSettings, items: []v1alpha1.ResourceDiff{item(t, tt.live, base, tt.normalized)}}
			l := compareOne(t, f, webApp(tt.ignore...), []*unstructured.Unstructured{base}, []*unstructured.Unstructured{head}, livediff.Options{})
			if !slices.Equal(l.Drift, tt.wantDrift) {
				t.Errorf("drift %q, want %q", l.Drift, tt.wantDrift)
			}
			keys, text := liveDiffText(l)
			if !slices.Equal(keys, []string{"apps/Deployment web/web"}) {
				t.Fatalf("live diff %q", keys)
			}
			for _, s := range tt.wantInDiff {
				if !strings.Contains(text, s) {
					t.Errorf("live diff lacks %q:\n%s", s, text)
				}
			}
			for _, s := range tt.notInDiff {
				if strings.Contains(text, s) {
					t.Errorf("live diff has %q:\n%s", s, text)
				}
			}
		})
	}
}

// (b) argocd-cm's resource.customizations.ignoreDifferences.<group_kind> and .all, from GET /api/v1/settings or
// from an argocd-cm file, and the status ignoring of resource.compareoptions.
func TestSystemIgnoreDifferences(t *testing.T) {
	cmBase := objtest.Obj(t, configMap("color: blue, extra: a"))
	cmEdited := objtest.Obj(t, configMap("color: blue, extra: edited"))
	other := objtest.Obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {color: red, extra: b}\n")
	withStatus := func(doc string, replicas int64) *unstructured.Unstructured {
		o := objtest.Obj(t, doc)
		o.Object["status"] = map[string]any{"replicas": replicas}
		return o
	}
	// Argo CD serves normalizedLiveState with the ignored field removed.
	withoutExtra := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o = o.DeepCopy()
		unstructured.RemoveNestedField(o.Object, "data", "extra")
		return o
	}
	ignoreExtra := `{"appLabelKey":"app.kubernetes.io/instance","trackingMethod":"annotation","resourceOverrides":{` +
		`"ConfigMap":{"ignoreDifferences":"jsonPointers:\n- /data/extra\n","ignoreResourceUpdates":""},` +
		`"*/*":{"ignoreDifferences":"jsonPointers:\n- /status\n","ignoreResourceUpdates":""}}}`
	dir := t.TempDir()
	writeCM := func(name, data string) string {
		p := filepath.Join(dir, name)
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata:\n" + data
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	allFile := writeCM("all.yaml", "  resource.customizations.ignoreDifferences.all: |\n    jqPathExpressions:\n    - .data.extra\n")
	kindFile := writeCM("kind.yaml", "  resource.customizations.ignoreDifferences.ConfigMap: |\n    jsonPointers:\n    - /data/extra\n")
	noStatusFile := writeCM("nostatus.yaml", "  resource.compareoptions: |\n    ignoreResourceStatusField: none\n")

	deployStatus := deployment(1, "web:1") + "status: {replicas: 1}\n"
	tests := []struct {
		name      string
		settings  string
		cmFile    string
		base      []*unstructured.Unstructured
		items     func() []v1alpha1.ResourceDiff
		wantDrift []string
		wantNote  string
	}{
		{
			name: "group_kind from the settings API: the edited key and the untouched ConfigMap are not drift", settings: ignoreExtra,
			base: []*unstructured.Unstructured{cmBase, other},
			items: func() []v1alpha1.ResourceDiff {
				e, o := inCluster(t, cmEdited, cmBase), inCluster(t, other, other)
				return []v1alpha1.ResourceDiff{item(t, e, cmBase, withoutExtra(e)), item(t, o, other, withoutExtra(o))}
			},
			wantDrift: []string{},
		},
		{
			name: "without the customization the edit is drift", settings: defaultSettings,
			base: []*unstructured.Unstructured{cmBase, other},
			items: func() []v1alpha1.ResourceDiff {
				return []v1alpha1.ResourceDiff{item(t, inCluster(t, cmEdited, cmBase), cmBase, nil), item(t, inCluster(t, other, other), other, nil)}
			},
			wantDrift: []string{"ConfigMap web/web"},
		},
		{
			name: ".all from an argocd-cm file", cmFile: allFile,
			base: []*unstructured.Unstructured{cmBase},
			items: func() []v1alpha1.ResourceDiff {
				e := inCluster(t, cmEdited, cmBase)
				return []v1alpha1.ResourceDiff{item(t, e, cmBase, withoutExtra(e))}
			},
			wantDrift: []string{},
		},
		{
			name: "<kind> from an argocd-cm file", cmFile: kindFile,
			base: []*unstructured.Unstructured{cmBase},
			items: func() []v1alpha1.ResourceDiff {
				return []v1alpha1.ResourceDiff{item(t, inCluster(t, cmEdited, cmBase), cmBase, nil)}
			},
			wantDrift: []string{},
		},
		{
			name: "status in a render is ignored by default", settings: defaultSettings,
			base: []*unstructured.Unstructured{objtest.Obj(t, deployStatus)},
			items: func() []v1alpha1.ResourceDiff {
				return []v1alpha1.ResourceDiff{item(t, inCluster(t, withStatus(deployment(1, "web:1"), 3), objtest.Obj(t, deployStatus)), objtest.Obj(t, deployStatus), nil)}
			},
			wantDrift: []string{},
		},
		{
			name: "ignoreResourceStatusField none: status is compared", cmFile: noStatusFile,
			base: []*unstructured.Unstructured{objtest.Obj(t, deployStatus)},
			items: func() []v1alpha1.ResourceDiff {
				return []v1alpha1.ResourceDiff{item(t, inCluster(t, withStatus(deployment(1, "web:1"), 3), objtest.Obj(t, deployStatus)), objtest.Obj(t, deployStatus), nil)}
			},
			wantDrift: []string{"apps/Deployment web/web"},
		},
		{
			name: "settings unreadable: Argo CD's defaults, said in a note",
			base: []*unstructured.Unstructured{cmBase},
			items: func() []v1alpha1.ResourceDiff {
				return []v1alpha1.ResourceDiff{item(t, inCluster(t, cmBase, cmBase), cmBase, nil)}
			},
			wantDrift: []string{}, wantNote: "settings could not be read",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := livediff.Options{}
			if tt.cmFile != "" {
				sys, err := livediff.LoadArgoCDCM(tt.cmFile)
				if err != nil {
					t.Fatal(err)
				}
				opts.System = &sys
			}
			f := &fakeArgo{settings: tt.settings, items: tt.items()}
			l := compareOne(t, f, webApp(), tt.base, tt.base, opts)
			if !slices.Equal(l.Drift, tt.wantDrift) {
				_, text := liveDiffText(l)
				t.Errorf("drift %q, want %q\n%s", l.Drift, tt.wantDrift, text)
			}
			if tt.wantNote != "" && !strings.Contains(strings.Join(l.Notes, "\n"), tt.wantNote) {
				t.Errorf("notes %q lack %q", l.Notes, tt.wantNote)
			}
		})
	}
}

func TestLoadArgoCDCM(t *testing.T) {
	p := filepath.Join(t.TempDir(), "argocd-cm.yaml")
	doc := `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd}
data:
  application.instanceLabelKey: argocd.argoproj.io/instance
  resource.customizations: |
    admissionregistration.k8s.io/MutatingWebhookConfiguration:
      ignoreDifferences: |
        jsonPointers:
        - /webhooks/0/clientConfig/caBundle
  resource.customizations.ignoreDifferences.apps_Deployment: |
    managedFieldsManagers: [kube-controller-manager]
  resource.customizations.ignoreDifferences.all: |
    jsonPointers: [/metadata/labels/team]
  resource.compareoptions: |
    ignoreAggregatedRoles: true
    ignoreResourceStatusField: crd
`
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	sys, err := livediff.LoadArgoCDCM(p)
	if err != nil {
		t.Fatal(err)
	}
	o := sys.Overrides
	if got := o["admissionregistration.k8s.io/MutatingWebhookConfiguration"].IgnoreDifferences.JSONPointers; !slices.Equal(got, []string{"/webhooks/0/clientConfig/caBundle"}) {
		t.Errorf("resource.customizations: %q", got)
	}
	if got := o["apps/Deployment"].IgnoreDifferences.ManagedFieldsManagers; !slices.Equal(got, []string{"kube-controller-manager"}) {
		t.Errorf("apps_Deployment: %q", got)
	}
	if got := o["*/*"].IgnoreDifferences.JSONPointers; !slices.Equal(got, []string{"/metadata/labels/team"}) {
		t.Errorf("all: %q (status must not be added with ignoreResourceStatusField: crd)", got)
	}
	if got := o["apiextensions.k8s.io/CustomResourceDefinition"].IgnoreDifferences.JSONPointers; !slices.Equal(got, []string{"/status"}) {
		t.Errorf("crd status: %q", got)
	}
	if !sys.IgnoreAggregatedRoles || sys.AppLabelKey != "argocd.argoproj.io/instance" {
		t.Errorf("system %+v", sys)
	}
	if def := livediff.DefaultSystem(); !slices.Equal(def.Overrides["*/*"].IgnoreDifferences.JSONPointers, []string{"/status"}) {
		t.Errorf("default: %+v", def.Overrides)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("data:\n  resource.customizations.bogus.ConfigMap: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := livediff.LoadArgoCDCM(bad); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad customization type: %v", err)
	}
}

func secretWith(kv ...string) *unstructured.Unstructured {
	data := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		data[kv[i]] = base64.StdEncoding.EncodeToString([]byte(kv[i+1]))
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "web"}, "data": data,
	}}
}

// (c) Secrets as Argo CD serves them: target and live masked together (gitops-engine HideSecretData), equal
// values the same run of "+", different ones runs of other lengths. A value changed live is drift of that key;
// no value ever reaches an output.
func TestMaskedSecretValues(t *testing.T) {
	const other = "other-value-q4"
	tests := []struct {
		name         string
		base, head   *unstructured.Unstructured
		live         *unstructured.Unstructured
		wantDrift    []string
		wantDriftKey []string
		wantHead     map[string]string // secret key -> change in the live diff
	}{
		{
			name: "value changed live", base: secretWith("token", baseSecret, "user", "app"), head: secretWith("token", baseSecret, "user", "app"),
			live:      secretWith("token", liveSecret, "user", "app"),
			wantDrift: []string{"Secret web/web"}, wantDriftKey: []string{"data.token"},
			wantHead: map[string]string{"data.token": "changed"},
		},
		{
			name: "untouched live, head changes a value", base: secretWith("token", baseSecret, "user", "app"), head: secretWith("token", headSecret, "user", "app"),
			live:      secretWith("token", baseSecret, "user", "app"),
			wantDrift: []string{}, wantHead: map[string]string{"data.token": "changed"},
		},
		{
			name: "untouched live, head unchanged", base: secretWith("token", baseSecret), head: secretWith("token", baseSecret),
			live: secretWith("token", baseSecret), wantDrift: []string{}, wantHead: map[string]string{},
		},
		{
			name: "key removed live", base: secretWith("token", baseSecret, "user", other), head: secretWith("token", baseSecret, "user", other),
			live:      secretWith("token", baseSecret),
			wantDrift: []string{"Secret web/web"}, wantDriftKey: []string{"data.user"},
			wantHead: map[string]string{"data.user": "added"},
		},
		{
			// kubectl apply (three-way) keeps a key it never applied: Argo CD calls it Synced.
			name: "key added live", base: secretWith("token", baseSecret), head: secretWith("token", baseSecret),
			live:      secretWith("token", baseSecret, "extra", other),
			wantDrift: []string{}, wantHead: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := inCluster(t, tt.live, tt.base)
			target, masked, err := gdiff.HideSecretData(withNamespace(tt.base), live, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeArgo{settings: defaultSettings, items: []v1alpha1.ResourceDiff{item(t, masked, target, nil)}}
			l := compareOne(t, f, webApp(), []*unstructured.Unstructured{tt.base}, []*unstructured.Unstructured{tt.head}, livediff.Options{})
			if !slices.Equal(l.Drift, tt.wantDrift) {
				t.Errorf("drift %q, want %q", l.Drift, tt.wantDrift)
			}
			if got := l.DriftSecretKeys["Secret web/web"]; !slices.Equal(got, tt.wantDriftKey) {
				t.Errorf("drift secret keys %q, want %q", got, tt.wantDriftKey)
			}
			got := map[string]string{}
			for _, r := range l.LiveDiff {
				for _, sk := range r.SecretKeys {
					got[sk.Key] = sk.Change
				}
			}
			if len(got) != len(tt.wantHead) {
				t.Errorf("live diff secret keys %v, want %v", got, tt.wantHead)
			}
			for k, v := range tt.wantHead {
				if got[k] != v {
					t.Errorf("live diff secret keys %v, want %v", got, tt.wantHead)
				}
			}
			out := outputs(t, l)
			for _, v := range []string{liveSecret, baseSecret, headSecret, other} {
				for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
					if strings.Contains(out, form) {
						t.Fatalf("output holds a Secret value (%q):\n%s", form, out)
					}
				}
			}
		})
	}
}

// (d) Live resources in no render: IgnoreExtraneous ones are reported as ignored, not drift; the ones Argo CD
// reports requiresPruning as extraneous (a sync with prune deletes them).
func TestExtraneous(t *testing.T) {
	cm := objtest.Obj(t, configMap("color: blue"))
	ignored := objtest.Obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: scratch\n  annotations: {argocd.argoproj.io/compare-options: 'IgnoreExtraneous'}\ndata: {a: b}\n")
	orphan := objtest.Obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leftover}\ndata: {a: b}\n")
	app := webApp()
	app.Status.Resources = []v1alpha1.ResourceStatus{
		{Kind: "ConfigMap", Namespace: "web", Name: "web", Version: "v1", Status: v1alpha1.SyncStatusCodeSynced},
		{Kind: "ConfigMap", Namespace: "web", Name: "scratch", Version: "v1", Status: v1alpha1.SyncStatusCodeOutOfSync, RequiresPruning: true},
		{Kind: "ConfigMap", Namespace: "web", Name: "leftover", Version: "v1", Status: v1alpha1.SyncStatusCodeOutOfSync, RequiresPruning: true},
	}
	f := &fakeArgo{app: *app, settings: defaultSettings, items: []v1alpha1.ResourceDiff{
		item(t, inCluster(t, cm, cm), cm, nil),
		item(t, inCluster(t, ignored, nil), nil, nil),
		item(t, inCluster(t, orphan, nil), nil, nil),
	}}
	l := compareOne(t, f, webApp(), []*unstructured.Unstructured{cm}, []*unstructured.Unstructured{cm}, livediff.Options{})
	if !slices.Equal(l.IgnoredExtraneous, []string{"ConfigMap web/scratch"}) {
		t.Errorf("ignored extraneous %q", l.IgnoredExtraneous)
	}
	if !slices.Equal(l.Drift, []string{"ConfigMap web/leftover"}) || !slices.Equal(l.Extraneous, []string{"ConfigMap web/leftover"}) {
		t.Errorf("drift %q, extraneous %q", l.Drift, l.Extraneous)
	}
	notes := strings.Join(l.Notes, "\n")
	for _, s := range []string{"IgnoreExtraneous): ConfigMap web/scratch", "requiresPruning): ConfigMap web/leftover"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
}
