// Package checkrun is the one home of the check-runs fleetwave presents on GitHub.
//
// A pull request's (pr.go): Diff is fleetwave/diff and Plan fleetwave/plan, made from the preview's report, plan
// and release policy, with their annotations at the manifest line that matters (lines.go); PreviewFailed is
// both when no preview could be made. internal/app decides when to post them and reads the head's files (Files).
//
// A rollout's (checkrun.go): fleetwave/rollout, one fleetwave/wave: <name> per wave and fleetwave/rollback once a
// rollback was asked for. It builds them from the executor's rollout.Snapshot (titles, summaries, the tables of
// apps, the buttons) and publishes the ones that changed through a Writer (internal/app/executor.Reporter writes
// them with the installation's token). A check-run's external id names the rollout and the wave or the rollback
// (ParseExternalID), and each button's identifier is the slash command it stands for (command.FromAction), so a
// click finds its rollout and wave. Publisher is the executor's rollout.Reporter port; it holds no state of its
// own (the executor keeps what was last sent per driver, rollout.Sent).
//
// GitHub's size limits are internal/edge/github/limits'; the adapter (internal/edge/github) truncates what exceeds them.
package checkrun
