package app

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/edge/gitcache"
)

// flakyClones answers Fetch with errs in turn, then success.
type flakyClones struct {
	errs  []error
	calls int
}

func (f *flakyClones) Fetch(context.Context, int64, string, []string, []string) (string, error) {
	f.calls++
	if f.calls <= len(f.errs) {
		return "", f.errs[f.calls-1]
	}
	return "/repo", nil
}

func (f *flakyClones) ReadFile(context.Context, string, string, string) ([]byte, error) {
	return nil, errors.New("unused")
}

// TestFetchMergeWaitsForTheCommit: a merge commit the remote does not serve yet (GitHub announced the merge
// before every replica has it; the e2e trials of #32 hit it) is fetched again after a pause, a bounded number of
// times; any other error is not retried.
func TestFetchMergeWaitsForTheCommit(t *testing.T) {
	notYet := fmt.Errorf("fetching https://github.com/o/r.git: commit abc %w: not our ref", gitcache.ErrCommitNotFound)
	other := errors.New("fetching https://github.com/o/r.git: authentication failed")
	waits := []time.Duration{0, 0, 0}
	for _, tc := range []struct {
		name      string
		errs      []error
		wantErr   error
		wantCalls int
	}{
		{"served at once", nil, nil, 1},
		{"served on the third try", []error{notYet, notYet}, nil, 3},
		{"never served: the error after every wait", []error{notYet, notYet, notYet, notYet, notYet}, gitcache.ErrCommitNotFound, 4},
		{"another error: not retried", []error{other}, other, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &flakyClones{errs: tc.errs}
			a := &App{clones: c, fetchWaits: waits}
			dir, err := a.fetchMerge(context.Background(), mergeTarget{repo: &gh.Repository{}, mergeSHA: "abc"})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && dir != "/repo") {
				t.Errorf("fetchMerge = %q, %v; want error %v", dir, err, tc.wantErr)
			}
			if c.calls != tc.wantCalls {
				t.Errorf("%d fetches, want %d", c.calls, tc.wantCalls)
			}
		})
	}
}
