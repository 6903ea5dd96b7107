package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	gh "github.com/google/go-github/v60/github"
)

// A webhook's signature covers its body, not its X-GitHub-Delivery header: whoever holds one signed delivery
// (a proxy's log, a misdirected webhook) can send it again under new delivery ids, which the webhooks server's
// dedupe does not recognise. So the App also remembers what it acted on by the payload's own, signed identity:
// a command comment by its id, a check-run button click by the check-run, the button and the event's ids. And a
// command comment older than CommandMaxAge is not acted on: a replay of an old command is refused even once its
// identity has been forgotten.

// CommandMaxAge is how old (comment created_at against the App's clock) a command comment may be when its
// delivery is handled. Deliveries are queued behind previews for seconds, rarely minutes.
const CommandMaxAge = 10 * time.Minute

// CommandLog remembers the commands acted on. Seen records key and reports whether it was already recorded,
// atomically (of two concurrent calls with one key exactly one returns false). webhooks.DeliveryStore's shape: the
// serve command gives it the store's delivery log, so the answer holds across restarts and replicas.
type CommandLog interface {
	Seen(ctx context.Context, key string) (dup bool, err error)
}

// WithCommandLog sets where the commands acted on are remembered (default: in memory, 100,000 entries).
func WithCommandLog(l CommandLog) Option { return func(a *App) { a.commandLog = l } }

// commentKey is a command comment's identity in the CommandLog.
func commentKey(repo string, commentID int64) string {
	return "command:" + repo + "#comment:" + strconv.FormatInt(commentID, 10)
}

// actionKey is a check-run button click's identity in the CommandLog: the check-run, the button, who clicked,
// through which installation, and the check-run as the click saw it (its status, conclusion and output), so a
// click on the same button once the check-run has changed is a new click. A payload carries no id of the click
// itself.
func actionKey(e *gh.CheckRunEvent) string {
	cr := e.GetCheckRun()
	h := sha256.New()
	for _, s := range []string{cr.GetStatus(), cr.GetConclusion(), cr.GetCompletedAt().String(), cr.GetOutput().GetTitle(),
		cr.GetOutput().GetSummary(), cr.GetOutput().GetText()} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("command:%s#check_run:%d:%s:sender:%s/%d:installation:%d:%s", e.GetRepo().GetFullName(), cr.GetID(),
		e.GetRequestedAction().Identifier, e.GetSender().GetLogin(), e.GetSender().GetID(), e.GetInstallation().GetID(),
		hex.EncodeToString(h.Sum(nil))[:16])
}

// firstTime records key in the CommandLog; "" when this is the first time, else why the command is not acted on
// (one line for the logs). An error of the log refuses the command: acting twice is worse than not acting.
func (a *App) firstTime(ctx context.Context, key string) (string, error) {
	dup, err := a.commandLog.Seen(ctx, key)
	if err != nil {
		return "", fmt.Errorf("recording command %s: %w", key, err)
	}
	if dup {
		return "already acted on (a replayed or repeated delivery)", nil
	}
	return "", nil
}

// commentTooOld says why a command comment created at created is too old to act on ("" when it is not).
func (a *App) commentTooOld(created time.Time) string {
	if created.IsZero() {
		return "the comment has no creation time"
	}
	if age := a.now().Sub(created); age > CommandMaxAge {
		return fmt.Sprintf("the comment was created %s ago, more than %s: an old command is not acted on (post it again)",
			age.Round(time.Second), CommandMaxAge)
	}
	return ""
}
