package helm4

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
	"github.com/fleetwave/fleetwave/internal/testkit/sharedtest"
)

// sortCases are chart outputs (template path to text) for which sortManifests must give exactly what helm 4's
// SortManifests gives: hooks and manifests, their order, the error text. Its split differs from Helm 3's (see
// helmtemplate.SplitManifests4): documents keep trailing white space, "---" takes spaces and tabs only.
var sortCases = map[string]map[string]string{
	"empty": {},
	"kinds and files in order": {
		"c/templates/z.yaml":            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
		"c/templates/a.yaml":            "kind: Service\nmetadata:\n  name: s\n---\nkind: Zebra\n---\nkind: ValidatingWebhookConfiguration\n---\nkind: MutatingWebhookConfiguration\n---\nkind: Apple\n---\nkind: Zebra\nmetadata:\n  name: second\n",
		"c/templates/_helpers.tpl":      "kind: Secret\n",
		"c/templates/blank.yaml":        " \n\t\n",
		"c/charts/sub/templates/b.yaml": "---\n# only a comment\n---\nkind: ConfigMap\n\n---\n\n",
		"c/templates/m.yaml":            "---\n\n---\n---kind: Role\n",
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
kind: ServiceAccount
metadata:
  annotations:
    helm.sh/hook: pre-delete
    helm.sh/hook-delete-policy: ""
`,
		"c/templates/more.yaml": "kind: Namespace\nmetadata:\n  name: n\n  annotations:\n    helm.sh/hook: post-install\n",
	},
	"slow path heads": {
		"c/templates/odd.yaml": "Kind: Pod\nmetadata:\n  name: 12\n---\nkind: ConfigMap\nmetadata:\n  annotations:\n    helm.sh/hook: test\n    helm.sh/hook-weight: 3\n---\nkind: &k Secret\nx: *k\n",
	},
	"crlf and tabs": {
		"c/templates/w.yaml": "kind: Service\r\nmetadata:\r\n  name: a\r\n---\r\nkind: Pod\r\n\t\n---\t\nkind: Role\n",
	},
	"parse error after some": {
		"c/templates/a.yaml": "kind: Service\n---\nkind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: pre-install\n",
		"c/templates/b.yaml": "kind: Pod\n---\nkind: [unterminated\n",
	},
}

func TestSortManifests(t *testing.T) {
	for name, files := range sortCases {
		t.Run(name, func(t *testing.T) {
			hooks, manifests, err := sortManifests(files)
			wantHooks, wantManifests, wantErr := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("error %v, helm 4's %v", err, wantErr)
			}
			if !reflect.DeepEqual(hooks, wantHooks) {
				t.Errorf("hooks %+v, helm 4's %+v", hooks, wantHooks)
			}
			if !reflect.DeepEqual(manifests, wantManifests) {
				t.Errorf("manifests %+v, helm 4's %+v", manifests, wantManifests)
			}
			if name != "empty" && len(hooks) == 0 && len(manifests) == 0 && err == nil {
				t.Error("nothing sorted: the case tests nothing")
			}
		})
	}
}

// TestSortManifestsLog holds the record logged for a skipped hook to helm 4's.
func TestSortManifestsLog(t *testing.T) {
	var got, want bytes.Buffer
	defer slog.SetDefault(slog.Default())
	files := sortCases["hooks"]
	slog.SetDefault(slog.New(slog.NewTextHandler(&got, &slog.HandlerOptions{ReplaceAttr: dropTime})))
	_, _, _ = sortManifests(files)
	slog.SetDefault(slog.New(slog.NewTextHandler(&want, &slog.HandlerOptions{ReplaceAttr: dropTime})))
	_, _, _ = releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if got.String() != want.String() || got.Len() == 0 {
		t.Errorf("logged %q, helm 4 %q", got.String(), want.String())
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// TestSortManifestsKubePrometheusStack holds the port to helm 4's SortManifests on a large chart's output: the
// engine's for the fidelity corpus's kube-prometheus-stack case (skipped without the corpus).
func TestSortManifestsKubePrometheusStack(t *testing.T) {
	if testing.Short() {
		t.Skip("renders a large chart")
	}
	dir := filepath.Join(sharedtest.Fidelity(t), "cases", "helm-kube-prometheus-stack", "src", "kube-prometheus-stack")
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{"windowsMonitoring": map[string]any{"enabled": true}}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		t.Fatal(err)
	}
	options := common.ReleaseOptions{Name: "kps", Namespace: "monitoring", Revision: 1, IsInstall: true}
	top, err := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, options, common.DefaultCapabilities, true)
	if err != nil {
		t.Fatal(err)
	}
	var eng engine.Engine
	files, err := eng.RenderWithContext(context.Background(), ch, top)
	if err != nil {
		t.Fatal(err)
	}
	helmtemplate.DropNotes(files)
	hooks, manifests, err := sortManifests(files)
	wantHooks, wantManifests, wantErr := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil || wantErr != nil {
		t.Fatalf("error %v, helm 4's %v", err, wantErr)
	}
	if !reflect.DeepEqual(hooks, wantHooks) || !reflect.DeepEqual(manifests, wantManifests) {
		t.Error("sorted differently from helm 4")
	}
	if len(manifests) < 100 || len(hooks) == 0 {
		t.Errorf("%d manifests and %d hooks: not the large chart's output", len(manifests), len(hooks))
	}
}
