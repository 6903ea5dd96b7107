package kustomize

import "testing"

// TestParseRemoteBase: the remote-base forms kustomize's repospec reads for https repositories, and the ones this
// renderer does not fetch.
func TestParseRemoteBase(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want remoteBase
		ok   bool
	}{
		{"https://git.example.com/org/repo//base?ref=v1", remoteBase{"https://git.example.com/org/repo", "base", "v1"}, true},
		{"git::https://git.example.com/org/repo//deep/base?ref=main", remoteBase{"https://git.example.com/org/repo", "deep/base", "main"}, true},
		{"https://git.example.com/org/repo.git/base?version=v2", remoteBase{"https://git.example.com/org/repo.git", "base", "v2"}, true},
		{"https://git.example.com/org/repo/base/x?ref=v1&version=v0", remoteBase{"https://git.example.com/org/repo", "base/x", "v1"}, true},
		{"https://dev.azure.com/org/project/_git/repo/base?ref=v1", remoteBase{"https://dev.azure.com/org/project/_git/repo", "base", "v1"}, true},
		{"github.com/org/repo/base?ref=v1", remoteBase{"https://github.com/org/repo", "base", "v1"}, true},
		{"https://github.com/org/repo", remoteBase{"https://github.com/org/repo", ".", ""}, true},
		{"https://git.example.com/org/repo//../escape?ref=v1", remoteBase{}, false},
		{"https://user:pw@git.example.com/org/repo//base", remoteBase{}, false},
		{"ssh://git@github.com/org/repo//base", remoteBase{}, false},
		{"git@github.com:org/repo//base", remoteBase{}, false},
		{"http://git.example.com/org/repo//base", remoteBase{}, false},
		{"file:///tmp/repo//base", remoteBase{}, false},
		{"https://git.example.com/repo", remoteBase{}, false},
	} {
		got, ok := parseRemoteBase(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseRemoteBase(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
