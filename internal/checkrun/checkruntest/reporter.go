// Package checkruntest holds a rollout.Reporter that publishes through package checkrun to a recording GitHub, for
// the rollout's tests: what the check-runs would show, transition by transition.
package checkruntest

import (
	"context"
	"fmt"
	"sync"

	"github.com/fleetwave/fleetwave/internal/checkrun"
	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// Transition is one publication that changed a check-run's status, conclusion or title.
type Transition struct {
	Name       string
	ExternalID string
	Status     string
	Conclusion string
	Title      string
}

func (t Transition) String() string {
	s := fmt.Sprintf("%s: %s", t.Name, t.Status)
	if t.Conclusion != "" {
		s += "/" + t.Conclusion
	}
	return s
}

// Reporter is a rollout.Reporter that presents rollouts as the App does (internal/checkrun), keeps every
// check-run in memory and records its transitions. Fail, when set, makes the write of check-runs it returns
// true for fail (to test that reporting is best effort).
type Reporter struct {
	Fail func(github.CheckRun) bool

	mu          sync.Mutex
	next        int64
	runs        map[int64]github.CheckRun
	history     map[string][]github.CheckRun // by external id
	transitions []Transition
	publishes   int
	install     map[string]int64 // external id → installation of its last write
}

// Publish implements rollout.Reporter with checkrun.Publisher over the Reporter's memory.
func (r *Reporter) Publish(ctx context.Context, s rollout.Snapshot, sent rollout.Sent) (rollout.CheckRunIDs, error) {
	return checkrun.NewPublisher(writer{r}).Publish(ctx, s, sent)
}

type writer struct{ r *Reporter }

// WriteCheckRun implements checkrun.Writer.
func (w writer) WriteCheckRun(_ context.Context, installationID int64, _ string, id int64, cr github.CheckRun) (int64, error) {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Fail != nil && r.Fail(cr) {
		return 0, fmt.Errorf("publishing check-run %s: injected failure", cr.Name)
	}
	if r.runs == nil {
		r.runs = map[int64]github.CheckRun{}
		r.history = map[string][]github.CheckRun{}
		r.install = map[string]int64{}
	}
	r.install[cr.ExternalID] = installationID
	r.publishes++
	prev, known := r.runs[id]
	if id == 0 || !known {
		r.next++
		id = r.next
		known = false
	}
	r.runs[id] = cr
	r.history[cr.ExternalID] = append(r.history[cr.ExternalID], cr)
	if !known || prev.Status != cr.Status || prev.Conclusion != cr.Conclusion {
		r.transitions = append(r.transitions, Transition{Name: cr.Name, ExternalID: cr.ExternalID, Status: cr.Status,
			Conclusion: cr.Conclusion, Title: Title(cr)})
	}
	return id, nil
}

// Installation returns the App installation the check-run with this external id was last written with.
func (r *Reporter) Installation(externalID string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.install[externalID]
}

// Title is a check-run's title ("" without an output).
func Title(cr github.CheckRun) string {
	if cr.Output == nil {
		return ""
	}
	return cr.Output.Title
}

// Summary is a check-run's summary ("" without an output).
func Summary(cr github.CheckRun) string {
	if cr.Output == nil {
		return ""
	}
	return cr.Output.Summary
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
func (r *Reporter) Latest(name string) (github.CheckRun, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best github.CheckRun
	var bestID int64
	for id, cr := range r.runs {
		if cr.Name == name && id > bestID {
			best, bestID = cr, id
		}
	}
	return best, bestID != 0
}

// Get returns a check-run by id.
func (r *Reporter) Get(id int64) (github.CheckRun, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cr, ok := r.runs[id]
	return cr, ok
}

// Publishes counts the successful check-run writes.
func (r *Reporter) Publishes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.publishes
}

// History returns every version published of the check-run with this external id, oldest first.
func (r *Reporter) History(externalID string) []github.CheckRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]github.CheckRun(nil), r.history[externalID]...)
}

// Check returns the last version published of the check-run with this external id.
func (r *Reporter) Check(externalID string) (github.CheckRun, bool) {
	h := r.History(externalID)
	if len(h) == 0 {
		return github.CheckRun{}, false
	}
	return h[len(h)-1], true
}
