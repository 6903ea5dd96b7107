package github

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Check-run statuses and conclusions, as GitHub names them.
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"

	ConclusionSuccess        = "success"
	ConclusionFailure        = "failure"
	ConclusionNeutral        = "neutral"
	ConclusionCancelled      = "cancelled"
	ConclusionSkipped        = "skipped"
	ConclusionTimedOut       = "timed_out"
	ConclusionActionRequired = "action_required"
)

var (
	statuses    = []string{StatusQueued, StatusInProgress, StatusCompleted}
	conclusions = []string{ConclusionSuccess, ConclusionFailure, ConclusionNeutral, ConclusionCancelled,
		ConclusionSkipped, ConclusionTimedOut, ConclusionActionRequired}
	levels = []string{"notice", "warning", "failure"}
)

const checkTruncatedNote = "> ✂️ fleetwave truncated this text at GitHub's check-run size limit."

// CheckRun is what fleetwave shows in a check run. Zero fields are not sent.
type CheckRun struct {
	Name    string // e.g. "fleetwave/plan", "fleetwave/wave: canary"
	HeadSHA string // required to create; ignored by updates
	// Status is queued, in_progress or completed; completed requires Conclusion. A Conclusion without Status
	// completes the run.
	Status     string
	Conclusion string
	DetailsURL string
	ExternalID string
	// StartedAt and CompletedAt default to now when the run starts / completes.
	StartedAt   time.Time
	CompletedAt time.Time
	Output      *CheckOutput
	// Actions are buttons (at most 3) that send a check_run requested_action webhook with their Identifier.
	Actions []CheckAction
}

// CheckOutput is a check run's output. Summary and Text longer than MaxCheckRunText are truncated with a note;
// annotations beyond the first MaxAnnotationsPerRequest are sent in successive updates (GitHub appends them).
type CheckOutput struct {
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
}

// Annotation points at a file and line of the repository.
type Annotation struct {
	Path      string // relative to the repository root
	StartLine int
	EndLine   int    // defaults to StartLine
	StartCol  int    // only sent when StartLine == EndLine, as GitHub requires
	EndCol    int    //
	Level     string // notice, warning or failure (default failure)
	Title     string
	Message   string
	Details   string // raw_details
}

// CheckAction is a check-run button: Label ≤ 20, Description ≤ 40, Identifier ≤ 20 characters.
type CheckAction struct {
	Label       string
	Description string
	Identifier  string
}

// CheckRunInfo is a check run as listed on a commit.
type CheckRunInfo struct {
	// AppID is the id of the GitHub App that created the run: any App may create a run of any name.
	AppID      int64
	ID         int64
	Name       string
	HeadSHA    string
	Status     string
	Conclusion string
	ExternalID string
	HTMLURL    string
}

// CreateCheckRun creates a check run on run.HeadSHA and returns its id.
func (c *Client) CreateCheckRun(ctx context.Context, repo string, run CheckRun) (int64, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return 0, err
	}
	if run.HeadSHA == "" {
		return 0, fmt.Errorf("creating check run %q on %s: no head SHA", run.Name, repo)
	}
	req, rest, err := c.checkRequest(run)
	if err != nil {
		return 0, fmt.Errorf("creating check run %q on %s: %w", run.Name, repo, err)
	}
	opts := gh.CreateCheckRunOptions{
		Name: run.Name, HeadSHA: run.HeadSHA, DetailsURL: req.DetailsURL, ExternalID: req.ExternalID,
		Status: req.Status, Conclusion: req.Conclusion, CompletedAt: req.CompletedAt, Output: req.Output,
		Actions: req.Actions,
	}
	if run.Status == StatusInProgress || run.Status == StatusCompleted || run.Conclusion != "" {
		opts.StartedAt = &gh.Timestamp{Time: orNow(run.StartedAt, c.now)}
	}
	created, resp, err := c.svc.Checks.CreateCheckRun(ctx, owner, name, opts)
	if err != nil {
		return 0, apiErr(fmt.Sprintf("creating check run %q on %s@%s", run.Name, repo, text.Short(run.HeadSHA, 12)), resp, err)
	}
	id := created.GetID()
	if err := c.sendAnnotations(ctx, owner, name, id, run, rest); err != nil {
		return id, err
	}
	return id, nil
}

// UpdateCheckRun updates check run id (status, conclusion, output, actions). run.Name is required (GitHub
// takes it on every update); HeadSHA and StartedAt are ignored.
func (c *Client) UpdateCheckRun(ctx context.Context, repo string, id int64, run CheckRun) error {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return err
	}
	req, rest, err := c.checkRequest(run)
	if err != nil {
		return fmt.Errorf("updating check run %d (%q) on %s: %w", id, run.Name, repo, err)
	}
	if _, resp, err := c.svc.Checks.UpdateCheckRun(ctx, owner, name, id, req); err != nil {
		return apiErr(fmt.Sprintf("updating check run %d (%q) on %s", id, run.Name, repo), resp, err)
	}
	return c.sendAnnotations(ctx, owner, name, id, run, rest)
}

// sendAnnotations sends annotations beyond the first request's, MaxAnnotationsPerRequest at a time. GitHub
// requires title and summary with every output; they are repeated unchanged.
func (c *Client) sendAnnotations(ctx context.Context, owner, name string, id int64, run CheckRun, rest []*gh.CheckRunAnnotation) error {
	for len(rest) > 0 {
		n := min(len(rest), MaxAnnotationsPerRequest)
		out := checkOutput(run.Output)
		out.Annotations = rest[:n]
		rest = rest[n:]
		if _, resp, err := c.svc.Checks.UpdateCheckRun(ctx, owner, name, id, gh.UpdateCheckRunOptions{Name: run.Name, Output: out}); err != nil {
			return apiErr(fmt.Sprintf("adding annotations to check run %d (%q) on %s/%s", id, run.Name, owner, name), resp, err)
		}
	}
	return nil
}

// checkRequest validates run and returns the update-shaped request (with the first batch of annotations) and
// the annotations left for later requests.
func (c *Client) checkRequest(run CheckRun) (gh.UpdateCheckRunOptions, []*gh.CheckRunAnnotation, error) {
	var req gh.UpdateCheckRunOptions
	if run.Name == "" {
		return req, nil, errors.New("check run without a name")
	}
	if run.Status != "" && !slices.Contains(statuses, run.Status) {
		return req, nil, fmt.Errorf("unknown check-run status %q", run.Status)
	}
	if run.Conclusion != "" && !slices.Contains(conclusions, run.Conclusion) {
		return req, nil, fmt.Errorf("unknown check-run conclusion %q", run.Conclusion)
	}
	if run.Status == StatusCompleted && run.Conclusion == "" {
		return req, nil, errors.New("a completed check run needs a conclusion")
	}
	if run.Conclusion != "" && run.Status != "" && run.Status != StatusCompleted {
		return req, nil, fmt.Errorf("conclusion %q given with status %q", run.Conclusion, run.Status)
	}
	if len(run.Actions) > MaxCheckRunActions {
		return req, nil, fmt.Errorf("%d actions, GitHub allows %d", len(run.Actions), MaxCheckRunActions)
	}
	req.Name = run.Name
	req.DetailsURL = strPtr(run.DetailsURL)
	req.ExternalID = strPtr(run.ExternalID)
	req.Conclusion = strPtr(run.Conclusion)
	status := run.Status
	if run.Conclusion != "" {
		status = StatusCompleted
	}
	req.Status = strPtr(status)
	if status == StatusCompleted {
		req.CompletedAt = &gh.Timestamp{Time: orNow(run.CompletedAt, c.now)}
	}
	for _, a := range run.Actions {
		if n := len([]rune(a.Label)); n == 0 || n > 20 {
			return req, nil, fmt.Errorf("action label %q: 1 to 20 characters", a.Label)
		}
		if n := len([]rune(a.Description)); n == 0 || n > 40 {
			return req, nil, fmt.Errorf("action description %q: 1 to 40 characters", a.Description)
		}
		if n := len([]rune(a.Identifier)); n == 0 || n > 20 {
			return req, nil, fmt.Errorf("action identifier %q: 1 to 20 characters", a.Identifier)
		}
		req.Actions = append(req.Actions, &gh.CheckRunAction{Label: a.Label, Description: a.Description, Identifier: a.Identifier})
	}
	if run.Output == nil {
		return req, nil, nil
	}
	if run.Output.Title == "" || run.Output.Summary == "" {
		return req, nil, errors.New("check-run output needs a title and a summary")
	}
	var anns []*gh.CheckRunAnnotation
	for _, a := range run.Output.Annotations {
		ann, err := annotation(a)
		if err != nil {
			return req, nil, err
		}
		anns = append(anns, ann)
	}
	req.Output = checkOutput(run.Output)
	req.Output.Text = strPtr(truncated(run.Output.Text, MaxCheckRunText, checkTruncatedNote))
	n := min(len(anns), MaxAnnotationsPerRequest)
	req.Output.Annotations = anns[:n]
	return req, anns[n:], nil
}

// checkOutput is the part of the output repeated with every request: title and summary.
func checkOutput(o *CheckOutput) *gh.CheckRunOutput {
	return &gh.CheckRunOutput{
		Title:   gh.String(o.Title),
		Summary: gh.String(truncated(o.Summary, MaxCheckRunText, checkTruncatedNote)),
	}
}

func annotation(a Annotation) (*gh.CheckRunAnnotation, error) {
	if a.Path == "" || a.StartLine < 1 || a.Message == "" {
		return nil, fmt.Errorf("annotation %+v needs a path, a start line and a message", a)
	}
	end := a.EndLine
	if end < a.StartLine {
		end = a.StartLine
	}
	level := a.Level
	if level == "" {
		level = "failure"
	}
	if !slices.Contains(levels, level) {
		return nil, fmt.Errorf("annotation level %q: notice, warning or failure", level)
	}
	ann := &gh.CheckRunAnnotation{
		Path: gh.String(a.Path), StartLine: gh.Int(a.StartLine), EndLine: gh.Int(end),
		AnnotationLevel: gh.String(level),
		Message:         gh.String(truncated(a.Message, 64<<10-1, "…")),
		Title:           strPtr(truncated(a.Title, 255, "…")),
		RawDetails:      strPtr(truncated(a.Details, 64<<10-1, "…")),
	}
	if a.StartLine == end && a.StartCol > 0 {
		ann.StartColumn = gh.Int(a.StartCol)
		ann.EndColumn = gh.Int(max(a.EndCol, a.StartCol))
	}
	return ann, nil
}

// ListCheckRuns lists the check runs on ref (a SHA, branch or tag), only those named name when name is not
// empty; GitHub returns the latest run of each name.
func (c *Client) ListCheckRuns(ctx context.Context, repo, ref, name string) ([]CheckRunInfo, error) {
	owner, rname, err := splitRepo(repo)
	if err != nil {
		return nil, err
	}
	opts := &gh.ListCheckRunsOptions{CheckName: strPtr(name), ListOptions: gh.ListOptions{PerPage: 100}}
	var out []CheckRunInfo
	for {
		res, resp, err := c.svc.Checks.ListCheckRunsForRef(ctx, owner, rname, ref, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("listing check runs on %s@%s", repo, text.Short(ref, 12)), resp, err)
		}
		for _, r := range res.CheckRuns {
			out = append(out, CheckRunInfo{
				AppID: r.GetApp().GetID(), ID: r.GetID(), Name: r.GetName(), HeadSHA: r.GetHeadSHA(), Status: r.GetStatus(),
				Conclusion: r.GetConclusion(), ExternalID: r.GetExternalID(), HTMLURL: r.GetHTMLURL(),
			})
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func truncated(s string, limit int, note string) string {
	out, _ := truncate(s, limit, note)
	return out
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orNow(t time.Time, now func() time.Time) time.Time {
	if t.IsZero() {
		return now()
	}
	return t
}
