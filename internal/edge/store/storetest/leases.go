package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

func claimable(t *testing.T, e *env, s *store.Store) []int64 {
	t.Helper()
	rs, err := s.ListClaimable(e.ctx)
	if err != nil {
		t.Fatalf("ListClaimable: %v", err)
	}
	var ids []int64
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func acquire(t *testing.T, e *env, s *store.Store, id int64, owner string, ttl time.Duration, want bool) {
	t.Helper()
	got, err := s.AcquireLease(e.ctx, id, owner, ttl)
	if err != nil || got != want {
		t.Fatalf("AcquireLease(%d, %s) = %v, %v; want %v", id, owner, got, err, want)
	}
}

var leaseTests = []test{
	{"finished rollouts keep their lease until released", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		other, _ := mustCreate(t, e, sample("org/fleet", "m2"))
		unreleased := func(owner string) []int64 {
			t.Helper()
			rs, err := e.s.ListUnreleased(e.ctx, owner)
			if err != nil {
				t.Fatalf("ListUnreleased: %v", err)
			}
			var ids []int64
			for _, x := range rs {
				ids = append(ids, x.ID)
			}
			return ids
		}
		acquire(t, e, e.s, r.ID, "a", 30*time.Second, true)
		acquire(t, e, e.s, other.ID, "b", 30*time.Second, true)
		if ids := unreleased("a"); len(ids) != 0 {
			t.Fatalf("ListUnreleased with nothing finished = %v", ids)
		}
		for _, x := range []store.Rollout{r, other} {
			if _, err := e.s.UpdateRollout(e.ctx, withState(x, store.RolloutSucceeded)); err != nil {
				t.Fatal(err)
			}
		}
		if ids := unreleased("a"); len(ids) != 1 || ids[0] != r.ID {
			t.Fatalf("ListUnreleased(a) = %v; want its own [%d], not b's live one", ids, r.ID)
		}
		if ids := claimable(t, e, e.s); len(ids) != 0 {
			t.Fatalf("finished rollouts are never claimable: %v", ids)
		}
		e.clock.Advance(31 * time.Second)
		if ids := unreleased("c"); len(ids) != 2 {
			t.Fatalf("ListUnreleased(c) after both leases expired = %v; want both", ids)
		}
		acquire(t, e, e.s, other.ID, "c", 30*time.Second, true)
		if err := e.s.ReleaseLease(e.ctx, other.ID, "c"); err != nil {
			t.Fatal(err)
		}
		if ids := unreleased("c"); len(ids) != 1 || ids[0] != r.ID {
			t.Fatalf("ListUnreleased after a release = %v; want [%d]", ids, r.ID)
		}
	}},
	{"contend, expire, take over", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		b := e.open() // the second replica
		if ids := claimable(t, e, e.s); len(ids) != 1 || ids[0] != r.ID {
			t.Fatalf("claimable before any lease = %v; want [%d]", ids, r.ID)
		}
		acquire(t, e, e.s, r.ID, "a", 30*time.Second, true)
		acquire(t, e, b, r.ID, "b", 30*time.Second, false)
		if ids := claimable(t, e, b); len(ids) != 0 {
			t.Fatalf("claimable while a holds the lease = %v", ids)
		}
		e.clock.Advance(20 * time.Second)
		if ok, err := e.s.RenewLease(e.ctx, r.ID, "a", 30*time.Second); err != nil || !ok {
			t.Fatalf("RenewLease(a) = %v, %v", ok, err)
		}
		e.clock.Advance(20 * time.Second) // 40 s after acquiring, 20 s after renewing
		acquire(t, e, b, r.ID, "b", 30*time.Second, false)
		if ok, err := b.RenewLease(e.ctx, r.ID, "b", 30*time.Second); err != nil || ok {
			t.Fatalf("RenewLease by a non-owner = %v, %v; want false", ok, err)
		}
		l, err := e.s.GetLease(e.ctx, r.ID)
		if err != nil || l.Owner != "a" || l.Epoch != 1 || !l.Live || !l.ExpiresAt.Equal(e.now().Add(10*time.Second)) {
			t.Fatalf("GetLease = %+v, %v; want a's, epoch 1, expiring in 10 s", l, err)
		}

		e.clock.Advance(11 * time.Second) // a is killed: no renewal
		if ids := claimable(t, e, b); len(ids) != 1 || ids[0] != r.ID {
			t.Fatalf("claimable after a's lease expired = %v; want [%d]", ids, r.ID)
		}
		if ok, err := e.s.RenewLease(e.ctx, r.ID, "a", 30*time.Second); err != nil || ok {
			t.Fatalf("RenewLease of an expired lease = %v, %v; want false", ok, err)
		}
		if l, err := b.GetLease(e.ctx, r.ID); err != nil || l.Owner != "a" || l.Live {
			t.Fatalf("GetLease of the expired lease = %+v, %v; want a's, not live", l, err)
		}
		acquire(t, e, b, r.ID, "b", 30*time.Second, true)
		acquire(t, e, e.s, r.ID, "a", 30*time.Second, false)
		if l, err := b.GetLease(e.ctx, r.ID); err != nil || l.Owner != "b" || l.Epoch != 2 || !l.AcquiredAt.Equal(e.now()) {
			t.Fatalf("lease after takeover = %+v, %v; want b's, epoch 2", l, err)
		}
		e.clock.Advance(time.Second)
		acquire(t, e, b, r.ID, "b", 30*time.Second, true) // re-acquiring extends
		if l, _ := b.GetLease(e.ctx, r.ID); l.Epoch != 2 || !l.ExpiresAt.Equal(e.now().Add(30*time.Second)) {
			t.Fatalf("lease re-acquired by its owner = %+v; want epoch 2, extended", l)
		}

		if err := e.s.ReleaseLease(e.ctx, r.ID, "a"); err != nil {
			t.Fatal(err)
		}
		if l, _ := b.GetLease(e.ctx, r.ID); l.Owner != "b" {
			t.Fatalf("a non-owner's release removed the lease: %+v", l)
		}
		if err := b.ReleaseLease(e.ctx, r.ID, "b"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.GetLease(e.ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetLease after release: %s; want ErrNotFound", fmtErr(err))
		}
		if ids := claimable(t, e, e.s); len(ids) != 1 {
			t.Fatalf("claimable after release = %v; want the rollout", ids)
		}
		acquire(t, e, e.s, r.ID, "a", 30*time.Second, true) // released: free at once
	}},
	{"finished rollouts are not claimable", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		r2, _ := mustCreate(t, e, sample("org/fleet", "m2"))
		r.State = store.RolloutSucceeded
		if _, err := e.s.UpdateRollout(e.ctx, r); err != nil {
			t.Fatal(err)
		}
		r2.State = store.RolloutAwaitingApproval
		if _, err := e.s.UpdateRollout(e.ctx, r2); err != nil {
			t.Fatal(err)
		}
		if ids := claimable(t, e, e.s); len(ids) != 1 || ids[0] != r2.ID {
			t.Fatalf("claimable = %v; want only the unfinished [%d]", ids, r2.ID)
		}
	}},
	{"missing rollout and bad arguments", func(t *testing.T, e *env) {
		if _, err := e.s.AcquireLease(e.ctx, 999, "a", time.Second); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("AcquireLease of a missing rollout: %s; want ErrNotFound", fmtErr(err))
		}
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		if _, err := e.s.AcquireLease(e.ctx, r.ID, "", time.Second); err == nil {
			t.Fatal("AcquireLease without owner succeeded")
		}
		if _, err := e.s.AcquireLease(e.ctx, r.ID, "a", 0); err == nil {
			t.Fatal("AcquireLease with ttl 0 succeeded")
		}
		if ok, err := e.s.RenewLease(e.ctx, r.ID, "a", time.Second); err != nil || ok {
			t.Fatalf("RenewLease without a lease = %v, %v; want false", ok, err)
		}
	}},
	{"20 replicas contend, one wins", func(t *testing.T, e *env) {
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		other := e.open()
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				s := e.s
				if i%2 == 1 {
					s = other
				}
				ok, err := s.AcquireLease(e.ctx, r.ID, fmt.Sprintf("replica-%d", i), time.Minute)
				if err != nil {
					t.Errorf("AcquireLease: %v", err)
				}
				if ok {
					wins.Add(1)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d replicas acquired the lease; want 1", wins.Load())
		}
	}},
	{"expiry by the store's real clock", func(t *testing.T, e *env) {
		// No WithClock: with PostgreSQL the server's now() decides, with SQLite the system clock.
		s, err := store.Open(e.ctx, e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r, _ := mustCreate(t, e, sample("org/fleet", "m1"))
		const ttl = 1500 * time.Millisecond
		start := time.Now()
		acquire(t, e, s, r.ID, "a", ttl, true)
		if ok, err := s.AcquireLease(e.ctx, r.ID, "b", ttl); err != nil || (ok && time.Since(start) < ttl) {
			t.Fatalf("b acquired a live lease (%v, %v)", ok, err)
		}
		for {
			ok, err := s.AcquireLease(e.ctx, r.ID, "b", ttl)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				break
			}
			if time.Since(start) > 10*ttl {
				t.Fatalf("the lease never expired")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if took := time.Since(start); took < ttl-100*time.Millisecond {
			t.Fatalf("b took the lease over after %s, before its ttl %s", took, ttl)
		}
	}},
}
