package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const (
	faApp       = "fa-other-team"
	faNamespace = "e2e-foreign-app"
	// A value only the other team's live object holds: it must never reach this repository's comparison.
	faLiveValue = "other-team-live-value-4d2b"
)

// TestForeignAppNotReadAgainstRealArgoCD: Argo CD holds another team's app, synced from another repository. A pull
// request in this repository adds an Application of the same namespace and name; fleetwave must neither compare
// it with that app's live state nor render it through Argo CD: "exists in Argo CD, not managed from this
// repository", no live object shown (issue 38 item 5). The same app compared from its own repository is read, so
// the refusal is the check's, not a failure.
func TestForeignAppNotReadAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}

	// The other team's repository, and this one (both file://).
	work := t.TempDir()
	repo := func(name string, files map[string]string) (bare, sha string) {
		checkout := filepath.Join(work, name+"-src")
		for n, body := range files {
			p := filepath.Join(checkout, "app", n)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gittest.Run(t, checkout, "init", "-q", "-b", "main")
		gittest.Run(t, checkout, "add", "-A")
		gittest.Run(t, checkout, "commit", "-q", "-m", name)
		sha = gittest.Run(t, checkout, "rev-parse", "HEAD")
		bare = filepath.Join(work, name+".git")
		gittest.Run(t, work, "clone", "-q", "--bare", checkout, bare)
		return "file://" + bare, sha
	}
	otherURL, otherSHA := repo("other-team", map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {secretish: " + faLiveValue + "}\n"})
	thisURL, _ := repo("this-repo", map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {secretish: from-the-pr}\n"})

	// The other team's app in Argo CD, synced.
	held := &v1alpha1.Application{}
	held.Name, held.Namespace = faApp, "argocd"
	held.Labels = map[string]string{"suite": "foreign-app"}
	held.Spec = v1alpha1.ApplicationSpec{
		Project:     "default",
		Source:      &v1alpha1.ApplicationSource{RepoURL: otherURL, Path: "app", TargetRevision: otherSHA},
		Destination: v1alpha1.ApplicationDestination{Server: v1alpha1.KubernetesInternalAPIServerAddr, Namespace: faNamespace},
		SyncPolicy:  &v1alpha1.SyncPolicy{SyncOptions: v1alpha1.SyncOptions{"CreateNamespace=true"}},
	}
	body, err := json.Marshal(held)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, e, http.MethodPost, "/api/v1/applications?upsert=true&validate=false", body, nil); err != nil {
		t.Fatalf("creating %s: %v", faApp, err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLEETWAVE_E2E_KEEP") == "1" {
			return
		}
		_ = call(context.Background(), e, http.MethodDelete, "/api/v1/applications/"+faApp+"?cascade=true&appNamespace=argocd", nil, nil)
	})
	syncAndWait(t, c, "argocd/"+faApp, otherSHA)

	// The pull request's Application: same namespace and name, its source this repository.
	pr := held.DeepCopy()
	pr.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: thisURL, Path: "app", TargetRevision: "HEAD"}
	head := []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": faNamespace}, "data": map[string]any{"secretish": "from-the-pr"}}}}
	lc := livediff.New(c, livediff.Options{Server: e.ArgoCDURL})

	lives, err := lc.CompareLive(ctx, []preview.LiveApp{{App: pr, Head: head, HeadNamespace: faNamespace, RepoURLs: []string{thisURL}}})
	if err != nil {
		t.Fatal(err)
	}
	l := lives[0]
	if l == nil || !l.NotManaged || l.Compared != 0 || len(l.LiveDiff) != 0 || len(l.Drift) != 0 {
		t.Fatalf("a pull request's app named like another repository's: %+v; want NotManaged and nothing compared", l)
	}
	if js, _ := json.Marshal(l); strings.Contains(string(js), faLiveValue) {
		t.Fatalf("the comparison shows the other team's live object:\n%s", js)
	}
	// Nor rendered through Argo CD at a revision the pull request picks.
	if _, err := lc.RenderRemote(ctx, pr, []string{"HEAD"}, []string{thisURL}); !errors.Is(err, preview.ErrNotManagedHere) {
		t.Fatalf("RenderRemote of another repository's app: %v, want %v", err, preview.ErrNotManagedHere)
	}

	// The same app compared from its own repository is read.
	own := held.DeepCopy()
	lives, err = lc.CompareLive(ctx, []preview.LiveApp{{App: own, Head: head, HeadNamespace: faNamespace, RepoURLs: []string{otherURL}}})
	if err != nil {
		t.Fatal(err)
	}
	if l := lives[0]; l == nil || l.NotManaged || l.Missing || l.Error != "" || l.Compared == 0 {
		t.Fatalf("the app compared from its own repository: %+v", l)
	}
	// Another project, the same repository: not this app either.
	otherProject := own.DeepCopy()
	otherProject.Spec.Project = "team-b"
	lives, err = lc.CompareLive(ctx, []preview.LiveApp{{App: otherProject, Head: head, HeadNamespace: faNamespace, RepoURLs: []string{otherURL}}})
	if err != nil {
		t.Fatal(err)
	}
	if l := lives[0]; l == nil || !l.NotManaged {
		t.Fatalf("the app named in another project: %+v", l)
	}
}
