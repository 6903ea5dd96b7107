package rollout_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/checkrun/checkruntest"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// TestTwoReplicaFailoverPostgres runs two replicas on one PostgreSQL database, in real time: only the lease
// holder drives the rollout; when it is killed mid-wave (its context cancelled, its lease left to expire) the
// other takes over and finishes, with every app synced exactly once. It needs FLEETWAVE_TEST_POSTGRES_DSN
// (internal/edge/store/testdata/start-postgres.sh starts a server and prints one).
func TestTwoReplicaFailoverPostgres(t *testing.T) {
	dsn := os.Getenv("FLEETWAVE_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("FLEETWAVE_TEST_POSTGRES_DSN is not set")
	}
	dsn = tempDatabase(t, dsn)
	ctx := context.Background()
	apps := defaultFleet()
	sim := newSim(t, argocdsim.Config{SyncDuration: 700 * time.Millisecond, ReconcileDelay: 20 * time.Millisecond}, apps)
	client := newClient(t, sim)
	rep := &checkruntest.Reporter{}
	const ttl = 3 * time.Second
	replica := func(owner string) (*store.Store, *rollout.Executor) {
		st, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, rollout.New(st, client, rep, rollout.WithOwner(owner), rollout.WithLeaseTTL(ttl),
			rollout.WithPollIntervals(100*time.Millisecond, 300*time.Millisecond, 100*time.Millisecond),
			rollout.WithIntentGrace(time.Second))
	}
	stA, exA := replica("replica-a")
	stB, exB := replica("replica-b")
	run := func(ex *rollout.Executor) (context.CancelFunc, chan struct{}) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = ex.Run(rctx)
		}()
		return cancel, done
	}
	p, err := parsePolicy(basePolicy("", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, apps: apps}
	r, err := exA.Submit(ctx, rollout.Request{Repo: repo, MergeSHA: newRev, Plan: e.plan(p, apps), RepoURL: repoURL})
	if err != nil {
		t.Fatal(err)
	}
	cancelA, doneA := run(exA)
	defer func() { cancelA(); <-doneA }()
	// Replica A has the rollout; B starts and must leave it alone.
	waitFor(t, 20*time.Second, func() bool { l, err := stA.GetLease(ctx, r.ID); return err == nil && l.Owner == "replica-a" })
	cancelB, doneB := run(exB)
	defer func() {
		sctx, scancel := context.WithTimeout(ctx, time.Minute)
		defer scancel()
		_ = exB.Stop(sctx)
		cancelB()
		<-doneB
	}()
	waitFor(t, 30*time.Second, func() bool {
		ws, err := stB.ListWaves(ctx, r.ID)
		return err == nil && ws[1].State == store.WaveRunning
	})
	time.Sleep(200 * time.Millisecond) // staging's syncs in flight
	cancelA()                          // replica A is killed: nothing released
	<-doneA
	killed := time.Now()
	waitFor(t, 60*time.Second, func() bool {
		got, err := stB.GetRollout(ctx, r.ID)
		return err == nil && got.State.Terminal()
	})
	got, _ := stB.GetRollout(ctx, r.ID)
	if got.State != store.RolloutSucceeded {
		t.Fatalf("rollout %s: %s", got.State, got.Message)
	}
	steps, _ := stB.ListSteps(ctx, r.ID, store.StepFilter{})
	var byB int
	for _, s := range steps {
		if c := sim.Counts(s.App.Name); c.SyncsAccepted != 1 || c.Syncs != 1 {
			t.Errorf("%s: %d sync requests, %d accepted", s.App.Name, c.Syncs, c.SyncsAccepted)
		}
		if s.IntentAt.After(killed) {
			byB++
		}
	}
	if byB == 0 {
		t.Error("replica B started no sync: the kill came too late to test a takeover")
	}
	events, _ := stB.ListEvents(ctx, r.ID, 0, 0)
	var reconciled []string
	var takeover time.Time
	for _, ev := range events {
		if ev.Action == "reconcile" {
			reconciled = append(reconciled, ev.Target+"="+ev.Result)
			if takeover.IsZero() {
				takeover = ev.At
			}
		}
	}
	t.Logf("killed replica A mid-wave; B reconciled its in-flight apps %s later (lease TTL %s): %s; B started %d apps; done %s after the kill",
		takeover.Sub(killed).Round(time.Millisecond), ttl, strings.Join(reconciled, " "), byB, time.Since(killed).Round(time.Millisecond))
}

// tempDatabase creates a database of its own for the test on the server of dsn, dropped at the end.
func tempDatabase(t *testing.T, dsn string) string {
	t.Helper()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := fmt.Sprintf("fleetwave_rollout_%d", time.Now().UnixNano())
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE " + name + " WITH (FORCE)") })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
