package discover

import (
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

func TestRefSourcesLookup(t *testing.T) {
	app := &v1alpha1.Application{Spec: v1alpha1.ApplicationSpec{Sources: v1alpha1.ApplicationSources{
		{RepoURL: "https://charts.example.com", Chart: "api", Helm: &v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"$values/envs/prod.yaml"}}},
		{RepoURL: "https://github.com/acme/gitops.git", Ref: "values"},
	}}}
	refs := refSourcesOf(app)
	for _, tc := range []struct {
		p            string
		isRef, known bool
		repo, rel    string
	}{
		{p: "values.yaml"},
		{p: "envs/$values.yaml"},
		{p: "$values/envs/prod.yaml", isRef: true, known: true, repo: "https://github.com/acme/gitops.git", rel: "envs/prod.yaml"},
		{p: "$values/../outside/../envs/a.yaml", isRef: true, known: true, repo: "https://github.com/acme/gitops.git", rel: "envs/a.yaml"},
		{p: "$values//abs.yaml", isRef: true, known: true, repo: "https://github.com/acme/gitops.git", rel: "abs.yaml"},
		{p: "$other/x.yaml", isRef: true, rel: "x.yaml"},
		{p: "$ARGOCD_APP_NAME.yaml", isRef: true, rel: ""},
	} {
		ref, isRef := refs.lookup(tc.p)
		if isRef != tc.isRef || ref.known != tc.known || ref.src.RepoURL != tc.repo || ref.rel != tc.rel {
			t.Errorf("lookup(%q) = %v, known %v, repo %q, rel %q; want %v, %v, %q, %q",
				tc.p, isRef, ref.known, ref.src.RepoURL, ref.rel, tc.isRef, tc.known, tc.repo, tc.rel)
		}
	}
}
