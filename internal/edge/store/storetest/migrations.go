package storetest

import (
	"sync"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var migrationTests = []test{
	{"open twice keeps the schema and the data", func(t *testing.T, e *env) {
		want := store.LatestSchemaVersion()
		if want < 1 {
			t.Fatalf("LatestSchemaVersion() = %d", want)
		}
		if got, err := e.s.SchemaVersion(e.ctx); err != nil || got != want {
			t.Fatalf("SchemaVersion() = %d, %v; want %d", got, err, want)
		}
		if _, err := e.s.MarkDelivery(e.ctx, "before-reopen"); err != nil {
			t.Fatal(err)
		}
		e.s.Close()
		for i := 0; i < 2; i++ {
			s := e.open()
			if got, err := s.SchemaVersion(e.ctx); err != nil || got != want {
				t.Fatalf("reopen %d: SchemaVersion() = %d, %v; want %d", i, got, err, want)
			}
			first, err := s.MarkDelivery(e.ctx, "before-reopen")
			if err != nil || first {
				t.Fatalf("reopen %d: MarkDelivery of a delivery recorded before = %v, %v; want false (data kept)", i, first, err)
			}
			s.Close()
		}
	}},
	{"replicas opening a new database at once", func(t *testing.T, e *env) {
		dsn := e.newDB(t) // fresh: nobody migrated it yet
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := store.Open(e.ctx, dsn, store.WithClock(e.clock))
				if err != nil {
					errs <- err
					return
				}
				errs <- s.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("concurrent Open: %v", err)
			}
		}
		s, err := store.Open(e.ctx, dsn, store.WithClock(e.clock))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got, err := s.SchemaVersion(e.ctx); err != nil || got != store.LatestSchemaVersion() {
			t.Fatalf("SchemaVersion() = %d, %v", got, err)
		}
		// Each migration applied once: a second application of 0001 would have failed on CREATE TABLE.
		if _, err := s.MarkDelivery(e.ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}},
}
