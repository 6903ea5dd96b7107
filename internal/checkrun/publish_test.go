package checkrun

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/github"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// writer records writes and hands out ids from 500; fail refuses runs by name.
type writer struct {
	writes []string // name@id
	next   int64
	fail   string
}

func (w *writer) WriteCheckRun(_ context.Context, installationID int64, repo string, id int64, run github.CheckRun) (int64, error) {
	if repo != "org/gitops" || installationID != 9 {
		return 0, fmt.Errorf("wrong repository or installation: %s, %d", repo, installationID)
	}
	if run.Name == w.fail {
		return 0, errors.New("refused")
	}
	if id == 0 {
		w.next++
		id = 499 + w.next
	}
	w.writes = append(w.writes, run.Name)
	return id, nil
}

// A snapshot is written once per change: new check-runs report their ids, unchanged ones are not sent again,
// and a refused one is retried by the next publication.
func TestPublishWritesWhatChanged(t *testing.T) {
	ctx := context.Background()
	s := midway()
	s.Rollout.CheckRunID, s.Waves[1].CheckRunID = 0, 0 // the rollout's and production's are not created yet
	s.Rollout.InstallationID = 9
	w := &writer{fail: CheckWavePrefix + "canary"}
	p := NewPublisher(w)
	sent := rollout.Sent{}

	ids, err := p.Publish(ctx, s, sent)
	if err == nil || !strings.Contains(err.Error(), `check-run "fleetwave/wave: canary": refused`) {
		t.Errorf("first publication: err = %v; want canary's refusal", err)
	}
	if ids.Rollout != 500 || ids.Waves[1] != 501 || len(ids.Waves) != 1 || ids.Rollback != 0 {
		t.Errorf("created ids = %+v; want rollout 500, production 501", ids)
	}
	if got := strings.Join(w.writes, ", "); got != "fleetwave/rollout, fleetwave/wave: production" {
		t.Errorf("writes = %s", got)
	}

	w.fail, w.writes = "", nil
	s.Rollout.CheckRunID, s.Waves[1].CheckRunID = ids.Rollout, ids.Waves[1]
	if ids, err = p.Publish(ctx, s, sent); err != nil || ids.Rollout != 0 || len(ids.Waves) != 0 {
		t.Fatalf("second publication: %+v, %v; want no new check-run, no error", ids, err)
	}
	if got := strings.Join(w.writes, ", "); got != "fleetwave/wave: canary" {
		t.Errorf("second publication wrote %q; want only the refused canary", got)
	}

	w.writes = nil
	s.Waves[1].State = store.WaveRunning
	if _, err := p.Publish(ctx, s, sent); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.writes, ", "); got != "fleetwave/rollout, fleetwave/wave: production" {
		t.Errorf("after production started, wrote %q; want the rollout and production", got)
	}
}

func TestWithOutput(t *testing.T) {
	for _, tt := range []struct {
		title, summary, text string
		want                 *github.CheckOutput
	}{
		{"", "", "", nil},
		{"T", "", "", &github.CheckOutput{Title: "T", Summary: "T"}},
		{"", "S", "X", &github.CheckOutput{Title: "fleetwave/rollout", Summary: "S", Text: "X"}},
		{"T", "S", "X", &github.CheckOutput{Title: "T", Summary: "S", Text: "X"}},
	} {
		got := withOutput(github.CheckRun{Name: CheckRollout}, tt.title, tt.summary, tt.text).Output
		if (got == nil) != (tt.want == nil) || got != nil && !reflect.DeepEqual(*got, *tt.want) {
			t.Errorf("withOutput(%q, %q, %q) = %+v; want %+v", tt.title, tt.summary, tt.text, got, tt.want)
		}
	}
}
