package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// App is one affected Argo CD Application as the planner sees it.
type App struct {
	Name, Namespace, Project string
	// Instance is the Argo CD instance that holds the Application (the instances file's name); "" in a fleet of
	// one Argo CD, so a one-instance plan's JSON is what it was before instances existed.
	Instance      string
	Cluster       string            // destination cluster name (e.g. "prd-eu-1", "in-cluster")
	Server        string            // destination server URL
	ClusterLabels map[string]string // labels of the destination cluster
	Labels        map[string]string // metadata.labels of the Application
	AutomatedSync bool              // spec.syncPolicy.automated set (enabled)
	Source        string            // e.g. "applications/guestbook.yaml" or "appset:name" — for messages
	// RollingSyncSteps are its ApplicationSet's strategy.rollingSync.steps, when that strategy is RollingSync.
	RollingSyncSteps []RollingSyncStep
	// Risks are the risk classes of its change, most serious first: they choose its track (tracks.go).
	Risks []Risk
}

// clusterKey identifies the destination cluster: its name, else its server URL.
func (a *App) clusterKey() string {
	if a.Cluster != "" {
		return a.Cluster
	}
	return a.Server
}

// clusterID identifies the destination cluster across Argo CD instances: "<instance>/<cluster key>" for an app
// of a named instance (two instances may both call a cluster in-cluster; they are different clusters), the
// cluster key alone in a fleet of one. Batches, limits and violations count clusters by it.
func (a *App) clusterID() string {
	if a.Instance == "" {
		return a.clusterKey()
	}
	return a.Instance + "/" + a.clusterKey()
}

// Plan is the ordered, batched rollout of a change's apps, with the policy violations found on the way.
// Its JSON form is the `plan` part of `fleetwave plan --output json` (docs/policy.md); field names may grow,
// never change meaning.
type Plan struct {
	// Policy names the policy that made the plan: a file name, "default" or "ApplicationSet rollingSync".
	Policy string `json:"policy"`
	// Waves that received apps, in policy order; waves no app landed in are listed in SkippedWaves.
	Waves        []Wave      `json:"waves"`
	SkippedWaves []string    `json:"skippedWaves,omitempty"`
	Violations   []Violation `json:"violations"`
	// Incomplete is set when some app of the change could not be placed in a wave (Unplaced says which): the
	// plan covers only the others, so it is no all-clear even without violations.
	Incomplete bool `json:"incomplete,omitempty"`
	// Unplaced are the apps of the change the plan could not place, sorted by namespace and name.
	Unplaced []Unplaced `json:"unplaced,omitempty"`
	// Removed are the apps the change deletes from the repository. The rollout has nothing of theirs to sync:
	// Argo CD deletes (or keeps) them as Reason says, when their parent app or ApplicationSet next syncs.
	Removed []Unplaced `json:"removed,omitempty"`
	// Pinned are the apps of the change pinned to another revision of the repository (a tag, another branch):
	// Argo CD syncs them to that revision, not to the merge, so they have no wave slot (Reason says which).
	Pinned []Unplaced `json:"pinned,omitempty"`
	// Unreadable are the repository problems at head (an Application file that does not parse, a generator that
	// fails), one line each: the apps they declare are unknown, so the plan is incomplete.
	Unreadable []string `json:"unreadable,omitempty"`
	// Tracks say, when the policy has tracks, which track the apps took and why.
	Tracks []TrackUse `json:"tracks,omitempty"`
}

// SetUnreadable records the repository problems that hide apps and marks the plan incomplete when there are any.
func (p *Plan) SetUnreadable(problems []string) {
	p.Unreadable = problems
	p.Incomplete = p.Incomplete || len(problems) > 0
}

// Unplaced is an app of the change left out of the plan: it failed to render (or could not be rendered), so
// nothing is known of what it rolls out.
type Unplaced struct {
	App       string `json:"app"`
	Namespace string `json:"namespace,omitempty"`
	// Instance is the Argo CD instance that holds the app ("" in a fleet of one Argo CD, or when the app maps to
	// no instance or to several: Reason says so).
	Instance string `json:"instance,omitempty"`
	Cluster  string `json:"cluster,omitempty"`
	// Reason is why, one line (the render error).
	Reason string `json:"reason"`
}

// SetUnplaced records the apps the plan could not place and marks it incomplete when there are any.
func (p *Plan) SetUnplaced(u []Unplaced) {
	p.Unplaced = u
	p.Incomplete = len(u) > 0
}

// OK reports whether the plan breaks no policy rule. An incomplete plan may be OK: see Complete.
func (p *Plan) OK() bool { return len(p.Violations) == 0 }

// Complete reports whether every app of the change was placed.
func (p *Plan) Complete() bool {
	return !p.Incomplete && len(p.Unplaced) == 0 && len(p.Unreadable) == 0
}

func (u Unplaced) ref() string {
	if u.Namespace != "" {
		return u.Namespace + "/" + u.App
	}
	return u.App
}

// Digest is a hash of the plan's JSON form, to compare the plan shown on a PR with the one recomputed at merge.
// The sync windows seen at planning time (Wave.HeldBySyncWindow) are left out: they describe the moment, not
// the plan.
func (p *Plan) Digest() string {
	c := *p
	if slices.ContainsFunc(p.Waves, func(w Wave) bool { return w.HeldBySyncWindow != nil }) {
		c.Waves = slices.Clone(p.Waves)
		for i := range c.Waves {
			c.Waves[i].HeldBySyncWindow = nil
		}
	}
	b, err := json.Marshal(&c)
	if err != nil { // cannot happen: the plan holds only strings, numbers and maps of strings
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// AppCount is the number of planned apps (violating apps included when they are in a wave).
func (p *Plan) AppCount() int {
	n := 0
	for i := range p.Waves {
		n += p.Waves[i].AppCount()
	}
	return n
}

// Wave is one planned wave.
type Wave struct {
	Name       string  `json:"name"`
	Production bool    `json:"production,omitempty"`
	Gates      Gates   `json:"gates"`
	Limits     Limits  `json:"limits"`
	Batches    []Batch `json:"batches"`
	// HeldBySyncWindow: Argo CD's sync windows refuse syncs of some of the wave's apps at planning time (set
	// when Argo CD is configured); the rollout would hold the wave until they open.
	HeldBySyncWindow *WindowHold `json:"heldBySyncWindow,omitempty"`
	// Tracks are the tracks of the wave's apps, when the policy has tracks.
	Tracks []string `json:"tracks,omitempty"`
}

// WindowHold is what Argo CD's sync windows (AppProject spec.syncWindows) say about a wave's apps at an instant:
// the apps they would refuse a sync of, the first window that does, and when the first of the apps may sync.
type WindowHold struct {
	// At is when the windows were evaluated (the planning time).
	At time.Time `json:"at"`
	// Apps are the held apps (all of them), sorted.
	Apps []string `json:"apps"`
	// Reason names the window, e.g. "deny window '0 9 * * 1-5' (8h Europe/Berlin)".
	Reason string `json:"reason"`
	// Until is when the first held app may sync again; absent when no opening was found within a year.
	Until *time.Time `json:"until,omitempty"`
}

// Describe says it in one line: "2 apps (web-1, web-2) held by deny window '0 9 * * *' (8h) until 2026-11-27
// 17:00 UTC".
func (h *WindowHold) Describe() string {
	names := h.Apps
	more := ""
	if len(names) > 5 {
		names, more = names[:5], ", …"
	}
	s := text.Plural(len(h.Apps), "app") + " (" + strings.Join(names, ", ") + more + ") held by " + h.Reason
	if h.Until != nil {
		s += " until " + h.Until.UTC().Format("2006-01-02 15:04 MST")
	} else {
		s += " (no opening within a year)"
	}
	return s
}

// AppCount is the number of apps in the wave.
func (w *Wave) AppCount() int {
	n := 0
	for i := range w.Batches {
		n += len(w.Batches[i].Apps)
	}
	return n
}

// ClusterCount is the number of distinct destination clusters in the wave.
func (w *Wave) ClusterCount() int {
	n := 0
	for i := range w.Batches {
		n += len(w.Batches[i].Clusters)
	}
	return n
}

// Gates are what must hold after a wave before the next one starts, and what happens when it fails.
type Gates struct {
	Soak     Duration     `json:"soak,omitempty"`
	Approval *Approval    `json:"approval,omitempty"`
	Metrics  []MetricGate `json:"metrics,omitempty"`
	// FailureThreshold as written; ToleratedFailures is it resolved against the wave's app count (rounded
	// down): the wave fails when more apps than that fail.
	FailureThreshold  Quantity      `json:"failureThreshold"`
	ToleratedFailures int           `json:"toleratedFailures"`
	OnFailure         FailureAction `json:"onFailure"`
}

// Limits are a wave's batch limits as written and resolved.
type Limits struct {
	// MaxParallel as written (absent = no limit); MaxClusters is the resolved bound on clusters per batch.
	MaxParallel *Quantity      `json:"maxParallel,omitempty"`
	MaxClusters int            `json:"maxClusters"`
	MaxPerLabel map[string]int `json:"maxPerLabel,omitempty"`
}

// Batch is a set of destination clusters rolled out together; all the wave's apps on those clusters go with it.
type Batch struct {
	Clusters []string     `json:"clusters"`
	Apps     []PlannedApp `json:"apps"`
}

// PlannedApp is an app in a batch. Its label maps are shared with the App it came from.
type PlannedApp struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Instance is the Argo CD instance that holds the app ("" in a fleet of one Argo CD).
	Instance      string            `json:"instance,omitempty"`
	Project       string            `json:"project,omitempty"`
	Cluster       string            `json:"cluster"`
	Server        string            `json:"server,omitempty"`
	ClusterLabels map[string]string `json:"clusterLabels"`
	Labels        map[string]string `json:"labels"`
	AutomatedSync bool              `json:"automatedSync,omitempty"`
	Source        string            `json:"source,omitempty"`
	// Track is the track the app takes, when the policy has tracks (tracks.go).
	Track string `json:"track,omitempty"`
}

// The violation rules. Their ids are stable: tools and branch protection docs may name them.
const (
	RuleUncovered           = "uncovered"            // no wave selects the app
	RuleAutomatedSync       = "automated-sync"       // automated sync would bypass the waves
	RuleUnsatisfiableLimits = "unsatisfiable-limits" // the wave's limits can never admit the app's cluster
	RuleCanaryFirst         = "canary-first"         // a production wave gets an app kind no earlier wave had
	// RuleDestination: the app has no destination, or names a cluster no cluster Secret declares; Argo CD
	// refuses to sync it (util/argo/argo.go GetDestinationCluster: an InvalidSpecError), so no wave can hold it.
	RuleDestination = "invalid-destination"
)

func ruleOrder(rule string) int {
	switch rule {
	case RuleUncovered:
		return 0
	case RuleAutomatedSync:
		return 1
	case RuleUnsatisfiableLimits:
		return 2
	case RuleCanaryFirst:
		return 3
	case RuleDestination:
		return 4
	}
	return 5
}

// Violation is one broken policy rule, for one app.
type Violation struct {
	App       string `json:"app"`
	Namespace string `json:"namespace,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	Wave      string `json:"wave,omitempty"`
	Rule      string `json:"rule"`
	Message   string `json:"message"`
}
