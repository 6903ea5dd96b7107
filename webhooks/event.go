package webhooks

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/go-github/v60/github"
)

// Event is one verified, parsed, first-time delivery handed to a Handler.
type Event struct {
	// Type is the X-GitHub-Event header: "pull_request", "issue_comment", "check_run", "push", ...
	Type string
	// Action is the payload's "action" ("opened", "created", "rerequested", ...); empty for events without one
	// (push).
	Action string
	// DeliveryID is the X-GitHub-Delivery GUID. A redelivery of the same event carries the same GUID.
	DeliveryID string
	// InstallationID is the App installation the event belongs to (payload "installation.id"); 0 when the
	// payload carries none (a webhook configured on a repository rather than through the App).
	InstallationID int64
	// Repo is the repository's "owner/name", empty when the event has none (installation events).
	Repo string
	// Number is the pull request or issue number the event is about, 0 when none. For check_run events it is
	// the first pull request the check run belongs to.
	Number int
	// Sender is the login of the user who triggered the event.
	Sender string
	// Payload is what github.ParseWebHook returned: *github.PullRequestEvent, *github.IssueCommentEvent,
	// *github.CheckRunEvent, *github.PushEvent, *github.InstallationEvent, ...
	Payload any
	// Raw is the JSON payload exactly as signed by GitHub.
	Raw []byte
	// ReceivedAt is when the delivery was acknowledged.
	ReceivedAt time.Time
}

// describe fills the fields that go-github's event types expose through common getters.
func (e *Event) describe() {
	if p, ok := e.Payload.(interface{ GetAction() string }); ok {
		e.Action = p.GetAction()
	}
	if p, ok := e.Payload.(interface{ GetInstallation() *github.Installation }); ok {
		e.InstallationID = p.GetInstallation().GetID()
	}
	if p, ok := e.Payload.(interface{ GetRepo() *github.Repository }); ok {
		e.Repo = p.GetRepo().GetFullName()
	}
	if p, ok := e.Payload.(interface{ GetSender() *github.User }); ok {
		e.Sender = p.GetSender().GetLogin()
	}
	switch p := e.Payload.(type) {
	case *github.PushEvent: // its repository is a *github.PushEventRepository
		e.Repo = p.GetRepo().GetFullName()
	case *github.PullRequestEvent:
		e.Number = p.GetNumber()
		if e.Number == 0 {
			e.Number = p.GetPullRequest().GetNumber()
		}
	case *github.IssueCommentEvent:
		e.Number = p.GetIssue().GetNumber()
	case *github.CheckRunEvent:
		if prs := p.GetCheckRun().PullRequests; len(prs) > 0 {
			e.Number = prs[0].GetNumber()
		}
	case *github.CheckSuiteEvent:
		if prs := p.GetCheckSuite().PullRequests; len(prs) > 0 {
			e.Number = prs[0].GetNumber()
		}
	}
}

// logAttrs are the attributes every log line about this delivery carries.
func (e *Event) logAttrs() []any {
	attrs := []any{slog.String("delivery", e.DeliveryID), slog.String("event", e.Type)}
	if e.Action != "" {
		attrs = append(attrs, slog.String("action", e.Action))
	}
	if e.InstallationID != 0 {
		attrs = append(attrs, slog.Int64("installation", e.InstallationID))
	}
	if e.Repo != "" {
		attrs = append(attrs, slog.String("repo", e.Repo))
	}
	if e.Number != 0 {
		attrs = append(attrs, slog.Int("pr", e.Number))
	}
	return attrs
}

type loggerKey struct{}

// ContextWithLogger returns ctx carrying l; LoggerFrom gets it back.
func ContextWithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom returns the logger a Handler should use: the server's logger with the delivery id, event, action,
// installation, repository and pull request already attached. It never returns nil (a discarding logger when
// ctx carries none).
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
