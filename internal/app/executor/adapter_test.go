package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/app"
	"github.com/fleetwave/fleetwave/internal/command"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/plan"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// fakeRollouts is a Rollouts made of function fields; it records the calls it gets, as "method(args)".
type fakeRollouts struct {
	calls    []string
	submit   func(rollout.Request) (store.Rollout, error)
	latest   func(repo string, pr int) (store.Rollout, error)
	commands func(name string, id int64) (string, error) // pause, resume, abort, approve, rollback
}

func (f *fakeRollouts) Submit(_ context.Context, req rollout.Request) (store.Rollout, error) {
	f.calls = append(f.calls, fmt.Sprintf("submit(%s,%d,%s)", req.Repo, req.PRNumber, req.MergeSHA))
	return f.submit(req)
}

func (f *fakeRollouts) Latest(_ context.Context, repo string, pr int) (store.Rollout, error) {
	f.calls = append(f.calls, fmt.Sprintf("latest(%s,%d)", repo, pr))
	return f.latest(repo, pr)
}

func (f *fakeRollouts) command(name string, id int64, args ...string) (string, error) {
	f.calls = append(f.calls, fmt.Sprintf("%s(%d,%s)", name, id, strings.Join(args, ",")))
	return f.commands(name, id)
}

func (f *fakeRollouts) Pause(_ context.Context, id int64, actor string) (string, error) {
	return f.command("pause", id, actor)
}

func (f *fakeRollouts) Resume(_ context.Context, id int64, actor string) (string, error) {
	return f.command("resume", id, actor)
}

func (f *fakeRollouts) AbortWith(_ context.Context, id int64, actor string, o rollout.AbortOptions) (string, error) {
	if o.KeepAutomatedOff {
		return f.command("abort-keep-automated-off", id, actor)
	}
	return f.command("abort", id, actor)
}

func (f *fakeRollouts) Approve(_ context.Context, id int64, wave, actor string) (string, error) {
	return f.command("approve", id, wave, actor)
}

func (f *fakeRollouts) ApprovalWave(_ context.Context, id int64, wave string) (string, error) {
	return f.command("approvalWave", id, wave)
}

func (f *fakeRollouts) Rollback(_ context.Context, id int64, target, actor string) (string, error) {
	return f.command("rollback", id, target, actor)
}

const (
	repo     = "octo/fleet"
	mergeSHA = "4f1c9e0b2a7d3c5e8f6a1b0d9c2e4f7a3b5d8c1e"
)

func TestOnMergeSubmitsThePlan(t *testing.T) {
	pl := &plan.Plan{}
	var got rollout.Request
	f := &fakeRollouts{submit: func(req rollout.Request) (store.Rollout, error) {
		got = req
		return store.Rollout{ID: 7, State: store.RolloutPending}, nil
	}}
	a := New(f, nil)
	policy := plan.DefaultPolicy()
	policy.AutomatedSync = plan.AutomatedSyncDisableDuringRollout
	policy.OnConflict, policy.Prune = plan.ConflictSupersede, true
	err := a.OnMerge(context.Background(), app.Merge{
		InstallationID: 99, Repo: repo, PRNumber: 3, MergeSHA: mergeSHA, BaseSHA: "base", Plan: pl, Policy: policy,
		PRPlanDigest: "sha256:shown", RepoURL: "https://github.com/octo/fleet.git", Sender: "alice", Branch: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := rollout.Request{Repo: repo, PRNumber: 3, MergeSHA: mergeSHA, BaseSHA: "base", InstallationID: 99, Plan: pl,
		PRPlanDigest: "sha256:shown", AutomatedSync: plan.AutomatedSyncDisableDuringRollout,
		OnConflict: rollout.ConflictSupersede, Prune: true, RepoURL: "https://github.com/octo/fleet.git", Branch: "main",
		MergedBy: "alice"}
	if got != want {
		t.Errorf("request\n got %+v\nwant %+v", got, want)
	}
}

func TestOnMergeErrors(t *testing.T) {
	boom := errors.New("store down")
	f := &fakeRollouts{submit: func(rollout.Request) (store.Rollout, error) { return store.Rollout{}, boom }}
	a := New(f, nil)
	if err := a.OnMerge(context.Background(), app.Merge{Repo: repo, MergeSHA: mergeSHA}); err == nil || len(f.calls) != 0 {
		t.Errorf("merge without a plan: err %v, calls %v; want an error and no Submit", err, f.calls)
	}
	err := a.OnMerge(context.Background(), app.Merge{Repo: repo, MergeSHA: mergeSHA, Plan: &plan.Plan{}})
	if !errors.Is(err, boom) || err.Error() != "submitting the rollout of octo/fleet@4f1c9e0: store down" {
		t.Errorf("err = %v", err)
	}
}

func TestOnCommand(t *testing.T) {
	notFound := fmt.Errorf("finding the rollout of %s#3: %w", repo, store.ErrNotFound)
	boom := errors.New("connection reset")
	tests := []struct {
		name      string
		req       app.CommandRequest
		latest    func(string, int) (store.Rollout, error)
		result    func(string, int64) (string, error)
		wantCalls string
		wantReply string
		wantErr   error
	}{
		{name: "slash command acts on the PR's newest rollout",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Pause, Actor: "alice"},
			wantCalls: "latest(octo/fleet,3) pause(12,alice)", wantReply: "@alice: done pause #12"},
		{name: "resume",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Resume, Actor: "alice"},
			wantCalls: "latest(octo/fleet,3) resume(12,alice)", wantReply: "@alice: done resume #12"},
		{name: "abort",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Abort, Actor: "alice"},
			wantCalls: "latest(octo/fleet,3) abort(12,alice)", wantReply: "@alice: done abort #12"},
		{name: "abort keep-automated-off",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Abort, Args: []string{"keep-automated-off"}, Actor: "alice"},
			wantCalls: "latest(octo/fleet,3) abort-keep-automated-off(12,alice)", wantReply: "@alice: done abort-keep-automated-off #12"},
		{name: "approve names its wave",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Approve, Target: "eu west", Actor: "bob"},
			wantCalls: "latest(octo/fleet,3) approve(12,eu west,bob)", wantReply: "@bob: done approve #12"},
		{name: "rollback defaults to all",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Rollback, Actor: "bob"},
			wantCalls: "latest(octo/fleet,3) rollback(12,all,bob)", wantReply: "@bob: done rollback #12"},
		{name: "a button acts on the rollout its check run names",
			req: app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Approve, Target: "canary", Actor: "bob",
				CheckRunExternalID: "fleetwave:41:wave:canary", HeadSHA: mergeSHA},
			wantCalls: "approve(41,canary,bob)", wantReply: "@bob: done approve #41"},
		{name: "a button on a merge without a pull request",
			req: app.CommandRequest{Repo: repo, Command: command.Rollback, Target: "all", Actor: "bob",
				CheckRunExternalID: "fleetwave:41:rollback"},
			wantCalls: "rollback(41,all,bob)", wantReply: "@bob: done rollback #41"},
		{name: "an external id that is not a rollout's, no pull request",
			req:       app.CommandRequest{Repo: repo, Command: command.Pause, Actor: "bob", CheckRunExternalID: "fleetwave-pr:3"},
			wantReply: "@bob: `/pause`: this check run names no rollout; nothing was done."},
		{name: "no rollout for the pull request yet",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Pause, Actor: "alice"},
			latest:    func(string, int) (store.Rollout, error) { return store.Rollout{}, notFound },
			wantCalls: "latest(octo/fleet,3)", wantReply: "@alice: `/pause`: this pull request has no rollout (yet); nothing was done."},
		{name: "a refusal is the reply, not a failure",
			req: app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Pause, Actor: "alice"},
			result: func(string, int64) (string, error) {
				return "", fmt.Errorf("%w: rollout #12 is already paused", rollout.ErrRefused)
			},
			wantCalls: "latest(octo/fleet,3) pause(12,alice)", wantReply: "@alice: refused: rollout #12 is already paused"},
		{name: "a rollout a button names that does not exist",
			req: app.CommandRequest{Repo: repo, Command: command.Abort, Actor: "bob", CheckRunExternalID: "fleetwave:404"},
			result: func(string, int64) (string, error) {
				return "", fmt.Errorf("reading rollout 404: %w", store.ErrNotFound)
			},
			wantCalls: "abort(404,bob)", wantReply: "@bob: `/abort`: rollout #404 does not exist."},
		{name: "a failure is returned for the generic reply",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Resume, Actor: "alice"},
			result:    func(string, int64) (string, error) { return "", boom },
			wantCalls: "latest(octo/fleet,3) resume(12,alice)", wantErr: boom},
		{name: "finding the rollout fails",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Resume, Actor: "alice"},
			latest:    func(string, int) (store.Rollout, error) { return store.Rollout{}, boom },
			wantCalls: "latest(octo/fleet,3)", wantErr: boom},
		{name: "not a rollout command",
			req:       app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Plan, Actor: "alice"},
			wantCalls: "latest(octo/fleet,3)", wantReply: "@alice: `/plan` is not a rollout command."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRollouts{
				latest: tt.latest,
				commands: func(name string, id int64) (string, error) {
					return fmt.Sprintf("done %s #%d", name, id), nil
				},
			}
			if f.latest == nil {
				f.latest = func(string, int) (store.Rollout, error) { return store.Rollout{ID: 12, Repo: repo}, nil }
			}
			if tt.result != nil {
				f.commands = tt.result
			}
			reply, err := New(f, nil).OnCommand(context.Background(), tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || reply != "" {
					t.Errorf("reply %q, err %v; want no reply and %v", reply, err, tt.wantErr)
				}
			} else if err != nil || reply != tt.wantReply {
				t.Errorf("reply %q, err %v; want %q", reply, err, tt.wantReply)
			}
			if got := strings.Join(f.calls, " "); got != tt.wantCalls {
				t.Errorf("calls %q, want %q", got, tt.wantCalls)
			}
		})
	}
}

// TestApprovalWave: the wave an approval is for is resolved on the rollout the request names, by the executor's
// rule; a refusal is the reply.
func TestApprovalWave(t *testing.T) {
	f := &fakeRollouts{
		latest: func(string, int) (store.Rollout, error) { return store.Rollout{ID: 5}, nil },
		commands: func(_ string, id int64) (string, error) {
			if id == 9 {
				return "", fmt.Errorf("%w: no wave of rollout #9 is awaiting approval", rollout.ErrRefused)
			}
			return "production", nil
		},
	}
	a := New(f, nil)
	wave, reply, err := a.ApprovalWave(context.Background(), app.CommandRequest{Repo: repo, PRNumber: 3, Command: command.Approve, Actor: "alice"})
	if wave != "production" || reply != "" || err != nil {
		t.Errorf("bare /approve: %q, %q, %v; want production", wave, reply, err)
	}
	wave, reply, err = a.ApprovalWave(context.Background(), app.CommandRequest{Repo: repo, Command: command.Approve, Actor: "bob",
		Target: "PROD", CheckRunExternalID: "fleetwave:9"})
	if wave != "" || err != nil || !strings.Contains(reply, "@bob: ") || !strings.Contains(reply, "no wave of rollout #9 is awaiting approval") {
		t.Errorf("button with nothing awaiting: %q, %q, %v; want the refusal as the reply", wave, reply, err)
	}
	if want := []string{"latest(octo/fleet,3)", "approvalWave(5,)", "approvalWave(9,PROD)"}; strings.Join(f.calls, " ") != strings.Join(want, " ") {
		t.Errorf("calls = %v, want %v", f.calls, want)
	}
}
