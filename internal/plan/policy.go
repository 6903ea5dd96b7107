package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// APIVersion is the only release-policy version this package reads.
const APIVersion = "fleetwave/v1"

// DefaultPolicyFile is where a GitOps repository keeps its release policy.
const DefaultPolicyFile = ".fleetwave.yaml"

// FailureAction is what a rollout does when a wave crosses its failure threshold.
type FailureAction string

// The failure actions.
const (
	OnFailurePause    FailureAction = "pause"    // stop and wait for a human (/resume, /rollback, /abort)
	OnFailureRollback FailureAction = "rollback" // sync every touched app back to its pre-rollout revision
)

// ConflictMode says what a new rollout does about an unfinished older one touching some of the same apps: two
// rollouts never sync one app at once.
type ConflictMode string

const (
	// ConflictWait (the default) queues the new rollout until the older one has finished.
	ConflictWait ConflictMode = "wait"
	// ConflictSupersede stops the older one (its syncs in flight finish, it ends superseded), then starts.
	ConflictSupersede ConflictMode = "supersede"
)

// AutomatedSyncMode says what the plan check does with apps whose Argo CD automated sync is enabled.
type AutomatedSyncMode string

// The automated-sync modes.
const (
	// AutomatedSyncForbid (the default) makes such an app a plan violation (rule automated-sync): Argo CD would
	// sync it as soon as the change merges, bypassing the waves.
	AutomatedSyncForbid AutomatedSyncMode = "forbid"
	// AutomatedSyncDisableDuringRollout lets the bot switch spec.syncPolicy.automated off for the apps of the
	// plan while it rolls them out and restore it afterwards; such apps are then no violation.
	AutomatedSyncDisableDuringRollout AutomatedSyncMode = "disable-during-rollout"
)

// OutOfPlanSyncMode says what a rollout does when an app of its plan is synced to the merge outside the plan
// (by Argo CD's automated sync or by a person) before its wave started.
type OutOfPlanSyncMode string

// The out-of-plan sync modes.
const (
	// OutOfPlanSyncPause (the default) pauses the rollout: the fleet is no longer where the plan says.
	OutOfPlanSyncPause OutOfPlanSyncMode = "pause"
	// OutOfPlanSyncContinue only reports such apps and carries on with the plan.
	OutOfPlanSyncContinue OutOfPlanSyncMode = "continue"
)

// Policy is a parsed release policy (.fleetwave.yaml): how a change travels through the fleet.
type Policy struct {
	// Source names where the policy came from ("<file>", "default" or "ApplicationSet rollingSync"); it is
	// repeated in the plan for humans.
	Source     string
	APIVersion string
	// Waves, in rollout order. An app belongs to the first wave whose selector matches it.
	Waves []WavePolicy
	// OnFailure applies to every wave that does not set its own (default pause).
	OnFailure FailureAction
	// AutomatedSync decides whether apps with automated sync fail the plan check (default forbid).
	AutomatedSync AutomatedSyncMode
	// OnConflict says what a merge's rollout does about an unfinished older rollout touching some of the same
	// apps (default wait).
	OnConflict ConflictMode
	// OutOfPlanSync says what a rollout does when an app of its plan is synced outside the plan (default pause;
	// empty means pause).
	OutOfPlanSync OutOfPlanSyncMode
	// Prune asks Argo CD to prune, in the rollout's syncs, the resources the change removed (default false, as
	// Argo CD's own sync).
	Prune bool
	// RequireCanary turns the canary-first check on for every wave marked Production.
	RequireCanary bool
	// AppKindLabel, when set, names the Application label whose value is an app's kind (see AppKind).
	AppKindLabel string
	// Commands says who may run each slash command; missing commands get DefaultCommandRules.
	Commands map[string]CommandRule
	// Diff says how the PR preview presents differences (diffsettings.go).
	Diff DiffSettings
	// Tracks choose an app's way through the waves by the risk classes of its change (tracks.go); none: every
	// app takes the policy's waves as written.
	Tracks []Track
	// Labels are the pull-request labels a change's risk classes put on it (labels.go), most serious class first.
	Labels []ClassLabel
	// Acknowledge are the risk classes that fail the plan check until a person acknowledges them for the pull
	// request's head (labels.go), most serious first.
	Acknowledge []string
	// Warnings are things a valid policy says that are probably not meant (unreachable waves, zero limits).
	Warnings []Diagnostic

	// isDefault marks DefaultPolicy: a pickOne canary wave, lenient maxPerLabel and the rollingSync import.
	isDefault bool
}

// WavePolicy is one wave of a policy.
type WavePolicy struct {
	Name     string
	Selector Selector
	// MaxParallel bounds the distinct destination clusters of one batch; nil means no bound.
	MaxParallel *Quantity
	// MaxPerLabel bounds, per cluster-label key, the clusters of one batch sharing one value of that label.
	MaxPerLabel []LabelLimit
	// Soak is how long the wave's apps must stay healthy after its last batch before the next wave starts.
	Soak Duration
	// Approval, when required, holds the wave until someone allowed approves it: before it starts (When before,
	// the default) or after its soak and metric gates, before the next wave (When after).
	Approval Approval
	// Gates are metric checks run after the soak.
	Gates []MetricGate
	// FailureThreshold is how many failed apps the wave tolerates (count, or % of its apps, rounded down).
	FailureThreshold Quantity
	// OnFailure overrides the policy's OnFailure for this wave when set.
	OnFailure FailureAction
	// Production marks a production wave; with the policy's RequireCanary it gets the canary-first check.
	Production bool
	// RequireCanary, when set, turns the canary-first check on (or off) for this wave whatever the policy says.
	RequireCanary *bool
	// Line is where the wave starts in the policy file (0 when the policy was not parsed from a file).
	Line int

	// pickOne makes the wave take only the best canary candidate among the apps it matches (DefaultPolicy).
	pickOne bool
	// group restricts the wave to apps of one imported rollingSync group (DefaultPolicy); "" = plain apps.
	group string
	// lenientLabels: clusters lacking a maxPerLabel label are no violation (DefaultPolicy).
	lenientLabels bool
	// rollingSync marks waves imported from an ApplicationSet (Argo CD drops automated sync for those apps).
	rollingSync bool
	// unsatisfiableNote explains a zero limit that came from an import rather than from the policy file.
	unsatisfiableNote string
	// oneWaveTrack makes the wave the one wave of that oneWave track: it takes that track's apps, and only them.
	oneWaveTrack string
}

// LabelLimit is one maxPerLabel entry: at most Max clusters with the same value of cluster label Key per batch.
type LabelLimit struct {
	Key string
	Max int
}

// Approval is a manual gate on a wave: before it starts, or after its other gates pass.
type Approval struct {
	Required bool     `json:"required"`
	Teams    []string `json:"teams,omitempty"` // org/slug; empty = anyone the approve command rule allows
	// When the wave waits for it: ApprovalBefore (no app of the wave syncs before someone approves) or
	// ApprovalAfter (the wave syncs and passes its soak and metric gates, then waits before the next wave).
	// A plan stored before the field existed has it empty: ApprovalAfter, the meaning it was made with.
	When ApprovalTiming `json:"when,omitempty"`
	// Approvers says who may approve, for check-runs and the PR comment ("write permission, and membership
	// of org/sre"); set by Build from the policy's approve rule and Teams.
	Approvers string `json:"approvers,omitempty"`
}

// ApprovalTiming is when an approval gate holds its wave.
type ApprovalTiming string

// The approval timings.
const (
	ApprovalBefore ApprovalTiming = "before"
	ApprovalAfter  ApprovalTiming = "after"
)

// Before reports whether the approval holds the wave before it starts. An empty When is a plan stored before
// approvals could come first, when every approval came after the wave: it keeps that meaning.
func (a *Approval) Before() bool { return a != nil && a.Required && a.When == ApprovalBefore }

// Describe is the gate in a few words: "approval before it starts (org/sre)", "approval before the next wave".
func (a *Approval) Describe() string {
	s := "approval before the next wave"
	if a.Before() {
		s = "approval before it starts"
	}
	if len(a.Teams) > 0 {
		s += " (" + strings.Join(a.Teams, ", ") + ")"
	}
	return s
}

// After reports whether the approval holds the next wave once this one has synced and passed its gates.
func (a *Approval) After() bool { return a != nil && a.Required && a.When != ApprovalBefore }

// MetricGate is one metric check after a wave. Prometheus is the only provider so far.
type MetricGate struct {
	Prometheus *PrometheusGate `json:"prometheus,omitempty"`
}

// PrometheusGate passes when Query's value stays within [Min, Max] for For (one evaluation when For is 0).
type PrometheusGate struct {
	URL   string   `json:"url"`
	Query string   `json:"query"`
	Max   *float64 `json:"max,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	For   Duration `json:"for,omitempty"`
}

// CommandRule says who may run a slash command: anyone with at least Permission on the repository, or any
// member of one of Teams. With only Teams set, only those teams may.
type CommandRule struct {
	Permission Permission `json:"permission,omitempty"`
	Teams      []string   `json:"teams,omitempty"`
}

// Permission is a GitHub repository permission level.
type Permission string

// The GitHub repository permission levels, lowest first.
const (
	PermRead     Permission = "read"
	PermTriage   Permission = "triage"
	PermWrite    Permission = "write"
	PermMaintain Permission = "maintain"
	PermAdmin    Permission = "admin"
)

// rank orders permissions; unknown or empty ranks lowest.
func (p Permission) rank() int {
	switch p {
	case PermRead:
		return 1
	case PermTriage:
		return 2
	case PermWrite:
		return 3
	case PermMaintain:
		return 4
	case PermAdmin:
		return 5
	}
	return 0
}

// CommandNames are the slash commands a policy may restrict, sorted.
func CommandNames() []string {
	return []string{"abort", "acknowledge", "approve", "pause", "plan", "resume", "rollback"}
}

// DefaultCommandRules are the rules of commands a policy does not mention.
func DefaultCommandRules() map[string]CommandRule {
	return map[string]CommandRule{
		"pause":    {Permission: PermWrite},
		"resume":   {Permission: PermWrite},
		"abort":    {Permission: PermWrite},
		"approve":  {Permission: PermWrite},
		"rollback": {Permission: PermWrite},
		"plan":     {Permission: PermTriage},
		// acknowledge lets a change carrying the policy's acknowledge classes pass the plan check.
		"acknowledge": {Permission: PermWrite},
	}
}

// Actor is someone asking for a slash command.
type Actor struct {
	Login      string
	Permission Permission // their permission on the repository
	Teams      []string   // org/slug of the teams they belong to
}

// Allowed says whether actor may run command (for approve: on wave, whose approval teams also apply) and, when
// not, why. Unknown commands and "help" are allowed: they only print help.
func (p *Policy) Allowed(command, wave string, actor Actor) (bool, string) {
	rule, ok := p.Commands[command]
	if !ok {
		rule, ok = DefaultCommandRules()[command]
		if !ok {
			return true, ""
		}
	}
	allowed := false
	if rule.Permission != "" && actor.Permission.rank() >= rule.Permission.rank() {
		allowed = true
	}
	if !allowed && memberOfAny(actor.Teams, rule.Teams) {
		allowed = true
	}
	if !allowed {
		return false, fmt.Sprintf("/%s needs %s", command, describeRule(rule))
	}
	if command == "approve" && wave != "" {
		// Wave names compare case-insensitively, as the executor finds the wave it approves (and as the policy
		// keeps them unique): the teams of "prod" apply to "/approve PROD".
		if w := p.Wave(wave); w != nil && len(w.Approval.Teams) > 0 && !memberOfAny(actor.Teams, w.Approval.Teams) {
			return false, fmt.Sprintf("wave %q may only be approved by %s", w.Name, strings.Join(w.Approval.Teams, ", "))
		}
	}
	return true, ""
}

// Wave returns the policy's wave named name, compared case-insensitively (nil when there is none).
func (p *Policy) Wave(name string) *WavePolicy {
	for i := range p.Waves {
		if strings.EqualFold(p.Waves[i].Name, name) {
			return &p.Waves[i]
		}
	}
	return nil
}

// Approvers says who may approve wave w: the approve command's rule, and the wave's approval teams when it has
// any ("write permission, and membership of org/sre").
func (p *Policy) Approvers(w *WavePolicy) string {
	rule, ok := p.Commands["approve"]
	if !ok {
		rule = DefaultCommandRules()["approve"]
	}
	s := describeRule(rule)
	if len(w.Approval.Teams) > 0 {
		s += ", and membership of " + strings.Join(w.Approval.Teams, " or ")
	}
	return s
}

// Who says who may run command under the policy ("write permission or membership of org/sre").
func (p *Policy) Who(command string) string {
	rule, ok := p.Commands[command]
	if !ok {
		rule = DefaultCommandRules()[command]
	}
	return describeRule(rule)
}

func describeRule(r CommandRule) string {
	var parts []string
	if r.Permission != "" {
		parts = append(parts, string(r.Permission)+" permission")
	}
	if len(r.Teams) > 0 {
		parts = append(parts, "membership of "+strings.Join(r.Teams, ", "))
	}
	return strings.Join(parts, " or ")
}

func memberOfAny(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if strings.EqualFold(h, w) {
				return true
			}
		}
	}
	return false
}

// DefaultPolicy is the behaviour without a .fleetwave.yaml:
//   - apps whose ApplicationSet has strategy.rollingSync steps follow those steps (see ImportRollingSync), one
//     group of waves per distinct set of steps, before the other apps;
//   - the other apps: one canary app first (an app labelled env=canary, else env=test, else env=dev, looking at
//     the keys env and environment in app then cluster labels; else the first by name), then wave "rollout" in
//     batches of at most 25% of its clusters with at most one cluster per `region` label value (clusters
//     without a region label are not limited by it);
//   - onFailure pause; automated sync forbidden (outside rollingSync groups, where Argo CD turns it off).
func DefaultPolicy() *Policy {
	quarter := Quantity{Value: 25, Percent: true}
	return &Policy{
		Source:        "default",
		APIVersion:    APIVersion,
		OnFailure:     OnFailurePause,
		AutomatedSync: AutomatedSyncForbid,
		OnConflict:    ConflictWait,
		Commands:      map[string]CommandRule{},
		isDefault:     true,
		Waves: []WavePolicy{
			{Name: "canary", pickOne: true},
			{Name: "rollout", MaxParallel: &quarter, MaxPerLabel: []LabelLimit{{Key: "region", Max: 1}}, lenientLabels: true},
		},
	}
}

// IsDefault reports whether p is DefaultPolicy (no policy file).
func (p *Policy) IsDefault() bool { return p.isDefault }

// Quantity is a count or a percentage, as in maxParallel: 5 or maxParallel: 25%.
type Quantity struct {
	Value   int
	Percent bool
	// roundDown: percentages round down (still at least 1 when > 0%), as Argo CD's maxUpdate does.
	roundDown bool
}

// Of resolves q against a total: a count is itself; a percentage of total rounds up (down for imported
// rollingSync maxUpdate) and is at least 1 when the percentage and the total are above zero.
func (q Quantity) Of(total int) int {
	if !q.Percent {
		return q.Value
	}
	if q.Value <= 0 || total <= 0 {
		return 0
	}
	var n int
	if q.roundDown {
		n = q.Value * total / 100
	} else {
		n = (q.Value*total + 99) / 100
	}
	return max(n, 1)
}

// Floor resolves a percentage rounding down (failure thresholds: 10% of 15 apps tolerates 1).
func (q Quantity) Floor(total int) int {
	if !q.Percent {
		return q.Value
	}
	return q.Value * max(total, 0) / 100
}

func (q Quantity) String() string {
	if q.Percent {
		return strconv.Itoa(q.Value) + "%"
	}
	return strconv.Itoa(q.Value)
}

// MarshalJSON writes a count as a number and a percentage as "25%".
func (q Quantity) MarshalJSON() ([]byte, error) {
	if q.Percent {
		return json.Marshal(q.String())
	}
	return json.Marshal(q.Value)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*q = Quantity{Value: n}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("decoding quantity %s: want a count or a percentage", b)
	}
	v, err := parseQuantity(s)
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// parseQuantity reads "5", "25%". Percentages are whole numbers from 0% to 100%.
func parseQuantity(s string) (Quantity, error) {
	s = strings.TrimSpace(s)
	if num, ok := strings.CutSuffix(s, "%"); ok {
		num = strings.TrimSpace(num)
		v, err := strconv.Atoi(num)
		if err != nil || !digits(num) {
			return Quantity{}, fmt.Errorf("%q is not a percentage", s)
		}
		if v < 0 || v > 100 {
			return Quantity{}, fmt.Errorf("percentage %q is outside 0%%..100%%", s)
		}
		return Quantity{Value: v, Percent: true}, nil
	}
	v, err := strconv.Atoi(s)
	if err == nil && v < 0 {
		return Quantity{}, fmt.Errorf("count %d is negative", v)
	}
	if err != nil || !digits(s) {
		return Quantity{}, fmt.Errorf("%q is neither a count nor a percentage", s)
	}
	return Quantity{Value: v}, nil
}

// digits reports whether s is a plain decimal number without sign.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Duration is a time.Duration written as Go writes it, without trailing zero units ("10m", "1h30m").
type Duration time.Duration

// String formats d as "10m", "1h30m", "45s", "0s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalText writes String.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("decoding duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// finite reports whether f is a usable threshold.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
