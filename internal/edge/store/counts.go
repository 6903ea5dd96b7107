package store

import (
	"context"
	"fmt"
)

// Counts are how many rollouts, waves and app steps the store holds in each state: the fleet view's and the
// metrics' totals, read in three small grouped queries (the state columns are indexed or small).
type Counts struct {
	Rollouts map[RolloutState]int64
	Waves    map[WaveState]int64
	Steps    map[StepState]int64
}

// Counts counts the rollouts, waves and app steps by state.
func (s *Store) Counts(ctx context.Context) (Counts, error) {
	c := Counts{Rollouts: map[RolloutState]int64{}, Waves: map[WaveState]int64{}, Steps: map[StepState]int64{}}
	for _, t := range []struct {
		table string
		add   func(state string, n int64)
	}{
		{"rollouts", func(st string, n int64) { c.Rollouts[RolloutState(st)] = n }},
		{"waves", func(st string, n int64) { c.Waves[WaveState(st)] = n }},
		{"app_steps", func(st string, n int64) { c.Steps[StepState(st)] = n }},
	} {
		rows, err := s.r.QueryContext(ctx, "SELECT state, COUNT(*) FROM "+t.table+" GROUP BY state")
		if err != nil {
			return Counts{}, fmt.Errorf("counting %s: %w", t.table, err)
		}
		for rows.Next() {
			var st string
			var n int64
			if err := rows.Scan(&st, &n); err != nil {
				rows.Close()
				return Counts{}, fmt.Errorf("counting %s: %w", t.table, err)
			}
			t.add(st, n)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return Counts{}, fmt.Errorf("counting %s: %w", t.table, err)
		}
	}
	return c, nil
}
