package app

import (
	"context"
	"log/slog"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

// applyLabels makes the pull request carry the release policy's labels of the risk classes its head's preview
// found (`labels:` in .fleetwave.yaml): those of the classes present are added, the policy's labels of the
// classes gone are taken off, and a label the policy does not name is never touched. current are the pull
// request's labels as GitHub gave them (known false: unknown, then every label of a class gone is removed, a
// label not there being no error). Nothing changes without a preview and its policy (a failed preview, an
// invalid policy). A failure is logged: labels inform, the checks decide.
func (a *App) applyLabels(ctx context.Context, client Labels, ch Change, out *outcome, current []string, known bool) {
	if out.err != nil || out.rep == nil || out.policy == nil || len(out.policy.Labels) == 0 {
		return
	}
	var classes []risk.Class
	for _, c := range out.rep.ClassCounts() {
		classes = append(classes, c.Class)
	}
	want, managed := out.policy.PullRequestLabels(classes)
	has := func(l string) bool { return !known || containsFold(current, l) }
	var add []string
	for _, l := range want {
		if !known || !containsFold(current, l) {
			add = append(add, l)
		}
	}
	log := logFrom(ctx)
	if err := client.AddLabels(ctx, ch.Repo, ch.Number, add); err != nil {
		log.Warn("labelling the pull request", slog.Any("labels", add), slog.Any("error", err))
	}
	for _, l := range managed {
		if containsFold(want, l) || !has(l) {
			continue
		}
		if err := client.RemoveLabel(ctx, ch.Repo, ch.Number, l); err != nil {
			log.Warn("taking a label off the pull request", slog.String("label", l), slog.Any("error", err))
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
