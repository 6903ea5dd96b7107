package audit

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// Store is what the export reads: internal/edge/store's Store.
type Store interface {
	ListHistory(ctx context.Context, f store.HistoryFilter) ([]store.Event, error)
	GetRollout(ctx context.Context, id int64) (store.Rollout, error)
	ListWaves(ctx context.Context, rolloutID int64) ([]store.Wave, error)
	ListSteps(ctx context.Context, rolloutID int64, f store.StepFilter) ([]store.AppStep, error)
	ListEvents(ctx context.Context, rolloutID, afterID int64, limit int) ([]store.Event, error)
}

// Options configure the export.
type Options struct {
	// GitHubURL is GitHub's web address, for the links to pull requests, commits and check-runs (default
	// https://github.com).
	GitHubURL string
	// PageSize is how many events are read from the store at once (default 500).
	PageSize int
}

func (o Options) withDefaults() Options {
	if o.GitHubURL == "" {
		o.GitHubURL = "https://github.com"
	}
	o.GitHubURL = strings.TrimRight(o.GitHubURL, "/")
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	return o
}

// The actions whose target is an app (store.AppKey.String, or the app's name alone) rather than a wave.
var appActions = map[string]bool{
	"app-sync": true, "app-rollback": true, "reconcile": true, "sync-requested-again": true, "out-of-plan": true,
	"automated-sync-hold-taken": true, "automated-sync-off": true, "automated-sync-restore": true,
}

// Export reads the events f selects, oldest first, a page at a time, and hands each to emit as a Record; f.Limit
// bounds how many (0: all). It returns the id of the last event emitted (f.AfterID when none), the cursor to
// resume from. An error of emit stops the export and is returned.
func Export(ctx context.Context, st Store, f store.HistoryFilter, opts Options, emit func(Record) error) (int64, error) {
	opts = opts.withDefaults()
	x := exporter{st: st, opts: opts, rollouts: map[int64]*rolloutInfo{}}
	last, left := f.AfterID, f.Limit
	for {
		page := f
		page.AfterID, page.Limit = last, opts.PageSize
		if f.Limit > 0 {
			page.Limit = min(left, opts.PageSize)
		}
		evs, err := st.ListHistory(ctx, page)
		if err != nil {
			return last, err
		}
		for _, ev := range evs {
			rec, err := x.record(ctx, ev)
			if err != nil {
				return last, err
			}
			if err := emit(rec); err != nil {
				return last, err
			}
			last = ev.ID
		}
		left -= len(evs)
		if len(evs) < page.Limit || (f.Limit > 0 && left <= 0) {
			return last, nil
		}
	}
}

// rolloutInfo is what the records of one rollout share, read once per export.
type rolloutInfo struct {
	r     store.Rollout
	ref   Rollout
	waves map[string]store.Wave
	names []string // wave names by index
	steps map[string]store.AppStep
	// byName: the step of an app named so, when only one app of the rollout is (events that name an app alone).
	byName map[string]*store.AppStep
}

type exporter struct {
	st       Store
	opts     Options
	rollouts map[int64]*rolloutInfo
}

// maxCached bounds the rollouts an export keeps in memory; past it the cache starts again.
const maxCached = 256

func (x *exporter) rollout(ctx context.Context, id int64) (*rolloutInfo, error) {
	if ri, ok := x.rollouts[id]; ok {
		return ri, nil
	}
	r, err := x.st.GetRollout(ctx, id)
	if err != nil {
		return nil, err
	}
	waves, err := x.st.ListWaves(ctx, id)
	if err != nil {
		return nil, err
	}
	steps, err := x.st.ListSteps(ctx, id, store.StepFilter{})
	if err != nil {
		return nil, err
	}
	// Who merged is the actor of the rollout's "merged" event, written with the rollout (internal/rollout).
	first, err := x.st.ListEvents(ctx, id, 0, 4)
	if err != nil {
		return nil, err
	}
	web := x.opts.GitHubURL
	ri := &rolloutInfo{r: r, waves: map[string]store.Wave{}, steps: map[string]store.AppStep{}, byName: map[string]*store.AppStep{}}
	ri.ref = Rollout{ID: r.ID, Repo: r.Repo, PR: r.PRNumber, MergeSHA: r.MergeSHA, BaseSHA: r.BaseSHA,
		CommitURL: web + "/" + r.Repo + "/commit/" + r.MergeSHA, PlanDigest: r.PlanDigest}
	if r.PRNumber > 0 {
		ri.ref.PRURL = web + "/" + r.Repo + "/pull/" + strconv.Itoa(r.PRNumber)
	}
	for _, ev := range first {
		if ev.Action == "merged" {
			ri.ref.MergedBy = ev.Actor
			break
		}
	}
	if r.CheckRunID != 0 {
		ri.ref.CheckRuns = append(ri.ref.CheckRuns, CheckRun{Name: checkrun.CheckRollout, ID: r.CheckRunID, URL: checkRunURL(web, r.Repo, r.CheckRunID)})
	}
	ri.names = make([]string, len(waves))
	for _, w := range waves {
		ri.waves[w.Name] = w
		if w.Index < len(ri.names) {
			ri.names[w.Index] = w.Name
		}
		if w.CheckRunID != 0 {
			ri.ref.CheckRuns = append(ri.ref.CheckRuns, CheckRun{Name: checkrun.CheckWavePrefix + w.Name, ID: w.CheckRunID, URL: checkRunURL(web, r.Repo, w.CheckRunID)})
		}
	}
	if r.RollbackCheckRunID != 0 {
		ri.ref.CheckRuns = append(ri.ref.CheckRuns, CheckRun{Name: checkrun.CheckRollback, ID: r.RollbackCheckRunID, URL: checkRunURL(web, r.Repo, r.RollbackCheckRunID)})
	}
	named := map[string]int{}
	for i := range steps {
		s := steps[i]
		ri.steps[s.App.String()] = s
		named[s.App.Name]++
		ri.byName[s.App.Name] = &steps[i]
	}
	for name, n := range named {
		if n > 1 {
			delete(ri.byName, name)
		}
	}
	if len(x.rollouts) >= maxCached {
		clear(x.rollouts)
	}
	x.rollouts[id] = ri
	return ri, nil
}

func (x *exporter) record(ctx context.Context, ev store.Event) (Record, error) {
	ri, err := x.rollout(ctx, ev.RolloutID)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted by retention between the page and now: the record says what the event does.
		ri = &rolloutInfo{ref: Rollout{ID: ev.RolloutID}}
	} else if err != nil {
		return Record{}, err
	}
	rec := Record{Schema: Schema, ID: ev.ID, At: ev.At, Rollout: ri.ref, Actor: ev.Actor, Action: ev.Action,
		Target: ev.Target, Result: ev.Result, Message: ev.Message, DeliveryID: ev.DeliveryID}
	if ev.Action == "created" && len(ri.r.Plan) > 0 {
		rec.Plan = ri.r.Plan
	}
	if appActions[ev.Action] {
		s, ok := ri.steps[ev.Target]
		if !ok {
			if p := ri.byName[ev.Target]; p != nil {
				s, ok = *p, true
			}
		}
		if ok {
			a := &App{Instance: s.App.Instance, Namespace: s.App.Namespace, Name: s.App.Name, Cluster: s.Cluster}
			switch ev.Action {
			case "app-sync":
				a.Revision = s.TargetRevision
			case "app-rollback":
				a.Revision = s.PreviousRevision
			}
			rec.App = a
			if s.Wave < len(ri.names) {
				rec.Wave = ri.names[s.Wave]
			}
		}
	} else if w, ok := ri.waves[ev.Target]; ok {
		rec.Wave = w.Name
	}
	if w, ok := ri.waves[rec.Wave]; ok && w.CheckRunID != 0 {
		rec.WaveCheckRun = &CheckRun{Name: checkrun.CheckWavePrefix + w.Name, ID: w.CheckRunID, URL: checkRunURL(x.opts.GitHubURL, ri.r.Repo, w.CheckRunID)}
	}
	return rec, nil
}
