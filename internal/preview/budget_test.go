package preview

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render"
)

// hangingRenderer renders nothing: each render waits for its context to end, as a render at its time cap does.
type hangingRenderer struct{}

// Fetches: it fetches nothing itself.
func (hangingRenderer) Fetches(*v1alpha1.ApplicationSource) bool { return false }

func (hangingRenderer) Render(ctx context.Context, req render.Request) (*render.Result, error) {
	<-ctx.Done()
	return nil, &render.Error{App: req.App.Name, Err: ctx.Err()}
}

// TestRenderBudget: the change's renders share one time budget; past it, the render in progress and every later
// one fail at once with one line naming the rule, and the preview still ends with a report.
func TestRenderBudget(t *testing.T) {
	dir := exampleRepo(t)
	const budget = 300 * time.Millisecond
	start := time.Now()
	rep, err := reportOf(Run(context.Background(), hangingRenderer{}, Input{RepoDir: dir, Base: "main", Head: "change", RenderBudget: budget}))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > budget+5*time.Second {
		t.Errorf("the preview took %s with a %s budget", took, budget)
	}
	refused := 0
	for _, a := range rep.Apps {
		if strings.Contains(a.Error, "refused (pr-budget)") {
			refused++
		}
	}
	if refused == 0 {
		t.Fatalf("no app refused by the budget: %+v", rep.Summary)
	}
}
