package rollout

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// This file is the executor's side of a fleet of several Argo CD instances (#36): each app is synced, watched
// and read through the Argo CD of its plan entry's Instance ("" is the one Argo CD given to New), and no
// instance gets more sync operations in flight than its budget.

// DefaultInstanceBudget is the sync operations the executor keeps in flight on one instance at most unless
// WithInstanceBudgets says otherwise: Argo CD's application controller runs 10 operations at once per shard by
// default (--operation-processors, cmd/argocd-application-controller/commands/argocd_application_controller.go
// defaultOperationProcessors), so more would only queue inside Argo CD where the executor cannot see them.
const DefaultInstanceBudget = 10

// WithInstances adds the Argo CD instances of a fleet of several beside "" (the ArgoCD given to New, which may be
// nil when every app names its instance). An app whose instance is neither fails its step with a line naming the
// instance; it is never skipped. Giving instances turns on per-instance budgets (WithInstanceBudgets).
func WithInstances(m map[string]ArgoCD) Option {
	return func(o *options) {
		if o.instances == nil {
			o.instances = map[string]ArgoCD{}
		}
		maps.Copy(o.instances, m)
	}
}

// WithInstanceBudgets bounds the sync operations in flight per instance (default DefaultInstanceBudget for an
// instance not named). Budgets apply once the executor is given instances (WithInstances) or budgets: a
// one-instance executor without either keeps its one bound, WithConcurrency.
func WithInstanceBudgets(m map[string]int) Option {
	return func(o *options) {
		if o.budgets == nil {
			o.budgets = map[string]int{}
		}
		maps.Copy(o.budgets, m)
	}
}

// instanceSet is the executor's Argo CD instances and their budgets (semaphores); fixed after New.
type instanceSet struct {
	argos map[string]ArgoCD
	slots map[string]chan struct{} // nil: no per-instance budgets
	// multi: the executor was given instances or budgets: budgets apply and an unreachable instance holds its
	// apps (unreachable.go).
	multi bool
}

func newInstanceSet(def ArgoCD, o options) instanceSet {
	s := instanceSet{argos: map[string]ArgoCD{}}
	if def != nil {
		s.argos[""] = def
	}
	for name, a := range o.instances {
		if a != nil {
			s.argos[name] = a
		}
	}
	if o.instances == nil && o.budgets == nil {
		return s
	}
	s.multi = true
	s.slots = map[string]chan struct{}{}
	for name := range s.argos {
		n := o.budgets[name]
		if n <= 0 {
			n = DefaultInstanceBudget
		}
		s.slots[name] = make(chan struct{}, n)
	}
	return s
}

// names lists the configured instances, "" first.
func (s instanceSet) names() []string { return slices.Sorted(maps.Keys(s.argos)) }

// instanceError says an app's instance is not one the executor knows.
func instanceError(inst string) error {
	if inst == "" {
		return fmt.Errorf("no Argo CD is configured for apps without an instance (the fleet names its instances)")
	}
	return fmt.Errorf("the Argo CD instance %q is not configured", inst)
}

// argoFor is the Argo CD of an instance.
func (e *Executor) argoFor(inst string) (ArgoCD, error) {
	if a, ok := e.inst.argos[inst]; ok {
		return a, nil
	}
	return nil, instanceError(inst)
}

// acquireInstance takes one of the instance's budget slots (none to take without budgets).
func (e *Executor) acquireInstance(ctx context.Context, inst string) error {
	ch := e.inst.slots[inst]
	if ch == nil {
		return nil
	}
	select {
	case ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Executor) releaseInstance(inst string) {
	if ch := e.inst.slots[inst]; ch != nil {
		<-ch
	}
}

// groupByInstance groups steps by their app's instance, keeping their order; the instances come sorted.
func groupByInstance(steps []store.AppStep) ([]string, map[string][]store.AppStep) {
	by := map[string][]store.AppStep{}
	for _, s := range steps {
		by[s.App.Instance] = append(by[s.App.Instance], s)
	}
	return slices.Sorted(maps.Keys(by)), by
}
