// Package rollouttest holds test doubles for package rollout's ports.
package rollouttest

import (
	"context"
	"fmt"
	"sync"

	"github.com/fleetwave/fleetwave/internal/rollout"
)

// Transition is one publication that changed a check-run's status, conclusion or title.
type Transition struct {
	Name       string
	ExternalID string
	Status     rollout.CheckStatus
	Conclusion rollout.Conclusion
	Title      string
}

func (t Transition) String() string {
	s := fmt.Sprintf("%s: %s", t.Name, t.Status)
	if t.Conclusion != "" {
		s += "/" + string(t.Conclusion)
	}
	return s
}

// Reporter is a rollout.Reporter that keeps every check-run in memory and records its transitions. Fail, when
// set, makes Publish fail for check-runs it returns true for (to test that reporting is best effort).
type Reporter struct {
	Fail func(rollout.CheckRun) bool

	mu          sync.Mutex
	next        int64
	runs        map[int64]rollout.CheckRun
	history     map[string][]rollout.CheckRun // by external id
	transitions []Transition
	publishes   int
}

// Publish implements rollout.Reporter.
func (r *Reporter) Publish(_ context.Context, cr rollout.CheckRun) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Fail != nil && r.Fail(cr) {
		return 0, fmt.Errorf("publishing check-run %s: injected failure", cr.Name)
	}
	if r.runs == nil {
		r.runs = map[int64]rollout.CheckRun{}
		r.history = map[string][]rollout.CheckRun{}
	}
	r.publishes++
	id := cr.ID
	prev, known := r.runs[id]
	if id == 0 || !known {
		r.next++
		id = r.next
		known = false
	}
	cr.ID = id
	r.runs[id] = cr
	r.history[cr.ExternalID] = append(r.history[cr.ExternalID], cr)
	if !known || prev.Status != cr.Status || prev.Conclusion != cr.Conclusion {
		r.transitions = append(r.transitions, Transition{Name: cr.Name, ExternalID: cr.ExternalID, Status: cr.Status,
			Conclusion: cr.Conclusion, Title: cr.Title})
	}
	return id, nil
}

// Transitions returns the status changes of the check-runs named name (all when name is ""), in order.
func (r *Reporter) Transitions(name string) []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Transition
	for _, t := range r.transitions {
		if name == "" || t.Name == name {
			out = append(out, t)
		}
	}
	return out
}

// Latest returns the last content published for the check-run named name (of any rollout: the newest id).
func (r *Reporter) Latest(name string) (rollout.CheckRun, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best rollout.CheckRun
	found := false
	for id, cr := range r.runs {
		if cr.Name == name && (!found || id > best.ID) {
			best, found = cr, true
		}
	}
	return best, found
}

// Get returns a check-run by id.
func (r *Reporter) Get(id int64) (rollout.CheckRun, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cr, ok := r.runs[id]
	return cr, ok
}

// Publishes counts the successful Publish calls.
func (r *Reporter) Publishes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.publishes
}

// History returns every version published of the check-run with this external id, oldest first.
func (r *Reporter) History(externalID string) []rollout.CheckRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rollout.CheckRun(nil), r.history[externalID]...)
}

// Check returns the last version published of the check-run with this external id.
func (r *Reporter) Check(externalID string) (rollout.CheckRun, bool) {
	h := r.History(externalID)
	if len(h) == 0 {
		return rollout.CheckRun{}, false
	}
	return h[len(h)-1], true
}
