package app

import (
	"testing"

	"github.com/fleetwave/fleetwave/internal/report"
)

func TestLinkPointsAtPolicyAndArgoCD(t *testing.T) {
	for _, tc := range []struct {
		name, argo string
		ch         Change
		policyURL  string
		appURLs    map[string]string
	}{
		{"html_url and Argo CD", "https://argocd.example.com/",
			Change{Repo: "acme/gitops", Head: "abc123", RepoURLs: []string{"https://github.example.com/acme/gitops", "https://github.example.com/acme/gitops.git", "acme/gitops"}},
			"https://github.example.com/acme/gitops/blob/abc123/.fleetwave.yaml",
			map[string]string{"argocd/web": "https://argocd.example.com/applications/argocd/web"}},
		{"no Argo CD, no html_url", "",
			Change{Repo: "acme/gitops", Head: "abc123"},
			"https://github.com/acme/gitops/blob/abc123/.fleetwave.yaml", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &App{}
			WithArgoCDURL(tc.argo)(a)
			rep := &report.Report{Footer: &report.Footer{PolicyFile: ".fleetwave.yaml"}, Apps: []report.App{
				{Name: "web", Namespace: "argocd", Status: report.StatusChanged},
				{Name: "same", Namespace: "argocd", Status: report.StatusUnchanged},
			}}
			a.link(rep, tc.ch)
			if rep.Footer.PolicyURL != tc.policyURL {
				t.Errorf("policy URL %q, want %q", rep.Footer.PolicyURL, tc.policyURL)
			}
			if len(rep.Footer.AppURLs) != len(tc.appURLs) {
				t.Fatalf("app URLs %v, want %v", rep.Footer.AppURLs, tc.appURLs)
			}
			for k, v := range tc.appURLs {
				if rep.Footer.AppURLs[k] != v {
					t.Errorf("app URL of %s = %q, want %q", k, rep.Footer.AppURLs[k], v)
				}
			}
		})
	}
}
