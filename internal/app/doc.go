// Package app holds the GitHub App's use cases: what fleetwave does when a pull request changes, when someone
// asks for a re-run or types a slash command, and when a change is merged. It declares the ports it needs
// (ports.go) and is handed adapters for them. *App is the webhooks server's Handler (Handles, Handle with a
// webhooks.Event), as a go-githubapp EventHandler is its dispatcher's: one event type from the edge to the use
// cases, and one logger in the context (webhooks.LoggerFrom). It imports nothing else of the HTTP edge.
//
// # Ports
//
//   - GitHub (per installation, GitHubFactory): *github.Client, in four roles the helpers name — PullRequests
//     (the current head), CheckRuns (fleetwave/diff and fleetwave/plan), Conversation (sticky comment, replies,
//     reactions) and Permissions (repository permission, team membership).
//   - Clones: *gitcache.Cache — a local bare mirror per repository, fetched with the installation token.
//   - preview.Renderer: *render.Renderer — Argo CD's rendering, in process and confined.
//   - ClusterSource (optional): destination clusters and their labels (Argo CD, or a clusters file).
//   - TenantRenderers (optional, WithTenantRenderers): each installation's share of a render pool
//     (internal/render/isolate), each pull request's turn within it.
//   - preview.ArgoCD (optional, WithArgoCD): internal/edge/argocd/livediff over Argo CD — the affected apps of a pull
//     request compared with their live state (a merge compares none), plugin apps rendered, live generators, sync
//     windows. When Argo CD cannot be read, the preview is made without it and says so.
//   - Merges and Commands (optional): the rollout executor. Until it is wired, LoggingExecutor logs merges
//     and answers rollout commands with a note that nothing was done.
//
// # Pull requests (OnPullRequest)
//
// pull_request opened, synchronize, reopened and ready_for_review preview the change. Drafts are previewed too
// (WithSkipDrafts turns that off; ready_for_review then brings the first preview): a preview is read-only and
// most useful early.
//
//  0. A change (repository, pull request, head SHA, base SHA) is previewed once. The delivery claims it in the
//     Previews port (WithPreviews: the store, durable and shared by replicas; else the App's memory): another
//     delivery naming it — reopened, ready_for_review, synchronize redelivered, a redelivery under a new id —
//     finds it done or running and makes no GitHub call. Only check_run/check_suite rerequested and /plan
//     recompute a change done. A preview cancelled, stale or whose posting failed gives its claim back; a claim
//     left by a replica that died expires after 30 minutes. The comment posted for each change is kept there
//     too, with the change the pull request's comment shows: a delivery naming a change done that the comment
//     does not show (the head returned to an earlier commit: a force-push back, deliveries of several heads out
//     of order) reads the pull request once, and when its head is that change's, the comment is re-pointed at
//     the change's recorded comment — no preview, no check run (the head's are on the commit) —, so the comment
//     always shows the head that would merge, named in its title (#34).
//  1. The event's head is checked against the pull request's current head (GitHub does not deliver in order):
//     an event for an older head is dropped, so it cannot cancel the newer preview.
//  2. A preview of another head of the same pull request still running is cancelled (context cancellation
//     with cause "superseded"); its check runs are completed as cancelled, saying a newer commit carries the
//     results. A preview of the same head already running is left to finish (ready_for_review right after
//     opened, a re-run pressed twice).
//  3. fleetwave/diff and fleetwave/plan are created in_progress on the head at once — once per head: their ids
//     are kept in the Previews port, and a later preview of the same head (another base, a re-run, after a
//     restart) updates them instead of creating others.
//  4. Base and head are fetched into the clone cache from the BASE repository's clone URL:
//     refs/pull/N/head carries the head, forks included. Nothing from the repository is executed: rendering is
//     in-process and confined (internal/render), git runs with hooks off.
//  5. preview.Run renders, diffs and plans, with the repository known by the payload's html_url, clone_url,
//     ssh_url and full_name — never the clone's local path. When the release policy at head is invalid, the
//     preview runs again without a plan: the diff is still shown and the plan check fails on the policy.
//  6. Right before posting, under the pull request's lock, the head is checked again (the App's latest head,
//     and the API's). A stale preview posts nothing but "cancelled" on its own check runs. Otherwise the
//     sticky comment is upserted (report.MarkdownParts, split into numbered comments over GitHub's limit, the
//     summary first) and both check runs completed.
//
// Conclusions:
//
//	fleetwave/diff  failure  an app failed to render, or the repository has problems (annotation on the manifest
//	                         the app is declared in, at its source)
//	                neutral  no app's manifests change
//	                success  otherwise
//	fleetwave/plan  failure  the policy is invalid (annotations at its errors' lines) or the plan breaks it
//	                         (annotation on the app's manifest: at "automated:" for automated-sync, at its labels
//	                         for an uncovered app; at the wave in the policy for unsatisfiable limits), or the
//	                         change carries a class the policy lists under acknowledge and nobody allowed has
//	                         commented /acknowledge for the head (acknowledge.go)
//	                neutral  nothing to roll out
//	                success  otherwise
//	both            failure  no preview could be made (fetch failed, bad revision): the change is unverified
//	both            cancelled a newer head superseded the preview
//
// The check runs' external id is "fleetwave-pr:<number>", and the plan check's ends with ":plan:<digest>" of
// the plan shown, which the merge reads back.
//
// # Re-runs and /plan
//
// check_run rerequested (on fleetwave/diff or fleetwave/plan) and check_suite rerequested preview the pull
// request again when the check's head is still its head, updating the head's check runs. A /plan comment does
// the same once authorised.
//
// # Labels
//
// After each preview of the head, the pull request gets the policy's labels of the risk classes present and
// loses the policy's labels of those gone (labels.go); other labels are never touched.
//
// # GitHub's secondary rate limits
//
// Besides doing the work once per head (8 calls for a preview with a one-part comment, 5 of them
// content-creating), every content-creating request of an installation goes through its write budget
// (internal/edge/github/writebudget, wired in internal/edge/github): a token bucket shared by every handler, which waits when
// empty and is paused by a rate-limit answer for as long as GitHub asks.
//
// # Commands
//
// issue_comment created on a pull request: internal/command parses it; anything for fleetwave gets 👀; help,
// unknown commands and usage errors get a reply. The actor's permission and team memberships are read from
// GitHub and command.Authorize applies the release policy of the BASE branch (at the merge commit once merged) —
// never the pull request's own policy, which its author controls. /plan recomputes; /acknowledge records the
// acknowledgement of the head's risk classes and publishes fleetwave/plan again (acknowledge.go); the rollout commands go to
// the Commands port with the reply posted back. Check-run buttons (check_run requested_action) are mapped by
// command.FromAction and authorised the same way with the policy at the check run's commit.
//
// # Merge queues (OnMergeGroup)
//
// A branch protected by GitHub's merge queue requires the checks on each queued group: merge_group
// checks_requested (mergegroup.go). fleetwave/diff and fleetwave/plan are created in_progress on the group's
// head_sha at once and completed with the preview of the group's combined change, head_sha against base_sha
// (the group's parent commit): every pull request of the group together, the policy at head_sha and its limits
// applying to the combination. Conclusions are those of a pull request; the summary names the group (its
// gh-readonly-queue/ branch) and the change, and the text carries the report — there is no comment, a group
// being no single pull request. External ids are "fleetwave-queue:<branch>" (":plan:<digest>" on the plan).
//
// Older deliveries have no base_sha (nor head_commit, which fleetwave does not read): the base is then the
// merge base of head_sha and base_ref, fetched with the group — the branch commit the queue built on. Not the
// first parent of head_sha, which in a group of several pull requests leaves out all but the last, so that a
// combination breaking the policy could pass. The merge base may be wider than the group (the groups queued
// ahead when they have not landed yet): it errs on the side of checking more. No base found: both checks fail.
//
// A group is keyed by its head_ref, as a pull request by its number: a second checks_requested of the same head
// while one runs is left to it, another head cancels it. merge_group destroyed (merged, dequeued, invalidated)
// cancels a check still running (its check runs end cancelled, nothing else is posted) and makes a later
// checks_requested of that group a no-op. Nothing is rolled out from a queue: merge_group never reaches the
// Merges port, and pushes to gh-readonly-queue/ branches are not the default branch. The rollout starts when
// the group lands (below). "Re-run" on a group's check run names no pull request and is ignored: a group that
// failed leaves the queue, and queuing again brings a new group and a new checks_requested.
//
// # Merges
//
// pull_request closed with merged: the plan is recomputed at the merge commit against its first parent and
// handed to the Merges port with the policy at the merge commit (the one the preview planned with,
// preview.Result.Policy) and the digest of the plan last shown on the pull request. A push to the default branch is handed over alike (against
// the previous tip); a merge SHA already handed over is skipped in this process, and the executor is idempotent
// per merge SHA.
//
// The merge computes only what the rollout takes, the plan (preview.Input.PlanOnly): the apps are rendered and
// diffed, since which apps changed decides the plan, but nothing is compared with the live state in Argo CD and
// no comment is composed. Argo CD, when configured, still renders plugin apps, generates live ApplicationSets
// and gives the sync windows, so that the plan is the one the pull request showed (the executor compares the
// digests).
package app
