package report

import (
	"io"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

// Status of one app in a preview.
type Status string

// App statuses. The first five are the original JSON contract (docs/contract.md); Skipped marks an app whose sources are
// outside the repository (rendered through Argo CD when it is configured, not locally).
const (
	StatusChanged   Status = "changed"
	StatusUnchanged Status = "unchanged"
	StatusAdded     Status = "added"
	StatusRemoved   Status = "removed"
	StatusError     Status = "error"
	StatusSkipped   Status = "skipped"
)

// Report is the preview of one change: every app of the fleet with its status and, for the affected ones, the
// diff of its rendered manifests. Its JSON form is `fleetwave diff --output json` (docs/contract.md); field names may
// grow, never change meaning.
type Report struct {
	// SchemaVersion is the version of this JSON form (SchemaVersion below); it grows when a field changes
	// meaning, never when one is added.
	SchemaVersion int    `json:"schemaVersion"`
	Base          string `json:"base"`
	Head          string `json:"head"`
	// HeadTree is set when the head side is not head's own tree but base merged with head (a stale branch).
	HeadTree string  `json:"headTree,omitempty"`
	Apps     []App   `json:"apps"`
	Summary  Summary `json:"summary"`
	// Problems are repository-level problems (broken files, failing generators), one line each.
	Problems []string `json:"problems,omitempty"`
	// Notes are informational lines (e.g. how the head side was built).
	Notes []string `json:"notes,omitempty"`
	// Unevaluated are the ApplicationSets whose generators need a live service (scmProvider, pullRequest, plugin,
	// clusterDecisionResource) that were not generated: their apps are not in the report.
	Unevaluated []Unevaluated `json:"unevaluated,omitempty"`
	// NoSourceInRepo is set when the fleet has apps but none takes a source from the repository under the names
	// it was given (origin remote, --repo-url, the App's repository): a fork or mirror whose URL the
	// Applications do not use. Nothing was rendered; the preview is no all-clear.
	NoSourceInRepo bool `json:"noSourceInRepo,omitempty"`
	// NoApps is set when the repository declares no Application and no ApplicationSet at either revision: nothing
	// was previewed (typically a CI job pointed at the manifests repository, not the GitOps repository).
	NoApps bool `json:"noApps,omitempty"`
	// AppRepoURLs are, when NoSourceInRepo is set, the repoURLs the apps do name (most used first, at most 3).
	AppRepoURLs []string `json:"appRepoURLs,omitempty"`
	// PolicyErrors are set when a plan was asked for and the release policy at head is invalid: no plan was
	// made (the diff is complete). One line per error, "file:line:col: message (hint: ...)".
	PolicyErrors []string `json:"policyErrors,omitempty"`
	// Classes count the apps per risk class, most serious first (ClassCounts; set when written as JSON).
	Classes []ClassCount `json:"classes,omitempty"`
	// Groups are the shown apps grouped by identical change, in rollout order (computed when written).
	Groups []Group `json:"groups"`
	// Footer is how to act on the preview (commands, links, the command to reproduce it); nil: no footer.
	Footer *Footer `json:"-"`
	// FoldChartLabels folds, in text and Markdown, the hunks that only change the helm.sh/chart label (the
	// default; the policy's diff.showChartLabels turns it off). The JSON keeps every hunk.
	FoldChartLabels bool `json:"-"`
	// Plan is the wave plan (plan command); its JSON fields are merged into the report's top level.
	Plan Plan `json:"-"`
}

// SchemaVersion is the version of the report's JSON form. Version 2 added schemaVersion, groups and the apps'
// kind, wave, batch, renderedBy and removal.
const SchemaVersion = 2

// Plan is what the report needs of a wave plan (internal/plan.Plan implements it). Its JSON form must be an
// object; its fields ("waves", "violations", ...) join the report's top level.
type Plan interface {
	OK() bool
	// Complete reports whether every app of the change was placed: an incomplete plan is no all-clear.
	Complete() bool
	WriteText(w io.Writer) error
	WriteMarkdown(w io.Writer) error
}

// App is one Application in a preview.
type App struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Instance is the Argo CD instance that holds the app ("" in a fleet of one Argo CD).
	Instance string `json:"instance,omitempty"`
	Project  string `json:"project,omitempty"`
	Cluster  string `json:"cluster"`
	Server   string `json:"server,omitempty"`
	Status   Status `json:"status"`
	// Error is the cause of an error (or a skip), one line.
	Error string `json:"error,omitempty"`
	// Warning is a note about the app that does not fail the preview.
	Warning   string          `json:"warning,omitempty"`
	Resources []diff.Resource `json:"resources"`
	Hooks     []diff.Resource `json:"hooks"`
	Counts    diff.Summary    `json:"counts"`
	// ReadFiles are the repository files the app's render read (the base render; the head render for added
	// apps). Empty when the app was not rendered at all because the change cannot reach any file it is built
	// from (internal/discover Reach).
	ReadFiles []string `json:"readFiles"`
	// AffectedBy lists why the app was rendered at head ("read-file: values/shared.yaml", ...).
	AffectedBy []string `json:"affectedBy,omitempty"`
	// File, AppSet and Parent say where the app is declared.
	File   string `json:"file,omitempty"`
	AppSet string `json:"appSet,omitempty"`
	Parent string `json:"parent,omitempty"`
	// Live is the comparison with the app's live state in Argo CD (diff --argocd); absent without Argo CD.
	Live *Live `json:"live,omitempty"`
	// Kind is what the app deploys, whatever the cluster: the name without its cluster part ("api" for
	// "api-prd-eu-1" on prd-eu-1), or the policy's appKindLabel. It names groups of identical changes.
	Kind string `json:"kind,omitempty"`
	// Wave (its name), WaveIndex (1-based) and Batch (1-based) place the app in the plan; zero when unplanned.
	Wave      string `json:"wave,omitempty"`
	WaveIndex int    `json:"waveIndex,omitempty"`
	Batch     int    `json:"batch,omitempty"`
	// RenderedBy is "argocd" when Argo CD's repo-server rendered the app (a plugin source); empty when
	// fleetwave rendered it in process.
	RenderedBy string `json:"renderedBy,omitempty"`
	// Removal says what Argo CD does with a removed app and its resources (status removed only).
	Removal *Removal `json:"removal,omitempty"`
	// PinnedRevision is the revision of this repository the app renders from when it is not the branch the
	// change goes into (a tag, another branch, a commit): Argo CD syncs the app to that revision, not to the
	// merge, so the plan gives it no wave slot.
	PinnedRevision string `json:"pinnedRevision,omitempty"`
	// DestinationNamespace is the app's destination namespace, and ReleaseName the Helm release name its source
	// sets (empty: the app's name, Argo CD's default). With the name and the cluster they are the app's own
	// identity, which the comment's grouping leaves out (docs/contract.md, Groups).
	DestinationNamespace string `json:"destinationNamespace,omitempty"`
	ReleaseName          string `json:"releaseName,omitempty"`
	// Classes are the risk classes of the app's change, most serious first (RiskClasses; set when written as
	// JSON): what its resources' Risks say, and "hook" when its sync runs hooks.
	Classes []risk.Class `json:"classes,omitempty"`
	// Ignored is the number of the app's objects (on the side that had more) from which the release policy's
	// diff.ignore removed fields before the diff.
	Ignored int `json:"ignored,omitempty"`
}

// Removal effects: what happens to a removed Application's resources in the cluster.
const (
	// RemovalDelete: the Application is deleted with its resources finalizer: Argo CD deletes its resources.
	RemovalDelete = "delete"
	// RemovalOrphan: the Application is deleted without the finalizer: its resources stay, unmanaged.
	RemovalOrphan = "orphan"
	// RemovalPending: the parent app that manages the Application does not prune automatically: it goes out
	// of sync, and the Application is deleted at the next sync with prune.
	RemovalPending = "pending"
	// RemovalKept: nothing in this repository deletes the Application (it was applied by hand): Argo CD keeps
	// it and keeps syncing it.
	RemovalKept = "kept"
)

// Removal is what removing an Application from the repository does in Argo CD.
type Removal struct {
	Effect string `json:"effect"`
	// By is what deletes it: "app argocd/root" or "ApplicationSet argocd/apps"; empty for RemovalKept.
	By string `json:"by,omitempty"`
	// Detail is one line for humans saying why.
	Detail string `json:"detail"`
}

// Footer is the end of the PR comment: what a reviewer can do next.
type Footer struct {
	// Commands are the slash commands for this change's rollout, each with who may use it.
	Commands []CommandHelp
	// PolicyFile is the release policy's path at head ("" for the default policy); PolicyURL links to it.
	PolicyFile, PolicyURL string
	// PolicyInvalid says the release policy PolicyFile is invalid (Report.PolicyErrors): no plan, and the
	// commands' rules (who may run them) are the file's, unknown until it is fixed.
	PolicyInvalid bool
	// AppURLs link apps (by key) to their page in Argo CD, when its URL is known.
	AppURLs map[string]string
	// Reproduce is the command that makes this preview locally.
	Reproduce string
}

// CommandHelp is one slash command and who may run it ("write permission", "team acme/sre").
type CommandHelp struct {
	Command, Who string
}

// Live compares one affected app with its live state in Argo CD (internal/edge/argocd/livediff).
type Live struct {
	// Missing: the app does not exist in Argo CD (nothing compared; a note, not an error).
	Missing bool `json:"missing,omitempty"`
	// NotManaged: Argo CD holds an app of this namespace and name, but none of its sources is this repository
	// (or its project differs): another repository's app, whose live state is not read (nothing compared).
	NotManaged bool `json:"notManaged,omitempty"`
	// Error is why the live state of this app could not be read, one line.
	Error string `json:"error,omitempty"`
	// Compared is the number of resources compared (head render and live state together).
	Compared int `json:"compared"`
	// Drift are the keys of resources whose live state differs from the base render: the cluster was changed
	// by hand, or the app is out of sync.
	Drift []string `json:"drift"`
	// Extraneous are the keys of Drift that are live, tracked by Argo CD as the app's, and in no base render:
	// Argo CD reports them requiresPruning, and a sync with prune deletes them.
	Extraneous []string `json:"extraneous,omitempty"`
	// IgnoredExtraneous are the keys of live resources in no base render that carry the compare option
	// IgnoreExtraneous (argocd.argoproj.io/compare-options): Argo CD does not count them against the app's
	// sync status, so they are not in Drift.
	IgnoredExtraneous []string `json:"ignoredExtraneous,omitempty"`
	// DriftSecretKeys are the Secret keys whose live value differs from the base render's, per resource key
	// ("data.token"); names only, never values.
	DriftSecretKeys map[string][]string `json:"driftSecretKeys,omitempty"`
	// LiveDiff is what syncing the head render would change in the cluster (live → head), Secret values masked.
	LiveDiff []diff.Resource `json:"liveDiff"`
	// Notes are remarks on the comparison (e.g. Secret values masked by Argo CD: only keys compared).
	Notes []string `json:"notes,omitempty"`
}

// Drifted reports whether live state differs from the base render.
func (l *Live) Drifted() bool { return l != nil && len(l.Drift) > 0 }

// Key is "namespace/name".
func (a *App) Key() string { return a.Namespace + "/" + a.Name }

// Summary counts apps by status and resources by change.
type Summary struct {
	Apps      int `json:"apps"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// Resources across all apps (hooks not counted).
	ResourcesAdded    int `json:"resourcesAdded"`
	ResourcesModified int `json:"resourcesModified"`
	ResourcesRemoved  int `json:"resourcesRemoved"`
	// Waves is the number of waves of the plan, when there is one.
	Waves int `json:"waves,omitempty"`
}

// Summarize recomputes r.Summary from r.Apps (the wave count is kept).
func (r *Report) Summarize() {
	s := Summary{Waves: r.Summary.Waves, Apps: len(r.Apps)}
	for _, a := range r.Apps {
		switch a.Status {
		case StatusChanged:
			s.Changed++
		case StatusUnchanged:
			s.Unchanged++
		case StatusAdded:
			s.Added++
		case StatusRemoved:
			s.Removed++
		case StatusError:
			s.Failed++
		case StatusSkipped:
			s.Skipped++
		}
		s.ResourcesAdded += a.Counts.Added
		s.ResourcesModified += a.Counts.Modified
		s.ResourcesRemoved += a.Counts.Removed
	}
	r.Summary = s
}

// HasChanges reports whether any app changed, was added or removed.
func (r *Report) HasChanges() bool {
	return r.Summary.Changed+r.Summary.Added+r.Summary.Removed > 0
}

// UnrenderedAffected counts the apps the change affects that were not rendered (status skipped with a reason
// the change gives: a source outside the checkout, a plugin without Argo CD): what they change is not known, so
// they are never "no change".
func (r *Report) UnrenderedAffected() int {
	n := 0
	for i := range r.Apps {
		if a := &r.Apps[i]; a.Status == StatusSkipped && len(a.AffectedBy) > 0 {
			n++
		}
	}
	return n
}

// HasErrors reports whether any app failed to render, the repository had problems, or the change adds or alters
// an ApplicationSet whose apps could not be generated (nothing is known of what it changes).
func (r *Report) HasErrors() bool {
	return r.Summary.Failed > 0 || len(r.Problems) > 0 || r.UnevaluatedChanged() > 0
}

// UnevaluatedChanged counts the unevaluated ApplicationSets the change adds or alters.
func (r *Report) UnevaluatedChanged() int {
	n := 0
	for _, u := range r.Unevaluated {
		if u.Changed {
			n++
		}
	}
	return n
}

// Unevaluated is an ApplicationSet with live generators whose apps were not generated.
type Unevaluated struct {
	ApplicationSet string   `json:"applicationSet"` // namespace/name
	File           string   `json:"file,omitempty"`
	Parent         string   `json:"parent,omitempty"` // the app-of-apps whose manifests hold it
	Generators     []string `json:"generators"`
	Reason         string   `json:"reason"`
	// Changed is set when this change adds or alters it: the diff check fails, as for an app that failed to
	// render, since what it generates is unknown.
	Changed bool `json:"changed,omitempty"`
}

// String is the one line shown for it.
func (u Unevaluated) String() string {
	s := "applicationset " + u.ApplicationSet
	if u.File != "" {
		s += " (" + u.File + ")"
	} else if u.Parent != "" {
		s += " (in the manifests of " + u.Parent + ")"
	}
	return s + ": " + strings.Join(u.Generators, ", ") + " generator not evaluated: " + u.Reason
}
