package preview

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/preview/previewtest"
	"github.com/fleetwave/fleetwave/internal/report"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

func TestRemovalSaysWhatArgoCDDoes(t *testing.T) {
	app := func(y string) *v1alpha1.Application {
		var a v1alpha1.Application
		if err := yaml.Unmarshal([]byte(y), &a); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	policy := func(p v1alpha1.ApplicationsSyncPolicy) *v1alpha1.ApplicationSetSyncPolicy {
		return &v1alpha1.ApplicationSetSyncPolicy{ApplicationsSync: &p}
	}
	withFinalizer := app(`{metadata: {name: web, namespace: argocd, finalizers: [resources-finalizer.argocd.argoproj.io]}}`)
	without := app(`{metadata: {name: web, namespace: argocd}}`)
	autoPrune := app(`{metadata: {name: root, namespace: argocd}, spec: {syncPolicy: {automated: {prune: true}}}}`)
	manual := app(`{metadata: {name: root, namespace: argocd}, spec: {syncPolicy: {automated: {prune: false}}}}`)
	for _, tc := range []struct {
		name   string
		a      discover.App
		parent *v1alpha1.Application
		effect string
		detail string
	}{
		{"appset deletes, finalizer deletes resources", discover.App{App: withFinalizer, AppSet: "argocd/apps"}, nil, report.RemovalDelete, "ApplicationSet argocd/apps no longer generates it"},
		{"appset deletes, no finalizer orphans", discover.App{App: without, AppSet: "argocd/apps"}, nil, report.RemovalOrphan, "orphaned"},
		{"appset create-update keeps", discover.App{App: withFinalizer, AppSet: "argocd/apps", AppSetSyncPolicy: policy(v1alpha1.ApplicationsSyncPolicyCreateUpdate)}, nil, report.RemovalKept, "create-update"},
		{"appset create-delete deletes", discover.App{App: withFinalizer, AppSet: "argocd/apps", AppSetSyncPolicy: policy(v1alpha1.ApplicationsSyncPolicyCreateDelete)}, nil, report.RemovalDelete, "deletes the Application"},
		{"parent with automated prune", discover.App{App: withFinalizer, Parent: "argocd/root"}, autoPrune, report.RemovalDelete, "syncs automatically with prune"},
		{"parent without prune waits", discover.App{App: without, Parent: "argocd/root"}, manual, report.RemovalPending, "next sync with prune"},
		{"applied by hand is kept", discover.App{App: withFinalizer}, nil, report.RemovalKept, "Argo CD keeps the Application"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(key string) (*discover.App, bool) {
				if tc.parent == nil || key != "argocd/root" {
					return nil, false
				}
				return &discover.App{Key: key, App: tc.parent}, true
			}
			r := removal(&tc.a, lookup)
			if r.Effect != tc.effect || !strings.Contains(r.Detail, tc.detail) {
				t.Fatalf("removal = %+v, want effect %s and a detail with %q", r, tc.effect, tc.detail)
			}
		})
	}
}

// TestRemovedAppIsCalledOut: deleting an Application's file is no silent "removed (+0 ~0 -1)" with "No app to
// roll out": the comment headlines the deletion with what Argo CD will do, and the plan lists it.
func TestRemovedAppIsCalledOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	write := previewtest.Writer(t, dir)
	const repo = "https://github.com/example/removal.git"
	write("apps/web.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd, finalizers: [resources-finalizer.argocd.argoproj.io]}
spec:
  project: default
  source: {repoURL: `+repo+`, path: web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: web}
`)
	write("web/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: '1'}\n")
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	gittest.Run(t, dir, "remote", "add", "origin", repo)
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "web")
	gittest.Run(t, dir, "checkout", "-q", "-b", "change")
	gittest.Run(t, dir, "rm", "-q", "apps/web.yaml")
	gittest.Run(t, dir, "commit", "-q", "-m", "remove web")

	rep, err := reportOf(Run(context.Background(), theRenderer(), Input{RepoDir: dir, Base: "main", Head: "change", Plan: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Apps) != 1 || rep.Apps[0].Status != report.StatusRemoved || rep.Apps[0].Removal == nil || rep.Apps[0].Removal.Effect != report.RemovalKept {
		t.Fatalf("apps = %+v", rep.Apps)
	}
	md := rep.Markdown()
	for _, want := range []string{
		"🗑️ **Deletions**: Application `argocd/web` is removed: no Application or ApplicationSet of this repository manages it",
		"🗑️ **1 app removed** by this change, outside the waves",
		"No app to sync: the change only removes apps.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comment lacks %q:\n%s", want, md)
		}
	}
}
