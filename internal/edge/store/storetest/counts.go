package storetest

import (
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

var countTests = []test{
	{"by state", func(t *testing.T, e *env) {
		c, err := e.s.Counts(e.ctx)
		if err != nil || len(c.Rollouts)+len(c.Waves)+len(c.Steps) != 0 {
			t.Fatalf("empty store: %+v, %v", c, err)
		}
		mustCreate(t, e, sample("org/fleet", "m1"))
		_, steps := mustCreate(t, e, sample("org/fleet", "m2"))
		st := steps["web-eu"]
		if _, err := e.s.RecordIntent(e.ctx, store.Intent{StepID: st.ID, Version: st.Version}); err != nil {
			t.Fatal(err)
		}
		c, err = e.s.Counts(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var rollouts, waves, steps2 int64
		for _, n := range c.Rollouts {
			rollouts += n
		}
		for _, n := range c.Waves {
			waves += n
		}
		for _, n := range c.Steps {
			steps2 += n
		}
		if rollouts != 2 || waves != 4 || steps2 != 8 || c.Steps[store.StepIntent] != 1 {
			t.Fatalf("counts = %+v: want 2 rollouts, 4 waves, 8 steps of which 1 intent", c)
		}
	}},
}
