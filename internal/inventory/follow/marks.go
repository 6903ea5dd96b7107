package follow

import (
	"context"
	"strconv"

	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/inventory"
)

// MarkStore says which of fleetwave's rollouts last planned each app (*store.Store).
type MarkStore interface {
	LastRolloutMarks(ctx context.Context, instance string) ([]store.RolloutMark, error)
}

// RefreshMarks asks for the rollout marks to be read again soon (a rollout started, or a step ended); they are
// also read every Config.MarkRefresh. It never blocks.
func (f *Follower) RefreshMarks() {
	select {
	case f.marksAsked <- struct{}{}:
	default:
	}
}

func (f *Follower) markLoop(ctx context.Context) {
	if f.cfg.Marks == nil {
		return
	}
	t := f.cfg.Clock.NewTicker(f.cfg.MarkRefresh)
	defer t.Stop()
	for {
		f.refreshMarks(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		case <-f.marksAsked:
		}
	}
}

// refreshMarks reads the marks and applies again the apps whose mark changed: one query, whatever the number of
// stream events.
func (f *Follower) refreshMarks(ctx context.Context) {
	rows, err := f.cfg.Marks.LastRolloutMarks(ctx, f.cfg.Instance)
	if err != nil {
		if ctx.Err() == nil {
			f.cfg.Log.Warn("inventory: reading the rollout marks", "instance", f.cfg.Instance, "err", err)
		}
		return
	}
	marks := make(map[inventory.Key]inventory.Rollout, len(rows))
	for _, r := range rows {
		marks[inventory.Key{Instance: r.App.Instance, Namespace: r.App.Namespace, Name: r.App.Name}] = inventory.Rollout{
			ID: strconv.FormatInt(r.Rollout, 10), Revision: r.Revision, Reached: r.State == store.StepSynced || r.State == store.StepSkipped}
	}
	f.marksMu.Lock()
	old := f.marks
	f.marks = marks
	f.marksMu.Unlock()
	changed := func(k inventory.Key) {
		a, ok := f.cfg.Inventory.Get(k)
		if !ok {
			return
		}
		a.Rollout = nil
		if m, ok := marks[k]; ok {
			a.Rollout = &m
		}
		f.cfg.Inventory.Apply(a)
	}
	for k, m := range marks {
		if o, ok := old[k]; !ok || o != m {
			changed(k)
		}
	}
	for k := range old {
		if _, ok := marks[k]; !ok {
			changed(k)
		}
	}
}

// mark is the app's rollout mark, nil when no rollout planned it.
func (f *Follower) mark(k inventory.Key) *inventory.Rollout {
	f.marksMu.Lock()
	defer f.marksMu.Unlock()
	if m, ok := f.marks[k]; ok {
		return &m
	}
	return nil
}
