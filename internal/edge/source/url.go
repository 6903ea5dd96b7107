package source

import (
	"strings"
)

// NormalizeURL reduces a git repository URL to a comparable form: lower case, no scheme, no user, the scp-like
// "host:path" form turned into "host/path", no trailing slash or ".git". So https://github.com/Org/Repo.git,
// git@github.com:org/repo and ssh://git@github.com/org/repo all become "github.com/org/repo".
//
// Argo CD compares repository URLs the same way, minus the scheme (util/git/git.go NormalizeGitURL/SameURL:
// lower case, scp form to ssh://, ".git" trimmed); the product notes ask for the scheme to be ignored too, so
// an Application that names its repository over SSH still matches an HTTPS clone.
func NormalizeURL(u string) string {
	s := strings.ToLower(strings.TrimSpace(u))
	if s == "" {
		return ""
	}
	hadScheme := false
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
		hadScheme = true
	}
	// user info
	if at := strings.LastIndex(s, "@"); at >= 0 {
		if slash := strings.Index(s, "/"); slash < 0 || at < slash {
			s = s[at+1:]
		}
	}
	if !hadScheme {
		// scp-like syntax: host:path (a colon before the first slash)
		if colon := strings.Index(s, ":"); colon >= 0 {
			if slash := strings.Index(s, "/"); slash < 0 || colon < slash {
				s = s[:colon] + "/" + strings.TrimPrefix(s[colon+1:], "/")
			}
		}
	}
	s = strings.TrimRight(s, "/")
	s = strings.TrimSuffix(s, ".git")
	return strings.TrimRight(s, "/")
}

// RepoMatcher tells whether a source's repoURL denotes one repository, known by any of several names: clone
// URLs in any scheme, or an "owner/name" full name (matched as the URL's last two path segments).
type RepoMatcher struct {
	urls      map[string]bool
	fullNames map[string]bool
}

// NewRepoMatcher returns a matcher for the given names; empty names are ignored.
func NewRepoMatcher(names ...string) *RepoMatcher {
	m := &RepoMatcher{urls: map[string]bool{}, fullNames: map[string]bool{}}
	for _, n := range names {
		m.Add(n)
	}
	return m
}

// Add adds a name of the repository.
func (m *RepoMatcher) Add(name string) {
	name = strings.TrimSpace(name)
	if name == "" {
		return
	}
	if isFullName(name) {
		m.fullNames[strings.ToLower(strings.TrimSuffix(name, ".git"))] = true
		return
	}
	if n := NormalizeURL(name); n != "" {
		m.urls[n] = true
	}
}

// Empty reports whether the matcher knows no name.
func (m *RepoMatcher) Empty() bool { return m == nil || len(m.urls)+len(m.fullNames) == 0 }

// Match reports whether repoURL denotes the repository.
func (m *RepoMatcher) Match(repoURL string) bool {
	if m == nil {
		return false
	}
	n := NormalizeURL(repoURL)
	if n == "" {
		return false
	}
	if m.urls[n] {
		return true
	}
	for fn := range m.fullNames {
		if n == fn || strings.HasSuffix(n, "/"+fn) {
			return true
		}
	}
	return false
}

// isFullName reports an "owner/name" repository name: no scheme, user, port or host, exactly one slash.
func isFullName(s string) bool {
	if strings.ContainsAny(s, ":@") || strings.Count(s, "/") != 1 {
		return false
	}
	owner, _, _ := strings.Cut(s, "/")
	return owner != "" && !strings.Contains(owner, ".")
}
