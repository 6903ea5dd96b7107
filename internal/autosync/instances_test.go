package autosync_test

import (
	"context"
	"slices"
	"testing"

	"github.com/fleetwave/fleetwave/internal/autosync"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
)

// TestHoldAcrossInstances: in a fleet of several Argo CD instances each app's automated sync is switched off and
// back on in its own instance only, even where two instances hold apps of the same name; an app of an instance
// the Holder was not given fails alone. PlannedApps keeps each app's instance.
func TestHoldAcrossInstances(t *testing.T) {
	ctx := context.Background()
	eu, us := newFixture(t), newFixture(t)
	h := &autosync.Holder{Store: eu.st, Instances: map[string]autosync.ArgoCD{"eu": eu.argo, "us": us.argo}}
	in := func(inst, n string) store.AppKey { return store.AppKey{Instance: inst, Namespace: "argocd", Name: n} }
	owner := autosync.Owner{Repo: "octo/fleet", PR: 1, Head: "h1"}
	res, err := h.Hold(ctx, owner, []store.AppKey{in("eu", "a"), in("us", "b"), in("ap", "c")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Switched, []store.AppKey{in("eu", "a"), in("us", "b")}) || len(res.Failed) != 1 || res.Failed[0].App != in("ap", "c") {
		t.Fatalf("Hold = %+v; want eu/a and us/b switched, ap/c failed", res)
	}
	if got := eu.on(t); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("eu on: %v; want b c (only a held there)", got)
	}
	if got := us.on(t); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("us on: %v; want a c (only b held there)", got)
	}
	res, err = h.Release(ctx, "octo/fleet", 1, "")
	if err != nil || !slices.Equal(res.Restored, []store.AppKey{in("eu", "a"), in("us", "b")}) {
		t.Fatalf("Release = %+v, %v; want eu/a and us/b restored", res, err)
	}
	if got, got2 := eu.on(t), us.on(t); !slices.Equal(got, []string{"a", "b", "c"}) || !slices.Equal(got2, []string{"a", "b", "c"}) {
		t.Errorf("after the release, on: eu %v, us %v; want a b c on both", got, got2)
	}

	pl := &plan.Plan{Waves: []plan.Wave{{Batches: []plan.Batch{{Apps: []plan.PlannedApp{
		{Instance: "eu", Name: "a", AutomatedSync: true}, {Name: "b", Namespace: "team", AutomatedSync: true}}}}}}}
	if got := autosync.PlannedApps(pl); !slices.Equal(got, []store.AppKey{in("eu", "a"), {Namespace: "team", Name: "b"}}) {
		t.Errorf("PlannedApps = %v", got)
	}
}
