package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// RolloutState is the state of a whole rollout.
type RolloutState string

// The rollout states. Succeeded, failed, aborted, rolled-back and superseded are terminal: no work is left
// (a rollout that succeeded, failed or was aborted may still move to rolling-back on /rollback).
const (
	RolloutPending          RolloutState = "pending"
	RolloutRunning          RolloutState = "running"
	RolloutPaused           RolloutState = "paused"
	RolloutAwaitingApproval RolloutState = "awaiting-approval"
	RolloutSucceeded        RolloutState = "succeeded"
	RolloutFailed           RolloutState = "failed"
	RolloutAborted          RolloutState = "aborted"
	RolloutRollingBack      RolloutState = "rolling-back"
	RolloutRolledBack       RolloutState = "rolled-back"
	RolloutSuperseded       RolloutState = "superseded"
)

// RolloutStates lists every rollout state, in lifecycle order.
var RolloutStates = []RolloutState{
	RolloutPending, RolloutRunning, RolloutPaused, RolloutAwaitingApproval, RolloutSucceeded, RolloutFailed,
	RolloutAborted, RolloutRollingBack, RolloutRolledBack, RolloutSuperseded,
}

// Valid reports whether s is one of the rollout states.
func (s RolloutState) Valid() bool {
	for _, v := range RolloutStates {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal reports whether no work is left in a rollout in state s.
func (s RolloutState) Terminal() bool {
	switch s {
	case RolloutSucceeded, RolloutFailed, RolloutAborted, RolloutRolledBack, RolloutSuperseded:
		return true
	}
	return false
}

// CanMoveTo reports whether a rollout may go from s to next. Unfinished rollouts may go anywhere (the
// executor owns the state machine); succeeded, failed and aborted ones only to rolling-back; rolled-back and
// superseded ones nowhere. Staying in the same state (to update other fields) is always allowed.
func (s RolloutState) CanMoveTo(next RolloutState) bool {
	if !next.Valid() {
		return false
	}
	if s == next || !s.Terminal() {
		return true
	}
	switch s {
	case RolloutSucceeded, RolloutFailed, RolloutAborted:
		return next == RolloutRollingBack
	}
	return false
}

func unfinishedRolloutStates() []RolloutState {
	var out []RolloutState
	for _, s := range RolloutStates {
		if !s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}

// WaveState is the state of one wave of a rollout.
type WaveState string

// The wave states.
const (
	WavePending          WaveState = "pending"
	WaveRunning          WaveState = "running"
	WaveGating           WaveState = "gating" // soak and metric gates after the last batch
	WaveAwaitingApproval WaveState = "awaiting-approval"
	WaveSucceeded        WaveState = "succeeded"
	WaveFailed           WaveState = "failed"
	WaveCancelled        WaveState = "cancelled"
	WaveRollingBack      WaveState = "rolling-back"
	WaveRolledBack       WaveState = "rolled-back"
)

// WaveStates lists every wave state.
var WaveStates = []WaveState{
	WavePending, WaveRunning, WaveGating, WaveAwaitingApproval, WaveSucceeded, WaveFailed, WaveCancelled,
	WaveRollingBack, WaveRolledBack,
}

// Valid reports whether s is one of the wave states.
func (s WaveState) Valid() bool {
	for _, v := range WaveStates {
		if s == v {
			return true
		}
	}
	return false
}

// StepState is the state of one app in a rollout. See doc.go for the intent/outcome protocol.
type StepState string

// The app step states.
const (
	StepPending    StepState = "pending"     // nothing done yet
	StepIntent     StepState = "intent"      // the executor is about to trigger Op; it may or may not have happened
	StepTriggered  StepState = "triggered"   // the executor's request for Op was accepted by Argo CD
	StepSynced     StepState = "synced"      // the app was observed applied, reconciled and healthy at the target
	StepFailed     StepState = "failed"      // Op failed; Message says why
	StepSkipped    StepState = "skipped"     // nothing to do (already synced and healthy at the target)
	StepRolledBack StepState = "rolled-back" // the app was synced back to PreviousRevision
	// StepOutOfPlan: Argo CD's automated sync or a person synced the app to the target outside the plan (before
	// the executor started it); Message names who. The app runs the target, but not because the plan said so.
	StepOutOfPlan StepState = "out-of-plan"
)

// StepStates lists every step state.
var StepStates = []StepState{
	StepPending, StepIntent, StepTriggered, StepSynced, StepFailed, StepSkipped, StepRolledBack, StepOutOfPlan,
}

// Valid reports whether s is one of the step states.
func (s StepState) Valid() bool {
	for _, v := range StepStates {
		if s == v {
			return true
		}
	}
	return false
}

// InFlight reports whether a side effect may have happened that no outcome records yet: a restarted executor
// must reconcile such a step with Argo CD before doing anything else with it.
func (s StepState) InFlight() bool { return s == StepIntent || s == StepTriggered }

// Op is the side effect an app step's intent announces.
type Op string

// The operations.
const (
	OpSync     Op = "sync"     // sync the app to TargetRevision
	OpRollback Op = "rollback" // sync the app back to PreviousRevision
)

// Valid reports whether o is one of the operations.
func (o Op) Valid() bool { return o == OpSync || o == OpRollback }

// AppKey names an Argo CD Application: the Argo CD instance that holds it ("" for the one Argo CD of a fleet
// configured the old way), its namespace (the control-plane namespace, usually argocd) and name.
type AppKey struct {
	Instance  string
	Namespace string
	Name      string
}

// String is namespace/name, prefixed with "instance:" when the instance is not "".
func (k AppKey) String() string {
	if k.Instance != "" {
		return k.Instance + ":" + k.Namespace + "/" + k.Name
	}
	return k.Namespace + "/" + k.Name
}

// Rollout is one merge carried across the fleet. Zero times are unset.
type Rollout struct {
	ID       int64
	Repo     string // owner/name
	PRNumber int    // 0 for a direct push
	MergeSHA string
	BaseSHA  string
	// InstallationID is the GitHub App installation the merge came through (its token writes the check-runs);
	// 0 when unknown (recorded outside the App, or before it was stored).
	InstallationID int64
	Plan           json.RawMessage // the plan computed at the merge commit, byte for byte as given
	PlanDigest     string          // "sha256:<hex>" of Plan
	State          RolloutState
	Message        string // why the rollout is in its state (paused by, failed because…)
	// SupersededBy is the rollout that replaced this one (state superseded); 0 when none.
	SupersededBy int64
	// CheckRunID and RollbackCheckRunID are the GitHub check-runs fleetwave/rollout and the rollback's; 0 until created.
	CheckRunID         int64
	RollbackCheckRunID int64
	CreatedAt          time.Time
	UpdatedAt          time.Time
	Version            int64 // optimistic concurrency: every update must present the version it read
}

// Wave is one wave of a rollout. Zero times are unset.
type Wave struct {
	RolloutID  int64
	Index      int // 0-based, the plan's order
	Name       string
	State      WaveState
	CheckRunID int64 // the check-run "fleetwave/wave: <name>"; 0 until created
	ApprovedBy string
	ApprovedAt time.Time
	GateState  json.RawMessage // the executor's gate bookkeeping (soak start, metric samples…); nil when none
	Message    string
	StartedAt  time.Time
	FinishedAt time.Time
	UpdatedAt  time.Time
	Version    int64
}

// AppStep is one app of a rollout. Zero times are unset.
type AppStep struct {
	ID        int64
	RolloutID int64
	Wave      int // wave index
	Batch     int // batch index within the wave
	App       AppKey
	Cluster   string // destination cluster name
	// PreviousRevision is the revision the app ran before this rollout, the target of a rollback.
	PreviousRevision string
	TargetRevision   string
	State            StepState
	Op               Op  // the operation of the current or last intent
	Attempts         int // intents recorded so far, all operations together
	IntentAt         time.Time
	TriggeredAt      time.Time // when Argo CD accepted the request; an operation started before IntentAt is not ours
	OpStartedAt      time.Time // the observed operation's startedAt
	OpFinishedAt     time.Time // the observed operation's finishedAt
	Health           string
	Message          string
	UpdatedAt        time.Time
	Version          int64
}

// OpRevision is the revision the step's current operation moves the app to.
func (s AppStep) OpRevision() string {
	if s.Op == OpRollback {
		return s.PreviousRevision
	}
	return s.TargetRevision
}

// Event is one line of a rollout's audit log: who did what, when, with what result.
type Event struct {
	ID         int64
	RolloutID  int64
	At         time.Time
	Actor      string // GitHub login, or "fleetwave" for the bot itself
	Action     string // e.g. "approve", "pause", "wave-started", "sync"
	Target     string // e.g. a wave name or an app
	Result     string // e.g. "ok", "refused", "failed"
	Message    string
	DeliveryID string // the GitHub delivery that carried a command, when there was one
}

// Lease is a replica's claim on running a rollout.
type Lease struct {
	RolloutID  int64
	Owner      string
	Epoch      int64 // grows by one each time the lease changes hands (or is taken again after expiring)
	AcquiredAt time.Time
	ExpiresAt  time.Time
	Live       bool // not expired when read, by the leases' clock (see WithClock)
}

// NewRollout is what CreateRollout needs.
type NewRollout struct {
	Repo     string
	PRNumber int
	MergeSHA string
	BaseSHA  string
	// InstallationID is the GitHub App installation of the merge (0: none known).
	InstallationID int64
	Plan           json.RawMessage // must be valid JSON
	State          RolloutState    // default pending
	Waves          []NewWave       // in order
	// Events are the rollout's first audit events (RolloutID is ignored; At defaults to the store's now), written
	// in the rollout's transaction, so that they come before any its executor logs: who merged, its creation.
	Events []Event
}

// NewWave is one wave of a NewRollout.
type NewWave struct {
	Name  string
	Steps []NewStep
}

// NewStep is one app of a NewWave.
type NewStep struct {
	Batch            int
	App              AppKey
	Cluster          string
	PreviousRevision string // may be left empty and recorded by the first intent
	TargetRevision   string // default the merge SHA
}

func (n *NewRollout) validate() error {
	if !validRepo(n.Repo) {
		return fmt.Errorf("repo %q is not owner/name", n.Repo)
	}
	if n.MergeSHA == "" {
		return fmt.Errorf("rollout of %s has no merge SHA", n.Repo)
	}
	if n.PRNumber < 0 {
		return fmt.Errorf("rollout of %s has a negative PR number %d", n.Repo, n.PRNumber)
	}
	if n.State == "" {
		n.State = RolloutPending
	}
	if !n.State.Valid() {
		return fmt.Errorf("rollout of %s has unknown state %q", n.Repo, n.State)
	}
	if len(n.Plan) == 0 {
		n.Plan = json.RawMessage("null")
	}
	if !json.Valid(n.Plan) {
		return fmt.Errorf("plan of rollout %s@%s is not valid JSON", n.Repo, n.MergeSHA)
	}
	for _, e := range n.Events {
		if e.Actor == "" || e.Action == "" {
			return fmt.Errorf("rollout %s@%s: an event needs an actor and an action", n.Repo, n.MergeSHA)
		}
	}
	seen := map[AppKey]int{}
	for wi := range n.Waves {
		w := &n.Waves[wi]
		if w.Name == "" {
			return fmt.Errorf("wave %d of rollout %s@%s has no name", wi, n.Repo, n.MergeSHA)
		}
		for si := range w.Steps {
			st := &w.Steps[si]
			if st.App.Name == "" || st.App.Namespace == "" {
				return fmt.Errorf("wave %q of rollout %s@%s: app %q needs a namespace and a name", w.Name, n.Repo, n.MergeSHA, st.App)
			}
			if st.Batch < 0 {
				return fmt.Errorf("wave %q: app %s has a negative batch %d", w.Name, st.App, st.Batch)
			}
			if prev, dup := seen[st.App]; dup {
				return fmt.Errorf("app %s is in rollout %s@%s twice (waves %d and %d)", st.App, n.Repo, n.MergeSHA, prev, wi)
			}
			seen[st.App] = wi
			if st.TargetRevision == "" {
				st.TargetRevision = n.MergeSHA
			}
		}
	}
	return nil
}

func validRepo(repo string) bool {
	owner, name, ok := strings.Cut(repo, "/")
	return ok && owner != "" && name != "" && !strings.Contains(name, "/")
}
