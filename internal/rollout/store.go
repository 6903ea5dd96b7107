package rollout

import (
	"context"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// The store's roles, named for what the executor's parts do with them; *store.Store plays them all.

// RolloutRecords reads and writes rollout rows.
type RolloutRecords interface {
	CreateRollout(ctx context.Context, n store.NewRollout) (store.Rollout, bool, error)
	GetRollout(ctx context.Context, id int64) (store.Rollout, error)
	ListRollouts(ctx context.Context, f store.RolloutFilter) ([]store.Rollout, error)
	UpdateRollout(ctx context.Context, r store.Rollout) (store.Rollout, error)
	// ActiveRolloutsTouching lists the unfinished rollouts with a step on one of apps (in repo; "" for any).
	ActiveRolloutsTouching(ctx context.Context, repo string, apps []store.AppKey) ([]store.Rollout, error)
}

// WaveStore reads and writes a rollout's waves.
type WaveStore interface {
	ListWaves(ctx context.Context, rolloutID int64) ([]store.Wave, error)
	UpdateWave(ctx context.Context, w store.Wave) (store.Wave, error)
	UpdateRolloutWaves(ctx context.Context, r store.Rollout, ws []store.Wave) (store.Rollout, []store.Wave, error)
	ApproveWave(ctx context.Context, rolloutID int64, index int, by string) (store.Wave, bool, error)
}

// StepJournal is the journal of app operations: the intent is recorded before a sync is requested, then that
// it was triggered, then its outcome, so a restarted executor knows what may be in flight.
type StepJournal interface {
	ListSteps(ctx context.Context, rolloutID int64, f store.StepFilter) ([]store.AppStep, error)
	RecordIntent(ctx context.Context, in store.Intent) (store.AppStep, error)
	MarkTriggered(ctx context.Context, stepID, version int64) (store.AppStep, error)
	RecordOutcome(ctx context.Context, o store.Outcome) (store.AppStep, error)
}

// LeaseKeeper decides which replica drives which rollout.
type LeaseKeeper interface {
	ListClaimable(ctx context.Context) ([]store.Rollout, error)
	ListUnreleased(ctx context.Context, owner string) ([]store.Rollout, error)
	AcquireLease(ctx context.Context, rolloutID int64, owner string, ttl time.Duration) (bool, error)
	RenewLease(ctx context.Context, rolloutID int64, owner string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, rolloutID int64, owner string) error
}

// EventLog is the audit trail of a rollout.
type EventLog interface {
	AppendEvent(ctx context.Context, e store.Event) (store.Event, error)
}

// HoldKeeper is the record of automated sync holds of changes not merged yet (internal/autosync): a rollout
// takes those of its merge over when it starts, and restores nothing another hold needs off.
type HoldKeeper interface {
	PutHolds(ctx context.Context, hs []store.Hold) error
	ListHolds(ctx context.Context, f store.HoldFilter) ([]store.Hold, error)
	DeleteHolds(ctx context.Context, hs []store.Hold) error
}

// Store is every role: what the Executor as a whole is built on.
type Store interface {
	RolloutRecords
	WaveStore
	StepJournal
	LeaseKeeper
	EventLog
	HoldKeeper
}

// snapshotSource is what reading a Snapshot takes.
type snapshotSource interface {
	GetRollout(ctx context.Context, id int64) (store.Rollout, error)
	ListWaves(ctx context.Context, rolloutID int64) ([]store.Wave, error)
	ListSteps(ctx context.Context, rolloutID int64, f store.StepFilter) ([]store.AppStep, error)
	ActiveRolloutsTouching(ctx context.Context, repo string, apps []store.AppKey) ([]store.Rollout, error)
}
