package rollout

import (
	"context"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// auditedJournal is the driver's step journal: every outcome of an app's operation that the store accepted is
// also a line of the rollout's audit log — action "app-sync" or "app-rollback" (the step's Op), target the app
// (store.AppKey.String: "[instance:]namespace/name"), result the step's new state, message the step's — so the
// audit trail export (internal/audit) holds each app's result in order with the commands and gates around it.
// A step moved back to pending (a sync that never started, found after a restart) is no result and is not
// logged here (the reconcile event says it).
type auditedJournal struct {
	StepJournal
	e *Executor
}

func (j auditedJournal) RecordOutcome(ctx context.Context, o store.Outcome) (store.AppStep, error) {
	st, err := j.StepJournal.RecordOutcome(ctx, o)
	if err != nil || st.State == store.StepPending {
		return st, err
	}
	result := string(st.State)
	j.e.event(ctx, st.RolloutID, "", AppResultAction(st.Op), st.App.String(), result, st.Message)
	return st, nil
}

// AppResultAction is the audit log's action of an app's result: "app-sync" or "app-rollback".
func AppResultAction(op store.Op) string {
	if op == "" {
		op = store.OpSync
	}
	return "app-" + string(op)
}
