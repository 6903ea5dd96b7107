package isolate

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestSchedulerShares drives the fair scheduler step by step: "+A" queues a render of tenant A (and names it
// A1, A2, … in order; "+A.p": of its group p), "-A1" ends render A1 (it must hold a slot), "~B1" cancels B1 while it waits. After each
// step, the test compares which renders hold a slot with the step's want (in the order they were granted).
func TestSchedulerShares(t *testing.T) {
	tests := []struct {
		name            string
		capacity, share int
		steps           []string // "op want", want: granted renders, space-separated
	}{
		{"one tenant takes every worker when its share is all", 2, 2, []string{
			"+A A1", "+A A1 A2", "+A A1 A2", "-A1 A2 A3"}},
		{"a flood leaves a worker to the next tenant", 2, 1, []string{
			"+A A1", "+A A1", "+A A1", "+B A1 B1", "+B A1 B1", "-A1 B1 A2", "-B1 A2 B2"}},
		{"a freed worker goes to the tenant holding the fewest, ahead of the flood's queue", 2, 2, []string{
			"+A A1", "+A A1 A2", "+A A1 A2", "+A A1 A2", "+B A1 A2", "-A1 A2 B1", "-A2 B1 A3", "+C B1 A3", "-B1 A3 C1", "-A3 C1 A4"}},
		{"among equals the longest waiting goes first", 1, 1, []string{
			"+A A1", "+B A1", "+C A1", "-A1 B1", "-B1 C1", "-C1 "}},
		{"a render cancelled while waiting leaves the queue and its slot to the next", 1, 1, []string{
			"+A A1", "+B A1", "+C A1", "~B1 A1", "-A1 C1", "+B C1", "-C1 B2"}},
		{"a pull request behind another's queue goes next within its installation", 2, 1, []string{
			"+A.p A1", "+A.p A1", "+A.p A1", "+A.q A1", "-A1 A4", "-A4 A2", "-A2 A3"}},
		{"groups of different tenants: the tenant holding the fewest first", 2, 2, []string{
			"+A.p A1", "+A.p A1 A2", "+A.p A1 A2", "+B.q A1 A2", "+A.r A1 A2", "-A1 A2 B1", "-A2 B1 A4", "-B1 A4 A3", "-A4 A3 "}},
		{"a group's record starts afresh once it neither waits nor holds", 1, 1, []string{
			"+A.p A1", "-A1 ", "+A.p A2", "+A.q A2", "+A.p A2", "-A2 A3", "-A3 A4"}},
		{"three tenants on three workers with a share of two", 3, 2, []string{
			"+A A1", "+A A1 A2", "+A A1 A2", "+B A1 A2 B1", "+B A1 A2 B1", "+C A1 A2 B1", "-B1 A1 A2 C1", "-A1 A2 C1 B2", "-A2 C1 B2 A3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(tc.capacity, tc.share)
			byName := map[string]*waiter{}
			count := map[string]int{}
			var order []string // names, in queueing order
			var granted []string
			holding := map[string]bool{}
			for i, step := range tc.steps {
				op, want, _ := strings.Cut(step, " ")
				switch op[0] {
				case '+':
					tenant, group, _ := strings.Cut(op[1:], ".")
					count[tenant]++
					name := tenant + string(rune('0'+count[tenant]))
					byName[name] = s.enqueue(who{tenant, group})
					order = append(order, name)
				case '-':
					if !holding[op[1:]] {
						t.Fatalf("step %d %q: %s holds no slot", i, step, op[1:])
					}
					s.release(byName[op[1:]].who)
					holding[op[1:]] = false
				case '~':
					ctx, cancel := context.WithCancel(context.Background())
					cancel()
					if err := s.wait(ctx, byName[op[1:]]); err == nil {
						t.Fatalf("step %d %q: a cancelled wait succeeded", i, step)
					}
				}
				s.mu.Lock()
				for _, name := range order {
					if byName[name].granted && !holding[name] && !slices.Contains(granted, name) {
						granted = append(granted, name)
						holding[name] = true
					}
				}
				s.mu.Unlock()
				var got []string
				for _, name := range granted {
					if holding[name] {
						got = append(got, name)
					}
				}
				if g := strings.Join(got, " "); g != strings.TrimSpace(want) {
					t.Fatalf("step %d %q: holding %q, want %q", i, step, g, strings.TrimSpace(want))
				}
				if s.running > tc.capacity {
					t.Fatalf("step %d: %d running over a capacity of %d", i, s.running, tc.capacity)
				}
			}
			for tenant, n := range s.peak {
				if n > tc.share {
					t.Errorf("tenant %s held %d slots, over its share of %d", tenant, n, tc.share)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for w, g := range s.groups {
				if g.waiting < 0 || g.held < 0 || g.waiting == 0 && g.held == 0 {
					t.Errorf("group %v: %+v kept", w, *g)
				}
			}
		})
	}
}
