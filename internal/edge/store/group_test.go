package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// StepsFixture opens the store at dsn with a rollout of n pending steps leased to owner (this package's tests
// and its benchmarks).
func StepsFixture(t testing.TB, dsn, owner string, n int) (*Store, []AppStep) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	nr := NewRollout{Repo: "org/fleet", MergeSHA: "m", Plan: []byte("{}"), Waves: []NewWave{{Name: "all"}}}
	for i := range n {
		nr.Waves[0].Steps = append(nr.Waves[0].Steps, NewStep{App: AppKey{Namespace: "argocd", Name: fmt.Sprintf("app-%d", i)}})
	}
	r, _, err := s.CreateRollout(ctx, nr)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AcquireLease(ctx, r.ID, owner, time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	steps, err := s.ListSteps(ctx, r.ID, StepFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return s, steps
}

// groupFixture is StepsFixture on a new SQLite file, leased to "bot".
func groupFixture(t *testing.T, n int) (*Store, []AppStep) {
	return StepsFixture(t, "sqlite://"+filepath.Join(t.TempDir(), "fw.db"), "bot", n)
}

// TestGroupCommitKeepsEachWriteItsOwn: writes batched in one transaction succeed or fail each on its own (a
// stale version or a lost lease fails alone), and every caller gets its own row back.
func TestGroupCommitKeepsEachWriteItsOwn(t *testing.T) {
	s, steps := groupFixture(t, 200)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, len(steps))
	got := make([]AppStep, len(steps))
	for i, st := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := Intent{StepID: st.ID, Version: st.Version, Owner: "bot", PreviousRevision: fmt.Sprintf("prev-%d", i)}
			switch i % 50 {
			case 7:
				in.Version-- // stale
			case 11:
				in.Owner = "other" // no lease
			}
			got[i], errs[i] = s.RecordIntent(ctx, in)
		}()
	}
	wg.Wait()
	for i, st := range steps {
		switch i % 50 {
		case 7:
			if !errors.Is(errs[i], ErrConflict) {
				t.Errorf("step %d with a stale version: %v, want ErrConflict", i, errs[i])
			}
		case 11:
			if !errors.Is(errs[i], ErrLeaseLost) {
				t.Errorf("step %d without the lease: %v, want ErrLeaseLost", i, errs[i])
			}
		default:
			if errs[i] != nil || got[i].ID != st.ID || got[i].State != StepIntent || got[i].PreviousRevision != fmt.Sprintf("prev-%d", i) {
				t.Errorf("step %d: %+v, %v", i, got[i], errs[i])
			}
		}
		cur, err := s.GetStep(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := i%50 != 7 && i%50 != 11; (cur.State == StepIntent) != want {
			t.Errorf("step %d is %s in the store", i, cur.State)
		}
	}
}

// TestGroupCommitDropsAbandonedWrites: a write whose caller gave up before the committer took it is never
// applied; one already taken is waited for and applied.
func TestGroupCommitDropsAbandonedWrites(t *testing.T) {
	s, steps := groupFixture(t, 2)
	ctx := context.Background()
	// Hold the writer's only connection: the committer blocks on the first write it takes.
	conn, err := s.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := s.RecordIntent(ctx, Intent{StepID: steps[0].ID, Version: steps[0].Version, Owner: "bot"})
		first <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); len(s.group.queue) > 0 || !taken(s); {
		if time.Now().After(deadline) {
			t.Fatal("the committer never took the first write")
		}
		time.Sleep(time.Millisecond)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.RecordIntent(cctx, Intent{StepID: steps[1].ID, Version: steps[1].Version, Owner: "bot"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("abandoned write: %v, want its context's error", err)
	}
	conn.Close()
	if err := <-first; err != nil {
		t.Fatalf("the write taken before: %v", err)
	}
	for i, want := range []StepState{StepIntent, StepPending} {
		if cur, err := s.GetStep(ctx, steps[i].ID); err != nil || cur.State != want {
			t.Errorf("step %d: %s, %v; want %s", i, cur.State, err, want)
		}
	}
}

// taken: the committer holds a batch (it waits for the connection).
func taken(s *Store) bool {
	return s.w.Stats().WaitCount > 0
}
