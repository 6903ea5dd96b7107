package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// reachability is the terminal rollout's view of whether Argo CD answers. The executor rides out an Argo CD that
// does not answer (connection refused, timeouts, 5xx) by retrying, which from a terminal looked like silence: every
// call through it is noted here, and while no call succeeded for a moment a cheap probe asks Argo CD directly, so
// the command says "Argo CD unreachable since …, retrying" within seconds, and when it answers again.
type reachability struct {
	rollout.ArgoCD
	probe func(ctx context.Context) error
	now   func() time.Time

	mu        sync.Mutex
	lastOK    time.Time
	downSince time.Time // zero: answering
	lastErr   error
}

func newReachability(api rollout.ArgoCD, probe func(ctx context.Context) error) *reachability {
	return &reachability{ArgoCD: api, probe: probe, now: time.Now, lastOK: time.Now()}
}

// reachProbeEvery is how often the probe runs while no call succeeded; reachProbeTimeout bounds one probe.
const (
	reachProbeEvery   = time.Second
	reachProbeTimeout = 3 * time.Second
)

// note records the result of a call started at at: an answer (a refusal too: Argo CD answered) or a failure to
// get one. A call its caller abandoned, or the client refused to send, says nothing about Argo CD.
func (r *reachability) note(ctx context.Context, err error, at time.Time) {
	var ae *argocd.APIError
	answered := err == nil || errors.As(err, &ae) && !argocd.IsTransient(err)
	if !answered && (ctx.Err() != nil || !argocd.IsTransient(err)) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if answered {
		if at.After(r.lastOK) {
			r.lastOK = at
		}
		r.downSince, r.lastErr = time.Time{}, nil
		return
	}
	if r.downSince.IsZero() {
		r.downSince = at
	}
	r.lastErr = err
}

// state reports since when Argo CD does not answer (zero: it does) and the last error.
func (r *reachability) state() (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.downSince, r.lastErr
}

// run probes Argo CD until ctx ends, whenever no call succeeded for a probe interval.
func (r *reachability) run(ctx context.Context) {
	t := time.NewTicker(reachProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		quiet := r.now().Sub(r.lastOK) >= reachProbeEvery
		r.mu.Unlock()
		if !quiet {
			continue
		}
		start := r.now()
		pctx, cancel := context.WithTimeout(ctx, reachProbeTimeout)
		err := r.probe(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", reachProbeTimeout)
		}
		r.note(ctx, err, start)
	}
}

func (r *reachability) GetApplication(ctx context.Context, name string, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error) {
	start := r.now()
	app, err := r.ArgoCD.GetApplication(ctx, name, refresh)
	r.note(ctx, err, start)
	return app, err
}

func (r *reachability) ListApplications(ctx context.Context, q argocd.ListQuery) (*v1alpha1.ApplicationList, error) {
	start := r.now()
	l, err := r.ArgoCD.ListApplications(ctx, q)
	r.note(ctx, err, start)
	return l, err
}

func (r *reachability) Sync(ctx context.Context, name string, req argocd.SyncRequest) (*v1alpha1.Application, error) {
	start := r.now()
	app, err := r.ArgoCD.Sync(ctx, name, req)
	r.note(ctx, err, start)
	return app, err
}

// The sync windows (internal/rollout windows.go finds them by these methods): forwarded when the client reads
// them, as *argocd.Client does.
type windowsAPI interface {
	ProjectSyncWindows(ctx context.Context, project string) (v1alpha1.SyncWindows, error)
	SyncWindows(ctx context.Context, name string) (*argocd.SyncWindows, error)
}

func (r *reachability) ProjectSyncWindows(ctx context.Context, project string) (v1alpha1.SyncWindows, error) {
	w, ok := r.ArgoCD.(windowsAPI)
	if !ok {
		return nil, errors.New("this Argo CD client reads no sync windows")
	}
	start := r.now()
	ws, err := w.ProjectSyncWindows(ctx, project)
	r.note(ctx, err, start)
	return ws, err
}

func (r *reachability) SyncWindows(ctx context.Context, name string) (*argocd.SyncWindows, error) {
	w, ok := r.ArgoCD.(windowsAPI)
	if !ok {
		return nil, errors.New("this Argo CD client reads no sync windows")
	}
	start := r.now()
	ws, err := w.SyncWindows(ctx, name)
	r.note(ctx, err, start)
	return ws, err
}

func (r *reachability) Patch(ctx context.Context, name, patch string, pt argocd.PatchType) (*v1alpha1.Application, error) {
	start := r.now()
	app, err := r.ArgoCD.Patch(ctx, name, patch, pt)
	r.note(ctx, err, start)
	return app, err
}

// reachReport turns the reachability into events: one when Argo CD stops answering, a reminder each minute it
// stays so, one when it answers again.
type reachReport struct {
	server    string
	announced time.Time // downSince of the outage announced (zero: none)
	lastSaid  time.Time
}

// reachRepeat is how often a lasting outage is said again.
const reachRepeat = time.Minute

// check returns the event to emit now, if any, and the status line's note ("" when Argo CD answers).
func (rr *reachReport) check(r *reachability, now time.Time) (*rolloutEvent, string) {
	if r == nil {
		return nil, ""
	}
	since, lastErr := r.state()
	switch {
	case since.IsZero() && rr.announced.IsZero():
		return nil, ""
	case since.IsZero():
		ev := &rolloutEvent{Event: "argocd-reachable", Message: fmt.Sprintf("Argo CD at %s answers again (unreachable for %s)",
			rr.server, now.Sub(rr.announced).Round(time.Second))}
		rr.announced = time.Time{}
		return ev, ""
	}
	note := "Argo CD unreachable since " + since.Local().Format("15:04:05") + ", retrying"
	if !rr.announced.IsZero() && now.Sub(rr.lastSaid) < reachRepeat {
		return nil, note
	}
	msg := fmt.Sprintf("Argo CD at %s unreachable since %s, retrying", rr.server, since.Local().Format("15:04:05"))
	if !rr.announced.IsZero() {
		msg += fmt.Sprintf(" (for %s)", now.Sub(since).Round(time.Second))
	}
	if lastErr != nil {
		msg += ": " + oneLine(lastErr.Error(), 200)
	}
	rr.announced, rr.lastSaid = since, now
	return &rolloutEvent{Event: "argocd-unreachable", Message: msg}, note
}

// oneLine is the first line of s, at most n bytes.
func oneLine(s string, n int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
