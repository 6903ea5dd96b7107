package app

import "testing"

// A pull request's head is rendered through Argo CD only for a repository the operator named
// (WithArgoCDRenderHead), never for a fork (issue 38 item 6): previewInto sets preview.Input.NoRemoteHead from it.
func TestRemoteHeadOptIn(t *testing.T) {
	for _, tc := range []struct {
		opts []string
		ch   Change
		want bool
	}{
		{nil, Change{Repo: "org/gitops"}, false},
		{[]string{"org/gitops"}, Change{Repo: "org/gitops"}, true},
		{[]string{" Org/GitOps "}, Change{Repo: "org/gitops"}, true},
		{[]string{"org/gitops"}, Change{Repo: "org/gitops", Fork: true}, false},
		{[]string{"org/other"}, Change{Repo: "org/gitops"}, false},
		{[]string{"*"}, Change{Repo: "org/gitops"}, true},
		{[]string{"*"}, Change{Repo: "org/gitops", Fork: true}, false},
		{[]string{""}, Change{Repo: "org/gitops"}, false},
	} {
		a := &App{}
		WithArgoCDRenderHead(tc.opts...)(a)
		if got := a.remoteHead(tc.ch); got != tc.want {
			t.Errorf("repos %q, change %+v: remote head %v, want %v", tc.opts, tc.ch, got, tc.want)
		}
	}
}
