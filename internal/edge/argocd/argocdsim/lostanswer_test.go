package argocdsim_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	synccommon "github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

// retryingClient is a client over the in-process transport with the client's own retries on (newEnv's has none):
// a lost answer must reach the caller all the same, the request not sent again.
func retryingClient(t *testing.T, sim *argocdsim.Server) *argocd.Client {
	t.Helper()
	c, err := argocd.New(argocd.Options{BaseURL: "http://argocd.sim", HTTPClient: sim.HTTPClient(),
		RetryInitialInterval: 100 * time.Millisecond, RetryMaxInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// succeededAt reports whether the app's last operation succeeded at rev.
func succeededAt(a v1alpha1.Application, rev string) bool {
	os := a.Status.OperationState
	return a.Operation == nil && os != nil && os.Phase == synccommon.OperationSucceeded && os.SyncResult != nil && os.SyncResult.Revision == rev
}

// TestLoseSyncAnswers: a sync whose answer is lost is processed (its operation runs to the end, counted as
// accepted) and the client gets a connection error, not an Argo CD answer; the next sync of the app is answered.
// A sync Argo CD refuses does not use the fault up.
func TestLoseSyncAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: 5 * time.Second}, appSpec("web"), appSpec("api"))
		c := retryingClient(t, e.sim)
		ctx := context.Background()
		// An operation in progress: the sync is refused (400), answered, and the fault stays armed.
		if _, err := c.Sync(ctx, "web", argocd.SyncRequest{Revision: oldRev}); err != nil {
			t.Fatal(err)
		}
		e.sim.LoseSyncAnswers("web", 1, 0)
		if _, err := c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev}); !errors.Is(err, argocd.ErrOperationInProgress) {
			t.Fatalf("sync during an operation: %v, want it refused", err)
		}
		settle(10 * time.Second)

		_, err := c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev})
		var ae *argocd.APIError
		if err == nil || errors.As(err, &ae) || !argocd.IsTransient(err) {
			t.Fatalf("sync with a lost answer: %v, want a transient connection error, not an answer", err)
		}
		t.Logf("the client saw: %v", err)
		settle(10 * time.Second)
		if a := e.app(t, "web"); !succeededAt(a, newRev) {
			t.Errorf("web: operation state %+v, want the lost request's operation Succeeded at %s", a.Status.OperationState, newRev)
		}
		c1 := e.sim.Counts("web")
		if c1.Syncs != 3 || c1.SyncsAccepted != 2 || c1.SyncAnswersLost != 1 {
			t.Errorf("web: %d syncs, %d accepted, %d answers lost; want 3, 2, 1 (the lost one not sent again)", c1.Syncs, c1.SyncsAccepted, c1.SyncAnswersLost)
		}
		// Used up: the next sync is answered; another app's never was aimed at.
		if _, err := c.Sync(ctx, "web", argocd.SyncRequest{Revision: oldRev}); err != nil {
			t.Errorf("next sync of web: %v", err)
		}
		if _, err := c.Sync(ctx, "api", argocd.SyncRequest{Revision: newRev}); err != nil {
			t.Errorf("sync of api: %v", err)
		}
		if tot := e.sim.Totals(); tot.SyncAnswersLost != 1 {
			t.Errorf("totals: %d answers lost, want 1", tot.SyncAnswersLost)
		}
	})
}

// TestLoseSyncAnswersAnyApp: AnyApp aims the fault at the next n accepted syncs whichever app they are for; an
// app's own setting comes first; DropAll loses every answer until cleared.
func TestLoseSyncAnswersAnyApp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{}, appSpec("a"), appSpec("b"), appSpec("c"), appSpec("d"))
		ctx := context.Background()
		e.sim.LoseSyncAnswers(argocdsim.AnyApp, 2, 0)
		e.sim.LoseSyncAnswers("d", argocdsim.DropAll, 0)
		lost := map[string]bool{}
		for _, name := range []string{"d", "a", "b", "c", "d"} {
			_, err := e.c.Sync(ctx, name, argocd.SyncRequest{Revision: newRev})
			lost[name] = err != nil
			settle(5 * time.Second)
		}
		if !lost["a"] || !lost["b"] || lost["c"] || !lost["d"] {
			t.Errorf("answers lost: %v; want a, b (AnyApp's two), d (its own), not c", lost)
		}
		want := map[string]int{"a": 1, "b": 1, "c": 0, "d": 2}
		for name, n := range want {
			if got := e.sim.Counts(name); got.SyncAnswersLost != n || got.SyncsAccepted != got.Syncs {
				t.Errorf("%s: %d answers lost, %d of %d syncs accepted; want %d lost, all accepted", name, got.SyncAnswersLost, got.SyncsAccepted, got.Syncs, n)
			}
		}
		e.sim.LoseSyncAnswers("d", 0, 0)
		if _, err := e.c.Sync(ctx, "d", argocd.SyncRequest{Revision: oldRev}); err != nil {
			t.Errorf("after clearing the fault: %v", err)
		}
	})
}

// TestLoseSyncAnswersThenUnreachable: the server is unreachable from before the operation is written until
// unreachableFor has passed; the open stream ends without carrying the operation; the controller finishes it
// meanwhile, and the first read once the server answers shows it Succeeded.
func TestLoseSyncAnswersThenUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, argocdsim.Config{SyncDuration: 20 * time.Second, OperationStartDelay: time.Second}, appSpec("web"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var (
			mu          sync.Mutex
			seen        []string
			disconnects int
		)
		go func() {
			_ = e.c.Watch(ctx, argocd.WatchQuery{}, argocd.WatchHandler{
				OnEvent: func(ev v1alpha1.ApplicationWatchEvent) {
					mu.Lock()
					defer mu.Unlock()
					if ev.Application.Operation != nil {
						seen = append(seen, string(ev.Type)+" with the operation set")
					}
				},
				OnDisconnect: func(error) {
					mu.Lock()
					defer mu.Unlock()
					disconnects++
				},
			})
		}()
		settle(time.Second)
		e.sim.LoseSyncAnswers("web", 1, time.Minute)
		start := time.Now()
		if _, err := e.c.Sync(ctx, "web", argocd.SyncRequest{Revision: newRev}); err == nil {
			t.Fatal("sync answered, want its answer lost")
		}
		settle(0)
		mu.Lock()
		if disconnects == 0 {
			t.Error("the stream is still open during the outage")
		}
		if len(seen) != 0 {
			t.Errorf("the stream carried %v, want nothing of the lost request", seen)
		}
		mu.Unlock()
		settle(59 * time.Second)
		var op *argocd.APIError
		if _, err := e.c.GetApplication(ctx, "web", ""); err == nil || errors.As(err, &op) {
			t.Errorf("read %s after the lost answer: %v, want a refused connection", time.Since(start), err)
		}
		settle(time.Second)
		a, err := e.c.GetApplication(ctx, "web", "")
		if err != nil {
			t.Fatalf("read after the outage: %v", err)
		}
		if !succeededAt(*a, newRev) {
			t.Errorf("operation state %+v, want Succeeded at %s, finished during the outage", a.Status.OperationState, newRev)
		}
		if c := e.sim.Counts("web"); c.Syncs != 1 || c.SyncsAccepted != 1 || c.SyncAnswersLost != 1 {
			t.Errorf("%d syncs, %d accepted, %d answers lost; want 1, 1, 1", c.Syncs, c.SyncsAccepted, c.SyncAnswersLost)
		}
	})
}

// TestLoseSyncAnswersOverHTTP: served over HTTP, the connection is closed unanswered (net/http's abort); the
// client, retries on, reports a connection error and does not send the sync again.
func TestLoseSyncAnswersOverHTTP(t *testing.T) {
	sim := argocdsim.New(argocdsim.Config{})
	t.Cleanup(sim.Close)
	sim.SetRef("HEAD", newRev)
	if err := sim.AddApp(appSpec("web"), argocdsim.AppOptions{LiveRevisions: []string{oldRev}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	c, err := argocd.New(argocd.Options{BaseURL: srv.URL, RetryInitialInterval: time.Millisecond, RetryMaxInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sim.LoseSyncAnswers("web", 1, 0)
	_, err = c.Sync(context.Background(), "web", argocd.SyncRequest{Revision: newRev})
	var ae *argocd.APIError
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("sync: %v, want a connection error", err)
	}
	t.Logf("the client saw: %v", err)
	if c := sim.Counts("web"); c.Syncs != 1 || c.SyncsAccepted != 1 || c.SyncAnswersLost != 1 {
		t.Errorf("%d syncs, %d accepted, %d answers lost; want 1, 1, 1", c.Syncs, c.SyncsAccepted, c.SyncAnswersLost)
	}
	if _, err := c.GetApplication(context.Background(), "web", ""); err != nil {
		t.Errorf("the next request: %v", err)
	}
}
