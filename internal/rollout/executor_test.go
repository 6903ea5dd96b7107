package rollout_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
)

func TestWaveOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		apps := defaultFleet()
		apps[2].live = newRev // web-stg-2 already runs the merge: skipped, never synced
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 30 * time.Second}, apps: apps})
		r := e.submit(basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		e.expectSyncs(merge(counts(names(apps, ""), 1), map[string]int{"web-stg-2": 0}))
		e.expectLive(newRev, names(apps, "")...)

		steps := e.steps(r.ID)
		// Waves, then batches, strictly in order: everything of one ends before anything of the next starts.
		type span struct{ start, end time.Time }
		spans := map[[2]int]*span{}
		var keys [][2]int
		for _, s := range steps {
			if s.State == store.StepSkipped {
				if s.App.Name != "web-stg-2" {
					t.Errorf("app %s skipped", s.App.Name)
				}
				continue
			}
			if s.State != store.StepSynced || s.Op != store.OpSync || s.PreviousRevision != oldRev || s.Attempts != 1 {
				t.Errorf("step %s: %s op %s previous %s attempts %d", s.App.Name, s.State, s.Op, s.PreviousRevision, s.Attempts)
			}
			k := [2]int{s.Wave, s.Batch}
			sp := spans[k]
			if sp == nil {
				sp = &span{s.OpStartedAt, s.OpFinishedAt}
				spans[k] = sp
				keys = append(keys, k)
			}
			if s.OpStartedAt.Before(sp.start) {
				sp.start = s.OpStartedAt
			}
			if s.OpFinishedAt.After(sp.end) {
				sp.end = s.OpFinishedAt
			}
		}
		if len(keys) != 4 { // canary, staging (one batch: stg-2 skipped), production ×2
			t.Fatalf("batches %v", keys)
		}
		for i := 1; i < len(keys); i++ {
			prev, cur := spans[keys[i-1]], spans[keys[i]]
			if cur.start.Before(prev.end) {
				t.Errorf("batch %v started at %s before batch %v ended at %s", keys[i], cur.start, keys[i-1], prev.end)
			}
		}
		// Production: two batches of two clusters of different regions.
		prod := map[int][]string{}
		for _, s := range steps {
			if s.Wave == 2 {
				prod[s.Batch] = append(prod[s.Batch], s.App.Name)
			}
		}
		if len(prod) != 2 || len(prod[0]) != 2 || len(prod[1]) != 2 {
			t.Errorf("production batches %v", prod)
		}

		// Check-runs: queued → in progress → success, for the rollout and each wave.
		for _, name := range []string{checkrun.CheckRollout, "fleetwave/wave: canary", "fleetwave/wave: staging", "fleetwave/wave: production"} {
			var got []string
			for _, tr := range e.rep.Transitions(name) {
				got = append(got, tr.String())
			}
			want := name + ": queued, " + name + ": in_progress, " + name + ": completed/success"
			if strings.Join(got, ", ") != want {
				t.Errorf("transitions of %s:\n got %s\nwant %s", name, strings.Join(got, ", "), want)
			}
		}
		cr, _ := e.rep.Latest(checkrun.CheckRollout)
		if !strings.Contains(cr.Output.Title, "Rolled out to 7 apps in 3 waves") || !strings.Contains(cr.Output.Text, "| web-prd-4 | prd-4 | production | 2 | ✅ synced |") {
			t.Errorf("rollout check-run:\n%s\n%s", cr.Output.Title, cr.Output.Text)
		}
		if len(cr.Actions) != 1 || cr.Actions[0].Identifier != "rollback" {
			t.Errorf("actions of a finished rollout: %+v", cr.Actions)
		}
		stored, _ := e.st.GetRollout(context.Background(), r.ID)
		if byID, ok := e.rep.Get(stored.CheckRunID); !ok || byID.Name != checkrun.CheckRollout {
			t.Errorf("check-run id stored with the rollout (%d) is not its check-run's: %v %q", stored.CheckRunID, ok, byID.Name)
		}
	})
}

// TestUnreliableArgoCD: 503s, lost answers (processed, then 502), dropped streams and Progressive Syncs' stale
// status never make an app synced twice or a wave start early.
func TestUnreliableArgoCD(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, envConfig{sim: argocdsim.Config{SyncDuration: 30 * time.Second, Seed: faultSeed(), ErrorRate: 0.1,
			LostResponseRate: 0.1, StreamDropMean: 20 * time.Second, StaleStatusFor: 10 * time.Second}})
		r := e.submit(basePolicy("", "", ""), newRev)
		r = e.wait(r.ID, store.RolloutSucceeded, store.RolloutFailed, store.RolloutPaused)
		if r.State != store.RolloutSucceeded {
			dumpSteps(t, e, r.ID)
			t.Fatalf("rollout %s: %s", r.State, r.Message)
		}
		e.expectSyncs(counts(names(e.apps, ""), 1))
		e.expectLive(newRev, names(e.apps, "")...)
		if t.Failed() {
			dumpSteps(t, e, r.ID)
		}
		steps := e.steps(r.ID)
		for w := 1; w < 3; w++ {
			if firstStart(steps, w).Before(lastEnd(steps, w-1)) {
				t.Errorf("wave %d started at %s before wave %d ended at %s", w, firstStart(steps, w), w-1, lastEnd(steps, w-1))
			}
		}
		tot := e.sim.Totals()
		if tot.InjectedErrors+tot.LostResponses+tot.StreamDrops == 0 {
			t.Errorf("faults not exercised: %+v", tot)
		}
		if t.Failed() {
			dumpSteps(t, e, r.ID)
		}
	})
}

func faultSeed() uint64 {
	if n, err := strconv.ParseUint(os.Getenv("FLEETWAVE_FAULT_SEED"), 10, 64); err == nil {
		return n
	}
	return 7
}
