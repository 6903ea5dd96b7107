// Package argosync brings Argo CD applications to a revision, one app at a time or a fleet with bounded
// concurrency, and decides when an app is really done. It is `fleetwave rollout` (Fastly's orchestrator) and
// the per-app primitive of the rollout executor.
//
// # The algorithm, per app (Session.SyncApp)
//
//  1. Wait until the revision resolves: status.sync.revision (what targetRevision resolves to, written at each
//     reconcile) equals it. One GET ?refresh=normal asks Argo CD to re-resolve; then the stream is watched for
//     Options.ResolveTimeout. An app whose targetRevision never resolves to it (pinned elsewhere) is synced to
//     the revision explicitly — Argo CD then keeps showing it OutOfSync (as test/e2e sees a real one do) — or fails with
//     Options.RequireResolved.
//  2. If an operation is in flight (app.operation set, or operationState not completed), wait for it; never
//     start another. If it applied the revision and succeeded, the outcome is "waited".
//  3. If the app is Synced and Healthy at the revision, with a status computed after its last operation ended,
//     skip it.
//  4. Otherwise (automated sync on: fail, Argo CD would refuse a pinned revision and syncs by itself) call
//     Options.OnTrigger — the executor persists its intent there — and sync, then wait.
//
// # When is an app done
//
// Only when the bot has observed, in this order:
//   - an operation that applied the revision: status.operationState.syncResult.revision(s). The controller
//     writes it while the operation is still Running (controller/sync.go), so it proves nothing alone;
//   - phase Succeeded, with startedAt not before the bot's own request. The request's answer is the write that
//     set the operation and cleared status.operationState (util/argo/argo.go SetAppOperation), so any operation
//     state in a later resourceVersion belongs to this operation or a later one; objects not newer than the
//     answer are ignored. The start time is checked too, truncated to the second and widened by
//     Options.ClockSkew (default 2s) for a bot clock ahead of Argo CD's;
//   - a reconcile after the operation finished: status.reconciledAt later than finishedAt;
//   - then health Healthy (Degraded fails; Progressing, Missing, Suspended keep waiting until Options.Timeout).
//
// A status reported right after the request — Synced and Healthy, even at the target revision, with a fresh
// reconciledAt, but from before the request (Progressive Syncs' race, argo-cd #29410, #22852, #22558) — fails
// the second rule and is never taken for done (TestStaleStatusIsNotDone).
//
// # A sync that never started (Options.LostSyncRetries)
//
// An argocd-agent principal answers a sync request (it sets .operation on its copy of the Application) and can
// lose it before the agent's controller starts it: a status update from the agent, sent before the agent had the
// operation, overwrites .operation with nil (argocd-agent internal/manager/application/application.go
// UpdateStatus, argocd-agent #841; #809 lost it while the agent was disconnected). The app then shows no
// operation, the agent's last operation state and no new history entry — and a bot waiting for "an operation
// completed after the request" waits until its timeout. With LostSyncRetries > 0, after an accepted request the
// bot waits LostSyncGrace for an operation started since it (operation state or history entry, in an object
// written after the answer); then it reads the app once and re-requests the sync only when that object shows the
// request vanished (trigger.vanished: newer than the answer, nothing requested or running, nothing started since
// the request). An operation still only requested (an agent not connected) is waited for, re-read every grace
// period, never requested twice; a re-request Argo CD refuses because an operation appeared meanwhile is judged
// like any refused request (step 2). Each re-request runs Options.OnLostSync first and doubles the grace; after
// 1 + LostSyncRetries requests the app fails: "the sync of web to abc1234 was requested 4 times and never
// started: an argocd-agent principal may be dropping it (argocd-agent #841)" (TestLostSyncIsRequestedAgain,
// TestLostSyncFailsAfterRetries, TestSlowStartIsNotRequestedAgain).
//
// # Second-granularity timestamps
//
// startedAt, finishedAt and reconciledAt are RFC 3339 with seconds. Two consequences:
//   - "started after the request" compares startedAt with the request time truncated to the second: an
//     operation started in the same second as the request counts, which is safe because the resourceVersion
//     rule above already excludes anything older than the request;
//   - "reconciled after the operation" is ambiguous when reconciledAt and finishedAt are the same second —
//     the usual case, since the controller's post-operation refresh lands within milliseconds
//     (controller/appcontroller.go processRequestedAppOperation). A reconcile that started before the end of
//     the operation and was written in the same second would pass a >= test. So equality is not trusted: the
//     bot asks for GET ?refresh=normal, which Argo CD answers only once a reconcile requested after the call
//     has been written (server/application/application.go Get), and trusts that object and later versions
//     showing the same operation. A strictly later second needs no call.
//
// # Waiting and API calls
//
// A Session keeps one application stream (selector-filtered) for all its apps, which asks Argo CD to leave out
// what grows with an app's resources and is never waited on (status.resources, the last sync's per-resource
// results, managedFields, the summary: the stream's `fields` parameter, see streamOmits); each app waits on
// its own view of it, woken by events; an event's application is decoded only when the app is looked at and the event
// is still its newest version (argocd.Event). Argo CD does not replay events missed while the stream was down and drops
// events for slow subscribers, so an app re-reads itself once when the stream reconnects and when the stream
// has been silent about it for Options.StallTimeout (doubling up to 5m). Transient errors (5xx, 429,
// connection errors left after the client's own retries) never decide a verdict: an unanswered sync request
// (its answer lost: the connection closed after it was sent) is judged by what the app shows next — after
// Options.LostAnswerGrace, on an object read once Argo CD answers again (it is read until it does: an Argo CD
// that does not answer proves nothing, while the operation may run to its end) — and an operation started after
// the request that applies the revision is ours, noted in the result's message ("the sync request's answer was
// lost; its operation was found in Argo CD, not requested again"); so no app is synced twice
// (TestLostAnswerIsNotSentAgain). A typical synced app costs 2 requests (the sync, one refresh), a skipped one 0, besides the shared
// list and stream.
//
// # Measured (TestBenchmark1000Apps, virtual time; TestBenchmark1000AppsRealTime, real time over TCP)
//
// 1,000 apps, 2 s syncs, 5 ms API latency, concurrency 50, ideal ceil(1000/50) × 2 s = 40 s: 40.51 s
// (+1.3%) with 2.00 requests per app (list and stream included). The CPU cost of the whole run is about 1 s.
package argosync
