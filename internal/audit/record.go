package audit

import (
	"encoding/json"
	"strconv"
	"time"
)

// Schema names the record format; it changes only if a field changes meaning or goes away (fields may be added).
const Schema = "fleetwave.audit/v1"

// Record is one event of a rollout's audit trail, with what a reader needs to understand it on its own: the
// rollout it belongs to (repository, pull request, merge commit, who merged, the plan's digest, the check-runs),
// the wave and the app it is about. Its JSON is one line of the export.
type Record struct {
	Schema string `json:"schema"`
	// ID is the event's id: increasing in the order events were written; a consumer resumes after the last it read.
	ID int64     `json:"id"`
	At time.Time `json:"at"`
	// Rollout is the rollout the event belongs to, as it is when exported.
	Rollout Rollout `json:"rollout"`
	// Actor is the GitHub login of the person who acted (merged, paused, approved, rolled back…), or "fleetwave".
	Actor  string `json:"actor"`
	Action string `json:"action"`
	// Target is the event's subject as stored (a wave's name, an app, a short revision…); Wave and App say what
	// it names when it is a wave or an app of the rollout.
	Target string `json:"target,omitempty"`
	Wave   string `json:"wave,omitempty"`
	// WaveCheckRun is the check-run "fleetwave/wave: <Wave>" when the event is a wave's and the check-run exists.
	WaveCheckRun *CheckRun `json:"waveCheckRun,omitempty"`
	App          *App      `json:"app,omitempty"`
	Result       string    `json:"result,omitempty"`
	Message      string    `json:"message,omitempty"`
	// DeliveryID is the GitHub webhook delivery that carried a command, when there was one.
	DeliveryID string `json:"deliveryId,omitempty"`
	// Plan is the plan the rollout executed, as the store keeps it (the plan's JSON contract with the execution
	// settings under "fleetwaveExecution"): on the rollout's "created" record only.
	Plan json.RawMessage `json:"plan,omitempty"`
}

// Rollout is what every record says of its rollout.
type Rollout struct {
	ID        int64  `json:"id"`
	Repo      string `json:"repo"`
	PR        int    `json:"pr,omitempty"`
	PRURL     string `json:"prURL,omitempty"`
	MergeSHA  string `json:"mergeSHA"`
	BaseSHA   string `json:"baseSHA,omitempty"`
	CommitURL string `json:"commitURL"`
	// MergedBy is who merged the pull request or pushed the commit ("" when not recorded: a terminal's rollout).
	MergedBy string `json:"mergedBy,omitempty"`
	// PlanDigest is "sha256:<hex>" of the stored plan (the "created" record carries the plan itself).
	PlanDigest string `json:"planDigest"`
	// CheckRuns are the rollout's check-runs on the merge commit that exist: fleetwave/rollout, one per wave,
	// fleetwave/rollback.
	CheckRuns []CheckRun `json:"checkRuns,omitempty"`
}

// CheckRun is a check-run fleetwave created for the rollout.
type CheckRun struct {
	Name string `json:"name"`
	ID   int64  `json:"id"`
	URL  string `json:"url"`
}

// App is the Argo CD Application an event is about.
type App struct {
	// Instance is the Argo CD instance ("" — left out — for the one Argo CD of a fleet configured the old way).
	Instance  string `json:"instance,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Cluster   string `json:"cluster,omitempty"`
	// Revision is the revision the result is about: the rollout's target for a sync, the previous revision for a
	// rollback.
	Revision string `json:"revision,omitempty"`
}

// String is "[instance:]namespace/name".
func (a App) String() string {
	s := a.Namespace + "/" + a.Name
	if a.Instance != "" {
		s = a.Instance + ":" + s
	}
	return s
}

func checkRunURL(web, repo string, id int64) string {
	return web + "/" + repo + "/runs/" + strconv.FormatInt(id, 10)
}
