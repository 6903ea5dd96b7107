// Package store is fleetwave's durable state: webhook deliveries already handled, and the rollouts the
// executor runs — the executor's source of truth, written before every side effect so a bot killed at any
// moment resumes with no app synced twice and none skipped.
//
// # Backends
//
// Open picks the backend from the DSN (FLEETWAVE_STORE):
//
//   - sqlite:///path/fleetwave.db or sqlite://./fleetwave.db — the embedded default, modernc.org/sqlite (pure
//     Go, no cgo). WAL journal, foreign keys on, a busy timeout; all writes go through one connection (so
//     writers queue in the process instead of failing with SQLITE_BUSY) and transactions begin IMMEDIATE (so
//     another process on the same file waits on the busy timeout). Reads use a separate read-only pool.
//     One replica.
//   - postgres://… — PostgreSQL through pgx, for several replicas sharing the work.
//
// Both run the same logical schema (tables, columns, constraints; a test compares them), created by
// versioned SQL files embedded from migrations/<dialect>/NNNN_name.sql and applied at Open in one
// transaction (serialised between replicas by an advisory lock on PostgreSQL), recorded in
// schema_migrations. Opening twice changes nothing; a database migrated by a newer fleetwave is refused.
// Dialect differences (placeholders, timestamps as INTEGER microseconds vs TIMESTAMPTZ, the lease clock) live
// in dialect.go; every query is written once.
//
// # Model
//
//	deliveries  X-GitHub-Delivery ids seen (MarkDelivery: exactly one caller gets firstTime), pruned by age
//	rollouts    one per (repo, merge SHA): PR, base SHA, the plan (JSON, kept byte for byte) and its digest,
//	            state, check-run ids, the App installation it was merged under, superseded-by,
//	            created/updated, version
//	waves       per rollout, in plan order: name, state, check-run id, approval (by, at), gate state (JSON),
//	            started/finished, version
//	app_steps   per rollout and app (Argo CD instance, namespace, name; instance "" is the one Argo CD of a
//	            fleet configured the old way, and every app of a store older than 0006): wave, batch, cluster, previous revision (the
//	            target of a rollback), target revision, state, op, attempts, intent/trigger times, the
//	            observed operation's startedAt/finishedAt, health, message, version
//	events      the audit log of a rollout: who did what, when, with what result
//	leases      which replica runs which rollout, until when
//	previews    per pull request change (repo, PR, head SHA, base SHA): running (claimed until a time) or done
//	            (ClaimPreview: of concurrent claims, across replicas, at most one wins; a done change only with
//	            force — a re-run or /plan —, a running one only once its claim expired), pruned by age
//	head_check_runs  the check-run ids fleetwave created on a commit, by name (created once per head, then
//	            updated, after a restart too)
//	preview_comments  the sticky comment posted per pull request change (parts), and which change the pull
//	            request's comment shows (SaveComment, ShowComment, ShownComment), pruned by age
//
// Every mutable row carries a version: updates are compare-and-set (the caller presents the version it read;
// ErrConflict when the row changed since, ErrInvalidTransition when its state does not allow the move).
// CreateRollout writes a rollout with all its waves and steps in one transaction and is idempotent per
// (repo, merge SHA), so the pull_request and push events of one merge create one rollout.
//
// # The intent/outcome protocol of an app step
//
//	pending          ─RecordIntent(sync)────▶ intent ─MarkTriggered─▶ triggered ─RecordOutcome─▶ synced | failed
//	pending          ─RecordOutcome─────────▶ skipped (already at the target) | out-of-plan (synced by someone else)
//	intent           ─RecordOutcome─────────▶ synced | failed | skipped | out-of-plan, or pending (never started)
//	intent | failed  ─RecordIntent──────────▶ intent (a retry, same op from intent: Attempts grows)
//	synced | failed | out-of-plan ─RecordIntent(rollback)▶ intent ─MarkTriggered─▶ triggered ─RecordOutcome─▶ rolled-back | failed
//
// The executor records the intent before calling Argo CD, marks the step triggered when Argo CD accepted the
// request, and records the outcome once it observed the result. Each move is one conditional UPDATE, so of
// two executors racing on a step only one moves it (intent → triggered happens once). After a crash, a step
// in intent or triggered (AppStep.State.InFlight) may or may not have been synced: the executor compares
// Argo CD's operation with the step (an operation that started after IntentAt with the step's OpRevision is
// ours; Argo CD's startedAt has second precision, so compare with IntentAt truncated to the second) and
// records synced/failed, or pending / a new intent when the sync never started. The first intent
// records the app's live revision as PreviousRevision unless one is known; later intents never overwrite it.
// An Intent with an Owner is fenced: it is written only while that owner holds an unexpired lease.
//
// # Leases and clocks
//
// AcquireLease, RenewLease and ReleaseLease are single atomic statements on the leases table; an expired
// lease can be taken over, and its epoch grows. ListClaimable lists the unfinished rollouts without a live
// lease — what a replica picks up when another was killed. Expiry is judged by one clock for everybody: the
// PostgreSQL server's now(), never a replica's. Elsewhere the store takes time from a Clock (WithClock;
// github.com/jonboulle/clockwork satisfies it), which tests replace with a fake one — on PostgreSQL, a
// WithClock clock also drives the leases, so the suite's expiry tests are deterministic on both backends.
//
// ListHistory reads the events of every rollout in the order they were appended, filtered (repository,
// rollout, since) and paged by event ID: the audit trail export (internal/audit). DeleteFinishedRollouts is its
// retention: finished rollouts older than a time, each deleted with its waves, steps, events and lease in one
// transaction; an unfinished one never.
//
// ActiveRolloutsTouching lists the unfinished rollouts with a step on given apps: the rollouts a new merge
// must wait for or supersede (UpdateRollout with state superseded and SupersededBy).
//
// # Consumers and tests
//
// Consumers declare the narrow interface they need (the webhook handler: MarkDelivery and UnmarkDelivery; the
// executor: rollouts, steps, leases) and *Store satisfies it. Package storetest is the conformance suite;
// store_test.go runs it on SQLite always and on PostgreSQL when FLEETWAVE_TEST_POSTGRES_DSN is set —
// testdata/start-postgres.sh installs (as root, from Debian), starts and prints the DSN of a throwaway server
// on 127.0.0.1, and stops it with "stop".
package store
