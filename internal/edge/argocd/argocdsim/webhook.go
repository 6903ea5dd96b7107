package argocdsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// This file is Argo CD's Git webhook, POST /api/webhook, for GitHub push events (util/webhook/webhook.go
// HandleEvent of v3.6.1): the apps with a source whose repoURL matches the payload's repository.html_url and
// whose targetRevision follows the pushed ref are refreshed; the controller then reconciles them at once, and an
// app with automated sync starts syncing the new revision in that same reconciliation (reconcileLocked, as
// controller/appcontroller.go autoSync). Unlike Argo CD, which asks the repository for the new commit
// (ls-remote), the simulator takes it from the payload: the ref is moved to its "after" commit (SetRef).

// pushPayload is the part of GitHub's push event util/webhook reads (affectedRevisionInfo, github.PushPayload).
type pushPayload struct {
	Ref        string `json:"ref"`
	Before     string `json:"before"`
	After      string `json:"after"`
	Repository struct {
		HTMLURL       string `json:"html_url"`
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
}

// handleWebhook answers 200 once the matching apps are refreshed (Argo CD answers 200 when the payload is
// queued, then refreshes them within milliseconds); 400 for anything but a GitHub push event.
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-GitHub-Event") != "push" {
		http.Error(w, "Unknown webhook event", http.StatusBadRequest)
		return
	}
	var p pushPayload
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Repository.HTMLURL == "" {
		http.Error(w, "Webhook processing failed", http.StatusBadRequest)
		return
	}
	re, err := webURLRegex(p.Repository.HTMLURL)
	if err != nil {
		http.Error(w, "Webhook processing failed", http.StatusBadRequest)
		return
	}
	revision := parseRevision(p.Ref)
	touchedHead := p.Repository.DefaultBranch == revision
	s.mu.Lock()
	defer s.mu.Unlock()
	if after := parseRevision(p.After); after != "" && strings.Trim(after, "0") != "" {
		s.refs[revision] = after
		if touchedHead {
			s.refs["HEAD"] = after
		}
	}
	s.totals.Webhooks++
	for _, name := range s.sortedNamesLocked() {
		st := s.apps[name]
		for _, src := range st.app.Spec.GetSources() {
			if !sourceRevisionHasChanged(src, revision, touchedHead) || !re.MatchString(src.RepoURL) {
				continue
			}
			// argo.RefreshApp: the refresh annotation; the controller reconciles (requestReconcileLocked).
			if st.app.Annotations == nil {
				st.app.Annotations = map[string]string{}
			}
			st.app.Annotations[v1alpha1.AnnotationKeyRefresh] = string(v1alpha1.RefreshTypeNormal)
			s.commitLocked(st)
			s.requestReconcileLocked(st)
			s.totals.WebhookRefreshes++
			s.countsLocked(name).WebhookRefreshes++
			break
		}
	}
	w.WriteHeader(http.StatusOK)
}

// parseRevision is util/webhook ParseRevision: refs/heads/main → main, refs/tags/v1 → v1.
func parseRevision(ref string) string {
	refParts := strings.SplitN(ref, "/", 3)
	return refParts[len(refParts)-1]
}

// sourceRevisionHasChanged is util/webhook's: an app tracking HEAD (or nothing) follows the default branch; else
// its targetRevision must name the pushed ref (semver constraints, which util/webhook also accepts, are not
// simulated).
func sourceRevisionHasChanged(src v1alpha1.ApplicationSource, revision string, touchedHead bool) bool {
	target := parseRevision(src.TargetRevision)
	if target == "HEAD" || target == "" {
		return touchedHead
	}
	return revision == target
}

// webURLRegex is util/webhook GetWebURLRegex: it matches the repoURLs that name the repository of webURL (the
// payload's html_url), over https, ssh or scp-like syntax, with or without a user and ".git".
func webURLRegex(webURL string) (*regexp.Regexp, error) {
	u, err := url.Parse(webURL)
	if err != nil {
		return nil, fmt.Errorf("failed to parse URL '%s'", webURL)
	}
	const usernameRegex = `[\w\.][\w\.-]{0,30}[\w\.\$-]?`
	host := regexp.QuoteMeta(u.Hostname())
	path := regexp.QuoteMeta(strings.TrimPrefix(u.EscapedPath(), "/"))
	return regexp.Compile(fmt.Sprintf(`(?i)^((https?|ssh)://)?(%[1]s@)?((alt)?ssh\.)?%[2]s(:\d+)?[:/]%[3]s(\.git)?$`, usernameRegex, host, path))
}
