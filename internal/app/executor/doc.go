// Package executor adapts the rollout executor (internal/rollout) to the GitHub App's ports (internal/app): the
// serve command builds one Adapter over a *rollout.Executor and hands it to app.WithMerges and app.WithCommands,
// and one Reporter, the checkrun.Writer of the checkrun.Publisher handed to rollout.New, that writes the
// executor's check-runs through the GitHub adapter.
//
// # Merges (Adapter.OnMerge)
//
// A merge becomes a rollout.Request: the plan recomputed at the merge commit is the one executed, the digest of
// the plan last shown on the pull request is passed along (the rollout check-run says when they differ), the
// release policy's automated-sync mode decides whether the executor switches automated sync off during the
// rollout, and the repository's clone URL names the sources multi-source apps take the merge commit from.
// Submit is idempotent per repository and merge SHA, as the port requires.
//
// # Commands (Adapter.OnCommand)
//
// The app has already authorised the actor. The rollout a command acts on is named by the check-run whose
// button was clicked (its external id, checkrun.ParseExternalID) or, for a slash command, is the pull request's
// newest rollout (Executor.Latest). A command the rollout's state refuses (rollout.ErrRefused) is answered with
// the refusal — it is an answer, not a failure; other errors are returned for the app's generic failure reply.
//
// # Check-runs (Reporter) and installations
//
// OnMerge passes the installation the merge came through with the rollout.Request; the store keeps it with the
// rollout, and the Reporter writes the rollout's check-runs with that installation's token — after a restart
// or on another replica too, with nothing to learn from deliveries first. For a rollout recorded before the
// store kept installations, the Reporter asks GitHub which installation covers the repository (once per
// repository).
package executor
