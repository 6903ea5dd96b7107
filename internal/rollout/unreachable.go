package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// An Argo CD instance that does not answer, or refuses the executor's token (401), holds only the apps on
// it (#36): apps not started yet wait before their sync and are retried with back-off (one read of an app of
// theirs, from 5 s doubling to 2 min); the apps in flight on it are followed until it answers (a sync request
// that never reached it goes back to pending, once its operation is confirmed absent); the other instances'
// apps go on. The running wave's gate state names each instance held and why, for its check-run and `rollout
// status`; events instance-unreachable and instance-reachable mark the moments. Only an executor given
// instances (WithInstances or WithInstanceBudgets) does this; a one-instance executor fails an app whose Argo CD
// does not answer for the sync timeout, as before.

const (
	unreachableFirstWait = 5 * time.Second
	unreachableMaxWait   = 2 * time.Minute
)

// instanceDown is an instance the driver found not answering.
type instanceDown struct {
	since   time.Time
	why     string
	retryAt time.Time
	wait    time.Duration
}

// unreachableHold is one held instance, as the wave's gate state keeps it.
type unreachableHold struct {
	Instance string    `json:"instance"`
	Since    time.Time `json:"since"`
	Why      string    `json:"why"`
}

// describe says it in one line: "instance eu unreachable since 10:02: dial tcp …".
func (h unreachableHold) describe() string {
	name := h.Instance
	if name == "" {
		name = `"" (the default Argo CD)`
	}
	return fmt.Sprintf("instance %s unreachable since %s: %s", name, h.Since.UTC().Format("15:04"), h.Why)
}

// unreachableErr reports whether err says the instance is not answering or refuses the token, rather than
// answering about the app: a connection error, a timeout, a 5xx, or 401 Unauthenticated. A 403 is an answer about
// the app: Argo CD answers PermissionDenied for an app that does not exist as well as for one the token may not
// read (server/application/application.go getAppEnforceRBAC), and for a sync a window refuses; the app fails
// with it, as in a fleet of one.
func unreachableErr(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, argocd.ErrUnauthenticated) {
		return true
	}
	return argocd.IsTransient(err)
}

type instanceHealth struct {
	mu   sync.Mutex
	down map[string]*instanceDown
}

// noteInstance records what a call to an instance's Argo CD answered: err nil or an answer about the app means
// it answers; a connection error or a refused token marks it down (the first time: recorded on the running wave).
func (d *driver) noteInstance(ctx context.Context, inst string, err error) {
	if !d.e.inst.multi {
		return
	}
	now := d.e.o.clock.Now()
	h := &d.health
	h.mu.Lock()
	cur := h.down[inst]
	if !unreachableErr(err) {
		if cur == nil {
			h.mu.Unlock()
			return
		}
		delete(h.down, inst)
		h.mu.Unlock()
		d.e.event(ctx, d.id, "", "instance-reachable", inst, "ok", "answers again after "+now.Sub(cur.since).Round(time.Second).String())
		d.recordUnreachable(ctx)
		return
	}
	why := oneLine(err.Error())
	if cur != nil {
		cur.why = why
		h.mu.Unlock()
		return
	}
	if h.down == nil {
		h.down = map[string]*instanceDown{}
	}
	h.down[inst] = &instanceDown{since: now, why: why, retryAt: now.Add(unreachableFirstWait), wait: unreachableFirstWait}
	h.mu.Unlock()
	d.e.o.log.Warn("Argo CD instance unreachable: holding its apps", "rollout", d.id, "instance", inst, "err", err)
	d.e.event(ctx, d.id, "", "instance-unreachable", inst, "held", why)
	d.recordUnreachable(ctx)
}

func oneLine(s string) string {
	s = text.OneLine(s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// instanceHeld reports whether inst is down, and when to ask it again.
func (d *driver) instanceHeld(inst string) (bool, time.Time) {
	d.health.mu.Lock()
	defer d.health.mu.Unlock()
	if cur := d.health.down[inst]; cur != nil {
		return true, cur.retryAt
	}
	return false, time.Time{}
}

// awaitInstance returns once inst answers (at once when it is not known down), asking it again with back-off
// through one read of probe; false when the rollout stops starting work (want) first.
func (d *driver) awaitInstance(ctx context.Context, inst string, probe store.AppKey, want store.RolloutState) bool {
	for {
		held, retryAt := d.instanceHeld(inst)
		if !held {
			return true
		}
		if !d.mayStart(ctx, want) {
			return false
		}
		now := d.e.o.clock.Now()
		if now.Before(retryAt) {
			if !d.pause(ctx, min(retryAt.Sub(now), d.e.o.controlPoll)) {
				return false
			}
			continue
		}
		argo, err := d.e.argoFor(inst)
		if err != nil {
			return true // not configured: the app fails with that
		}
		_, err = argo.GetApplication(ctx, qualified(probe), "")
		if unreachableErr(err) {
			d.health.mu.Lock()
			if cur := d.health.down[inst]; cur != nil {
				cur.wait = min(2*cur.wait, unreachableMaxWait)
				cur.retryAt = d.e.o.clock.Now().Add(cur.wait)
			}
			d.health.mu.Unlock()
		}
		d.noteInstance(ctx, inst, err)
	}
}

// recordUnreachable writes the instances held now on the wave whose batch runs, and publishes.
func (d *driver) recordUnreachable(ctx context.Context) {
	d.health.mu.Lock()
	var holds []unreachableHold
	for inst, cur := range d.health.down {
		holds = append(holds, unreachableHold{Instance: inst, Since: cur.since, Why: cur.why})
	}
	d.health.mu.Unlock()
	slices.SortFunc(holds, func(a, b unreachableHold) int { return strings.Compare(a.Instance, b.Instance) })
	wi := int(d.curWave.Load())
	if wi < 0 {
		return
	}
	_, err := d.e.updateWave(context.WithoutCancel(ctx), d.id, wi, func(x *store.Wave) (bool, error) {
		gs := readGateState(*x)
		if len(gs.Unreachable) == 0 && len(holds) == 0 {
			return false, nil
		}
		gs.Unreachable = holds
		x.GateState = gs.raw()
		return true, nil
	})
	if err != nil {
		d.e.o.log.Warn("recording an unreachable instance on the wave", "rollout", d.id, "err", err)
	}
	d.publish(ctx, d.id)
}
