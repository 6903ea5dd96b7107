package app

import (
	"context"
	"log/slog"
	"net/url"
	"regexp"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
	"github.com/fleetwave/fleetwave/internal/report"
)

// prLabels is what the release policy's labels (`labels:` in .fleetwave.yaml) ask of a pull request at one head:
// want are the labels of the classes its apps carry, managed every label the policy names.
type prLabels struct{ want, managed []string }

// labelsOf are the labels a preview asks for; ok is false without a preview and its policy (a failed preview, an
// invalid policy) or when the policy names no label: the pull request's labels then stay as they are.
func labelsOf(out *outcome) (prLabels, bool) {
	if out.err != nil || out.rep == nil || out.policy == nil || len(out.policy.Labels) == 0 {
		return prLabels{}, false
	}
	var classes []risk.Class
	for _, c := range out.rep.ClassCounts() {
		classes = append(classes, c.Class)
	}
	want, managed := out.policy.PullRequestLabels(classes)
	return prLabels{want: want, managed: managed}, true
}

// The comment carries the labels its head asks for, on a hidden line right after its first line (report.Marker),
// so that a head the pull request returns to gets its labels back with its comment, without a preview. Only
// fleetwave writes there: the change's own content comes later in the comment.
var labelsLine = regexp.MustCompile(`^<!-- fleetwave:labels want=([^ ]*) managed=([^ ]*) -->$`)

func escapeLabels(ls []string) string {
	q := make([]string, len(ls))
	for i, l := range ls {
		q[i] = url.QueryEscape(l)
	}
	return strings.Join(q, ",")
}

func unescapeLabels(s string) []string {
	var out []string
	for _, q := range strings.Split(s, ",") {
		if l, err := url.QueryUnescape(q); err == nil && l != "" {
			out = append(out, l)
		}
	}
	return out
}

// withLabels records l in the comment, on the line after its first (the preview's marker); parts is not changed,
// and a comment that does not start with the marker is returned as it is.
func withLabels(parts []string, l prLabels) []string {
	if len(parts) == 0 || !strings.HasPrefix(parts[0], report.Marker+"\n") {
		return parts
	}
	out := append([]string(nil), parts...)
	rest := parts[0][len(report.Marker)+1:]
	if first, after, ok := strings.Cut(rest, "\n"); ok && labelsLine.MatchString(first) {
		rest = after
	}
	out[0] = report.Marker + "\n<!-- fleetwave:labels want=" + escapeLabels(l.want) + " managed=" + escapeLabels(l.managed) + " -->\n" + rest
	return out
}

// labelsIn reads the labels a comment records (ok false: none, as for a policy without labels).
func labelsIn(parts []string) (prLabels, bool) {
	if len(parts) == 0 || !strings.HasPrefix(parts[0], report.Marker+"\n") {
		return prLabels{}, false
	}
	first, _, _ := strings.Cut(parts[0][len(report.Marker)+1:], "\n")
	m := labelsLine.FindStringSubmatch(first)
	if m == nil {
		return prLabels{}, false
	}
	return prLabels{want: unescapeLabels(m[1]), managed: unescapeLabels(m[2])}, true
}

// applyLabels makes the pull request carry the labels l asks for: those wanted are added, the policy's others
// taken off, and a label the policy does not name is never touched. current are the pull request's labels as
// GitHub gave them (known false: unknown, then every managed label not wanted is removed, a label not there being
// no error). A failure is logged: labels inform, the checks decide.
func (a *App) applyLabels(ctx context.Context, client Labels, repo string, number int, l prLabels, current []string, known bool) {
	var add []string
	for _, x := range l.want {
		if !known || !containsFold(current, x) {
			add = append(add, x)
		}
	}
	log := logFrom(ctx)
	if err := client.AddLabels(ctx, repo, number, add); err != nil {
		log.Warn("labelling the pull request", slog.Any("labels", add), slog.Any("error", err))
	}
	for _, x := range l.managed {
		if containsFold(l.want, x) || (known && !containsFold(current, x)) {
			continue
		}
		if err := client.RemoveLabel(ctx, repo, number, x); err != nil {
			log.Warn("taking a label off the pull request", slog.String("label", x), slog.Any("error", err))
		}
	}
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
