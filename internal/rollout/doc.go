// Package rollout carries a merge across the fleet: it executes a wave plan (internal/plan) against Argo CD,
// wave by wave and batch by batch, with gates between waves, and can be paused, resumed, aborted and rolled
// back as one unit. Its state lives in the store (internal/edge/store) and nowhere else: kill the process at any
// moment and the next start resumes with no app synced twice and none skipped.
//
// # Using it (what the app layer calls)
//
//	ex := rollout.New(store, argocdClient, reporter, rollout.WithOwner(podName), ...)
//	go ex.Run(ctx)                    // resumes unfinished rollouts, then takes new and orphaned ones
//	r, err := ex.Submit(ctx, rollout.Request{Repo, PRNumber, MergeSHA, BaseSHA, Plan, PRPlan, AutomatedSync, ...})
//	msg, err := ex.Pause(ctx, r.ID, login)          // also Resume, Abort, Approve(ctx, id, wave, login),
//	msg, err := ex.Rollback(ctx, r.ID, "all", login) // Rollback(ctx, id, wave|"all", login)
//	r, err := ex.Latest(ctx, repo, prNumber)          // the rollout a PR comment acts on
//	ex.Stop(ctx)                      // graceful drain on shutdown
//
// Submit is idempotent per (repo, merge SHA). The command methods authorise nobody (internal/command decides
// who may) and return the reply to post; errors.Is(err, ErrRefused) when the rollout's state does not allow the
// command (the error text is then the reply).
//
// The ports are interfaces declared here: Store (*store.Store; its roles RolloutRecords, WaveStore,
// StepJournal, LeaseKeeper and EventLog, store.go), ArgoCD (*argocd.Client), Reporter
// (checkrun.Publisher, which presents a rollout as GitHub check-runs; checkruntest.Reporter records their
// transitions for tests), Metrics (PrometheusMetrics by default).
//
// # Model
//
// A rollout is a row of the store with its waves and one app step per app. A driver — one goroutine per
// rollout, on the replica holding the rollout's lease — repeats a step (the shape of gitops-engine's
// pkg/sync/sync_context.go): read the rollout, its waves and steps; settle anything left in flight; do the next
// thing; write the result. Between steps it keeps only caches.
//
//	pending            waits while an older unfinished rollout touches some of the same apps (never two
//	                   rollouts on one app at once), or asks it to stop (Request.OnConflict supersede: the older
//	                   one finishes its syncs in flight and ends superseded); switches automated sync off first
//	running            the first wave not succeeded: pending → [awaiting-approval, when its approval comes
//	                   before it (the default): nothing of it has started] → running (its batches, in order;
//	                   the apps of a batch concurrently, bounded by WithConcurrency; apps an Argo CD sync window
//	                   refuses are held there until it opens) → gating (soak, metric
//	                   gates) → [awaiting-approval, when its approval comes after it] → succeeded; then the
//	                   next wave
//	awaiting-approval  a wave waits for Approve (a /approve comment or the check-run button): before it starts
//	                   (StartedAt zero) or after its gates, as its plan's Approval.When says (a plan stored
//	                   without it is after, the meaning it was made with)
//	paused             nothing starts; /resume continues (a failed wave retries its failed apps once)
//	rolling-back       the marked waves, last first, every app synced back to its previous revision
//	succeeded, failed, aborted, rolled-back, superseded   finished (the first three may still be rolled back)
//
// # One app: intent, side effect, outcome
//
// The per-app work is argosync's Session.SyncApp (Fastly's algorithm: wait for the revision to resolve, skip an
// app already Synced and Healthy there, wait for an operation in flight, else sync; "done" only on race-proof
// evidence — the operation applied the revision, started after the request, a reconcile after it finished,
// then Healthy). Around it, the store's protocol: the intent is recorded (fenced by the lease) in
// Options.OnTrigger, just before the sync request; the step is marked triggered when Argo CD accepts it; the
// outcome is recorded after. Automated sync is switched off the same way: an intent event, then one PATCH that
// removes spec.syncPolicy.automated and keeps the original in the AnnotationAutomatedSync annotation — so Argo CD
// itself remembers what to restore — and sets LabelAutomatedSyncOff, so the apps to restore are found with one
// selector-filtered list; it is restored only when the rollout succeeds (after a failure, an abort
// or a rollback Argo CD would sync the merge back by itself).
//
// # Resuming
//
// A step found in intent or triggered may or may not have reached Argo CD. Before anything else, the driver
// reads the app and judges (evidence.go): an operation applying the step's revision that started at or after
// the intent (Argo CD's startedAt has second precision: the intent time is truncated to the second and widened
// by the allowed clock skew), or a history entry of one, is the step's — it is waited for (polling) and judged
// like any sync; no operation at all, after a grace period for a request still on its way (WithIntentGrace),
// means the sync never started: the step goes back to pending and is synced, once. A triggered step whose
// operation cannot be found failed. Nothing is ever sent while reconciling. The same check guards a "skip" or
// "fail" verdict argosync reaches after the intent was recorded: a lost answer and a stale status (Argo CD's
// cache lag) look like "already done" while the operation runs. A sync whose answer was lost (the connection
// closed after it was sent) is not requested again while Argo CD does not answer: argosync reads the app until
// it does and follows the request's operation when it shows one (TestLostSyncAnswerIsNotSentAgain).
//
// A sync Argo CD accepted and then dropped unstarted (an argocd-agent principal, argocd-agent #841, #809) is
// requested again, at most WithLostSyncRetries times per instance, only once a fresh read shows no operation
// requested, running or started since the request (argosync's "A sync that never started"); each re-request is
// an event (sync-requested-again) and a log line, the intent of the first request stands, and after the last
// the app fails with one line (TestLostSyncsAreRequestedAgainOnce, TestEverySyncLostFailsTheApp).
//
// # Gates
//
// Soak: after the wave's last batch, its apps are watched through Argo CD's application stream (a list at the
// start, after each reconnect and at the end) until the soak ends; one app Degraded, Missing or deleted fails
// the wave. Metric gates: Prometheus instant queries (PrometheusMetrics, client_golang, the real HTTP API)
// every WithGateInterval until the longest `for` has elapsed; every evaluation must put every series within
// [min, max]; a query matching nothing, NaN, or three failed queries in a row fail the wave. Soak and metric
// windows are kept in the wave's GateState, so a restart continues them. Approval: the wave waits for Approve,
// before its first batch (plan.ApprovalBefore) or after its metric gates (plan.ApprovalAfter).
//
// Sync windows (windows.go): before each batch, the apps' AppProject syncWindows are read (WindowReader, which
// *argocd.Client implements) and evaluated as Argo CD does for a manual sync (argocd.EvaluateWindows: Argo CD's
// Matches and CanSync at the executor's clock). Apps a window refuses wait, the others sync; when only held apps
// are left the wave stays running, its gate state and check-run saying which window holds it until when (event
// window-held, then window-released), and the driver sleeps until the earliest opening (re-reading the windows
// at least every 5 minutes). A sync Argo CD refuses all the same ("cannot sync: blocked by sync window") is not a
// failure: the step goes back to pending, once no operation of it is found, and the wave is held for a minute.
//
// A wave fails when more apps fail than its failureThreshold tolerates (no app of it starts once that is
// crossed) or a gate fails; its onFailure then pauses the rollout or rolls every touched app back.
//
// # Commands
//
// Pause: nothing new starts (checked again at the last moment, in OnTrigger); the syncs in flight finish and
// are recorded. Abort: the same, and the rollout ends aborted; operations in flight are not terminated
// (DELETE .../operation would leave apps half-applied, worse than either revision). Rollback (rollback.go):
// syncs back to AppStep.PreviousRevision (the live revision recorded by the first intent) rather than Argo CD's
// rollback by history id, for the same evidence, because history ids fall off revisionHistoryLimit, and to keep
// later edits of the Application; it is refused when a newer rollout changed the same apps since.
//
// # Replicas, leases, drain
//
// Only the lease holder drives a rollout. The lease is renewed every third of its TTL; a driver that cannot
// renew it for two thirds of it, or finds it taken, stops at once (intents are also fenced by the store). A
// replica killed mid-rollout is replaced once its lease expires; one restarted under the same WithOwner name
// takes its rollouts back at once. Stop drains: nothing new starts, syncs in flight finish, gates stop waiting,
// leases are released.
//
// # Reporting
//
// Every transition asks the driver's publisher to publish (coalesced, off the rollout's path): it hands the
// Reporter a Snapshot — the rollout, its waves with their gates as planned and as they stand, its steps, the
// rollouts it waits for or that wait for it — and stores the ids of the check-runs the Reporter created. How a
// snapshot looks (the rollout check-run, one per wave and the rollback's, their tables and buttons) is
// internal/checkrun's business; the engine knows no check-run text.
//
// # Several Argo CD instances (instances.go, unreachable.go)
//
// Each app is synced, read and watched through the Argo CD of its plan entry's Instance: "" is the ArgoCD given to
// New, the others come from WithInstances (an app whose instance is neither fails its step naming it). One
// argosync session and stream per instance feeds the app cache; the soak watches each instance. Given instances
// (or WithInstanceBudgets), the executor bounds the syncs in flight per instance (default DefaultInstanceBudget,
// 10, Argo CD's --operation-processors), an app counted from its sync until its outcome, and each instance's
// apps of a batch start on their own. An instance that does not answer or refuses the token (401) holds only its
// apps: not started, they wait (the instance asked again with back-off); in flight, they are followed until it
// answers (a request that never reached it goes back to pending once its operation is confirmed absent); the
// running wave's gate state names the instance and why. A one-instance executor without these options behaves
// as before.
//
// # Measured (bench_test.go)
//
// 1,000 apps in 5 waves of one batch (200 apps), 2 s simulated syncs: in the simulator's virtual time
// (orchestration only) 10.06 s for an ideal critical path of 10 s (×1.006), 2.0 requests per app; in real time
// over TCP with the bot in its own process, on a 2-core machine shared with the simulator (and other jobs),
// 10.97–12.6 s (×1.10–1.26: the store's writes, three per app and serialised — the intents of a 200-app batch
// alone take 50–150 ms — and CPU contention), bot peak RSS 128–140 MiB of which 94 MiB is the test binary at
// rest, CPU about 2.3 s.
//
// 10,000 apps over 4 instances, budget 10 each, 200 ms syncs (bench_instances_test.go), real time, bot in its own
// process, 2 cores under a load of about 8.6: 65.9 s for an ideal of 50 s from the budgets (×1.32), at most 10
// operations in flight per instance and each budget 86–87 % full, 2.00 requests per app, bot CPU 15.4 s, peak RSS
// 307 MiB.
package rollout
