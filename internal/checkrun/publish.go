package checkrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// Writer puts one check-run on GitHub; internal/app/executor.Reporter satisfies it.
type Writer interface {
	// WriteCheckRun creates run on repo (id 0) or updates check-run id, with the token of the App installation
	// the rollout was merged under (0: not recorded), and returns its id (a new one when it had to create it
	// again).
	WriteCheckRun(ctx context.Context, installationID int64, repo string, id int64, run github.CheckRun) (int64, error)
}

// Publisher is the executor's rollout.Reporter: it builds a snapshot's check-runs and writes those that changed.
type Publisher struct {
	w Writer
}

var _ rollout.Reporter = (*Publisher)(nil)

// NewPublisher returns a Publisher writing through w.
func NewPublisher(w Writer) *Publisher { return &Publisher{w: w} }

// Publish writes the check-runs of s that differ from what sent says was last written, and records what it
// wrote in sent. It returns the ids of the check-runs it created, and every write that failed, joined.
func (p *Publisher) Publish(ctx context.Context, s rollout.Snapshot, sent rollout.Sent) (rollout.CheckRunIDs, error) {
	var ids rollout.CheckRunIDs
	var errs []error
	for _, c := range build(s) {
		digest := digestOf(c.run)
		if sent[c.run.ExternalID] == digest {
			continue
		}
		id, err := p.w.WriteCheckRun(ctx, s.Rollout.InstallationID, s.Rollout.Repo, c.id, c.run)
		if err != nil {
			errs = append(errs, fmt.Errorf("check-run %q: %w", c.run.Name, err))
			continue
		}
		sent[c.run.ExternalID] = digest
		if c.id == 0 && id != 0 {
			c.created(&ids, id)
		}
	}
	return ids, errors.Join(errs...)
}

// check is one check-run of a rollout: its id on GitHub (0 until created) and its content.
type check struct {
	id      int64
	run     github.CheckRun
	created func(ids *rollout.CheckRunIDs, id int64)
}

// build returns every check-run of a rollout: fleetwave/rollout, one per wave, and fleetwave/rollback once a
// rollback was asked for.
func build(s rollout.Snapshot) []check {
	out := []check{{id: s.Rollout.CheckRunID, run: rolloutCheckRun(s), created: func(ids *rollout.CheckRunIDs, id int64) { ids.Rollout = id }}}
	for i, w := range s.Waves {
		index := w.Index
		out = append(out, check{id: w.CheckRunID, run: waveCheckRun(s, i), created: func(ids *rollout.CheckRunIDs, id int64) {
			if ids.Waves == nil {
				ids.Waves = map[int]int64{}
			}
			ids.Waves[index] = id
		}})
	}
	if run, ok := rollbackCheckRun(s); ok {
		out = append(out, check{id: s.Rollout.RollbackCheckRunID, run: run, created: func(ids *rollout.CheckRunIDs, id int64) { ids.Rollback = id }})
	}
	return out
}

func digestOf(run github.CheckRun) string {
	b, _ := json.Marshal(run)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
