package drift

import (
	"time"

	"github.com/fleetwave/fleetwave/internal/inventory"
)

// The states of lasting drift, as Argo CD names them (the metric's state label).
const (
	OutOfSync = "OutOfSync"
	Degraded  = "Degraded"
)

// Alert is one app in lasting drift.
type Alert struct {
	App inventory.App
	// States are the states it has lasted in past its threshold: OutOfSync, Degraded, or both in that order.
	States []string
	// Since is when the earliest of them began.
	Since time.Time
	// After is the threshold it crossed.
	After time.Duration
}

// Input is what a decision is made from.
type Input struct {
	Apps []inventory.App
	Now  time.Time
	// After is the threshold of an app: how long it may stay OutOfSync or Degraded; 0 or less: never an alert.
	After func(inventory.App) time.Duration
	// AboutToSync are the apps a running (or paused, or waiting) rollout is about to sync: their drift is the
	// rollout's business.
	AboutToSync map[inventory.Key]bool
}

// Decide returns the apps of in in lasting drift, in the order of in.Apps, and the earliest time at which an
// app not in lasting drift now will be if nothing changes (zero: none will). An app whose state has no since
// time is not in lasting drift: how long it has lasted is not known.
func Decide(in Input) (alerts []Alert, next time.Time) {
	for _, a := range in.Apps {
		after := in.After(a)
		if after <= 0 || in.AboutToSync[a.Key] {
			continue
		}
		var al Alert
		for _, s := range []struct {
			on    bool
			state string
			since time.Time
		}{
			{a.Sync == OutOfSync, OutOfSync, a.SyncSince},
			{a.Health == Degraded, Degraded, a.HealthSince},
		} {
			if !s.on || s.since.IsZero() {
				continue
			}
			due := s.since.Add(after)
			if in.Now.Before(due) {
				if next.IsZero() || due.Before(next) {
					next = due
				}
				continue
			}
			al.States = append(al.States, s.state)
			if al.Since.IsZero() || s.since.Before(al.Since) {
				al.Since = s.since
			}
		}
		if len(al.States) > 0 {
			al.App, al.After = a, after
			alerts = append(alerts, al)
		}
	}
	return alerts, next
}
