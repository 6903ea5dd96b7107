package autosync

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// Store is what the Holder records holds in and asks about rollouts: *store.Store.
type Store interface {
	PutHolds(ctx context.Context, hs []store.Hold) error
	ListHolds(ctx context.Context, f store.HoldFilter) ([]store.Hold, error)
	DeleteHolds(ctx context.Context, hs []store.Hold) error
	ActiveRolloutsTouching(ctx context.Context, repo string, apps []store.AppKey) ([]store.Rollout, error)
	ListSteps(ctx context.Context, rolloutID int64, f store.StepFilter) ([]store.AppStep, error)
}

// Holder holds apps' automated sync off for a change that has not merged yet, and lets go of it.
type Holder struct {
	Argo  ArgoCD
	Store Store
	// Instances are the Argo CD of each instance of a fleet of several, by name: an app is read, switched and
	// restored through its own instance's (store.AppKey.Instance); Argo is the instance "".
	Instances map[string]ArgoCD
}

// argo is the Argo CD of an app's instance (nil when it has none).
func (h *Holder) argo(instance string) ArgoCD {
	if a, ok := h.Instances[instance]; ok {
		return a
	}
	if instance == "" {
		return h.Argo
	}
	return nil
}

// errNoInstance is an app whose instance the Holder was not given.
func errNoInstance(instance string) error {
	return fmt.Errorf("argo cd instance %q is not configured", instance)
}

// Owner is who holds: a pull request at a head, a merge group of a pull request (Group: its head is the
// group's), or (PR 0) a terminal's `rollout prepare` of a head.
type Owner struct {
	Repo string
	PR   int
	Head string
	// Group marks a merge group's holds: they add to the pull request's (its own head's stay), and go with the
	// pull request's when it closes, or to the rollout of the group's head.
	Group bool
}

func (o Owner) String() string {
	if o.PR == 0 {
		return fmt.Sprintf("%s at %.7s", o.Repo, o.Head)
	}
	return fmt.Sprintf("%s#%d at %.7s", o.Repo, o.PR, o.Head)
}

// AppError is one app the Holder could not switch (off or back on).
type AppError struct {
	App store.AppKey
	Err error
}

func (e AppError) Error() string { return e.App.String() + ": " + e.Err.Error() }

// Result is what Hold and Release did.
type Result struct {
	Held     []store.AppKey // off and recorded for the owner
	Switched []store.AppKey // switched off by this call (the others were off already)
	Restored []store.AppKey // switched back on: their last holder let go
	Kept     []store.AppKey // let go of, but still off: another hold or an unfinished rollout needs them
	Failed   []AppError
}

// Hold records owner's holds of apps, then switches each app's automated sync off (an app already off is left
// as it is), and lets go of owner's other holds (an earlier head planning apps this one does not, Release) —
// for a pull request's head only: a merge group's and a prepare's holds only add.
// The hold is recorded before the switch, so a crash in between leaves a hold of an app still on, which the
// next Hold switches and a Release ignores. err is a store failure; apps Argo CD refused are in Failed.
func (h *Holder) Hold(ctx context.Context, o Owner, apps []store.AppKey) (Result, error) {
	var res Result
	if o.Repo == "" || o.Head == "" {
		return res, errors.New("holding automated sync off: the repository and head are required")
	}
	hs := make([]store.Hold, 0, len(apps))
	for _, k := range apps {
		hs = append(hs, store.Hold{Repo: o.Repo, PR: o.PR, Head: o.Head, App: k, Group: o.Group})
	}
	if err := h.Store.PutHolds(ctx, hs); err != nil {
		return res, err
	}
	for _, k := range apps {
		argo := h.argo(k.Instance)
		if argo == nil {
			res.Failed = append(res.Failed, AppError{k, errNoInstance(k.Instance)})
			continue
		}
		app, err := argo.GetApplication(ctx, Name(k), "")
		if err != nil {
			res.Failed = append(res.Failed, AppError{k, fmt.Errorf("reading the app: %w", err)})
			continue
		}
		if On(app) {
			if _, err := Off(ctx, argo, Name(k), app); err != nil {
				res.Failed = append(res.Failed, AppError{k, err})
				continue
			}
			res.Switched = append(res.Switched, k)
		}
		res.Held = append(res.Held, k)
	}
	if o.PR == 0 || o.Group {
		return res, nil
	}
	rel, err := h.release(ctx, store.HoldFilter{Repo: o.Repo, PRs: []int{o.PR}}, func(x store.Hold) bool {
		return x.Group || x.Head == o.Head && slices.Contains(apps, x.App)
	})
	res.Restored, res.Kept = rel.Restored, rel.Kept
	res.Failed = append(res.Failed, rel.Failed...)
	return res, err
}

// Release lets go of the holds of a pull request (pr > 0, any head) or of a terminal prepare (pr 0, head), and
// switches each app back on as it was unless another hold or an unfinished rollout still needs it off.
func (h *Holder) Release(ctx context.Context, repo string, pr int, head string) (Result, error) {
	f := store.HoldFilter{Repo: repo, PRs: []int{pr}}
	if pr == 0 {
		if head == "" {
			return Result{}, errors.New("releasing a prepare's automated sync holds: its head is required")
		}
		f.Head = head
	}
	return h.release(ctx, f, nil)
}

// release deletes the holds f selects (but those keep keeps), then restores the apps nobody else holds.
func (h *Holder) release(ctx context.Context, f store.HoldFilter, keep func(store.Hold) bool) (Result, error) {
	var res Result
	hs, err := h.Store.ListHolds(ctx, f)
	if err != nil {
		return res, err
	}
	var drop []store.Hold
	var apps, still []store.AppKey
	for _, x := range hs {
		if keep != nil && keep(x) {
			still = append(still, x.App)
			continue
		}
		drop = append(drop, x)
	}
	for _, x := range drop {
		if !slices.Contains(apps, x.App) && !slices.Contains(still, x.App) {
			apps = append(apps, x.App) // the owner still holds the others
		}
	}
	if len(drop) == 0 {
		return res, nil
	}
	if err := h.Store.DeleteHolds(ctx, drop); err != nil {
		return res, err
	}
	if len(h.Instances) == 0 {
		return RestoreUnheld(ctx, h.Argo, h.Store, apps, nil, nil)
	}
	// Each instance's apps are restored through it, in the order the instances first appear.
	var order []string
	byInstance := map[string][]store.AppKey{}
	for _, k := range apps {
		if _, ok := byInstance[k.Instance]; !ok {
			order = append(order, k.Instance)
		}
		byInstance[k.Instance] = append(byInstance[k.Instance], k)
	}
	for _, inst := range order {
		argo := h.argo(inst)
		if argo == nil {
			for _, k := range byInstance[inst] {
				res.Failed = append(res.Failed, AppError{k, errNoInstance(inst)})
			}
			continue
		}
		r, err := RestoreUnheld(ctx, argo, h.Store, byInstance[inst], nil, nil)
		res.Restored, res.Kept = append(res.Restored, r.Restored...), append(res.Kept, r.Kept...)
		res.Failed = append(res.Failed, r.Failed...)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// RestoreUnheld switches back on, as they were, those of apps that fleetwave switched off and that no hold and
// no unfinished rollout (but those ignore names) needs off any more; the others are Kept. intent, when given, is
// called with each app and its original setting (Annotation) just before its patch.
func RestoreUnheld(ctx context.Context, a ArgoCD, st Store, apps []store.AppKey, ignore func(store.Rollout) bool,
	intent func(k store.AppKey, original string)) (Result, error) {
	var res Result
	if len(apps) == 0 {
		return res, nil
	}
	switched, err := ListSwitched(ctx, a)
	if err != nil {
		return res, err
	}
	// Only the apps fleetwave switched off are asked about (a large plan usually has none).
	var todo []store.AppKey
	byKey := map[store.AppKey]int{}
	for _, k := range apps {
		i := slices.IndexFunc(switched, func(x v1alpha1.Application) bool {
			return x.Name == k.Name && (x.Namespace == k.Namespace || x.Namespace == "" || k.Namespace == "")
		})
		if i >= 0 {
			todo = append(todo, k)
			byKey[k] = i
		}
	}
	if len(todo) == 0 {
		return res, nil
	}
	busy, err := Busy(ctx, st, todo, ignore)
	if err != nil {
		return res, err
	}
	for _, k := range todo {
		if busy[k] {
			res.Kept = append(res.Kept, k)
			continue
		}
		i := byKey[k]
		if intent != nil {
			intent(k, switched[i].Annotations[Annotation])
		}
		if _, err := Restore(ctx, a, Name(k), &switched[i]); err != nil {
			res.Failed = append(res.Failed, AppError{k, err})
			continue
		}
		res.Restored = append(res.Restored, k)
	}
	return res, nil
}

// Busy says which of apps a hold or an unfinished rollout (but those ignore names) needs off.
func Busy(ctx context.Context, st Store, apps []store.AppKey, ignore func(store.Rollout) bool) (map[store.AppKey]bool, error) {
	busy := map[store.AppKey]bool{}
	hs, err := st.ListHolds(ctx, store.HoldFilter{}) // few; no query with an OR per app
	if err != nil {
		return nil, err
	}
	for _, x := range hs {
		if slices.Contains(apps, x.App) {
			busy[x.App] = true
		}
	}
	rs, err := st.ActiveRolloutsTouching(ctx, "", apps)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return busy, nil
	}
	for _, r := range rs {
		if ignore != nil && ignore(r) {
			continue
		}
		steps, err := st.ListSteps(ctx, r.ID, store.StepFilter{})
		if err != nil {
			return nil, err
		}
		for _, s := range steps {
			if slices.Contains(apps, s.App) {
				busy[s.App] = true
			}
		}
	}
	return busy, nil
}

// TakeOver removes the holds a rollout of a merge takes over when it starts: those of its pull request (pr > 0)
// and those of its merge commit (a terminal prepare of the same head, a merge group's). The rollout's own steps
// then keep the apps off until it ends.
func TakeOver(ctx context.Context, st Store, repo string, pr int, mergeSHA string) ([]store.Hold, error) {
	var hs []store.Hold
	if pr > 0 {
		x, err := st.ListHolds(ctx, store.HoldFilter{Repo: repo, PRs: []int{pr}})
		if err != nil {
			return nil, err
		}
		hs = x
	}
	if mergeSHA != "" {
		x, err := st.ListHolds(ctx, store.HoldFilter{Repo: repo, Head: mergeSHA})
		if err != nil {
			return nil, err
		}
		for _, y := range x {
			if !slices.Contains(hs, y) {
				hs = append(hs, y)
			}
		}
	}
	if err := st.DeleteHolds(ctx, hs); err != nil {
		return nil, err
	}
	return hs, nil
}
