package argocd

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// The request bodies below mirror the JSON of server/application/application.proto (ApplicationSyncRequest,
// ApplicationRollbackRequest, ApplicationPatchRequest): the generated Go types live in a package that pulls in
// grpc-gateway, so they are restated here with the same field names.

// ListQuery filters GET /api/v1/applications (server/application/application.proto ApplicationQuery).
type ListQuery struct {
	// Selector is a Kubernetes label selector, e.g. "env=prd,region in (eu-1,eu-2)".
	Selector string
	// Projects keeps only apps of these projects.
	Projects []string
	// Repo keeps only apps with a source of this repository URL.
	Repo string
	// AppNamespace keeps only apps in this namespace (apps in any namespace).
	AppNamespace string
}

// ListApplications lists applications. Items are sorted by name (server/application/application.go List).
func (c *Client) ListApplications(ctx context.Context, q ListQuery) (*v1alpha1.ApplicationList, error) {
	v := url.Values{}
	setNonEmpty(v, "selector", q.Selector)
	setNonEmpty(v, "repo", q.Repo)
	setNonEmpty(v, "appNamespace", q.AppNamespace)
	for _, p := range q.Projects {
		v.Add("projects", p)
	}
	var out v1alpha1.ApplicationList
	if err := c.call(ctx, request{method: "GET", path: apiPath("applications"), query: v}, &out); err != nil {
		return nil, fmt.Errorf("listing applications: %w", err)
	}
	return &out, nil
}

// GetApplication reads one application. name may be qualified "namespace/name". With refresh "normal" or "hard"
// the server asks the controller to reconcile the app and answers only after that reconcile was written
// (server/application/application.go Get), so the answer is newer than the call. A missing app is
// ErrPermissionDenied, as for an app the token may not read (FindApplication tells them apart).
func (c *Client) GetApplication(ctx context.Context, name string, refresh v1alpha1.RefreshType) (*v1alpha1.Application, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	setNonEmpty(v, "appNamespace", ns)
	setNonEmpty(v, "refresh", string(refresh))
	var out v1alpha1.Application
	if err := c.call(ctx, request{method: "GET", path: apiPath("applications", n), query: v}, &out); err != nil {
		return nil, fmt.Errorf("getting application %q: %w", name, err)
	}
	return &out, nil
}

// FindApplication reads an application of a project. Argo CD answers a missing app with PermissionDenied unless
// the request names a project (it does not tell a caller whether an app it may not see exists:
// server/application/application.go getAppEnforceRBAC); with the project, a missing app — or one of another
// project — is ErrNotFound. An empty project means "default".
func (c *Client) FindApplication(ctx context.Context, name, project string) (*v1alpha1.Application, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	if project == "" {
		project = "default"
	}
	v := url.Values{}
	setNonEmpty(v, "appNamespace", ns)
	v.Set("project", project)
	var out v1alpha1.Application
	if err := c.call(ctx, request{method: "GET", path: apiPath("applications", n), query: v}, &out); err != nil {
		return nil, fmt.Errorf("getting application %q of project %q: %w", name, project, err)
	}
	return &out, nil
}

// ManagedResources returns live against target state per resource of the app. TargetState, LiveState,
// NormalizedLiveState and PredictedLiveState are JSON documents encoded as strings ("null" when absent).
func (c *Client) ManagedResources(ctx context.Context, name string) ([]v1alpha1.ResourceDiff, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	setNonEmpty(v, "appNamespace", ns)
	var out struct {
		Items []v1alpha1.ResourceDiff `json:"items"`
	}
	if err := c.call(ctx, request{method: "GET", path: apiPath("applications", n, "managed-resources"), query: v}, &out); err != nil {
		return nil, fmt.Errorf("getting managed resources of application %q: %w", name, err)
	}
	return out.Items, nil
}

// ManifestResponse is the repo-server's rendering of an app (reposerver/repository/repository.proto
// ManifestResponse): each manifest is one JSON object; Secrets come back masked by the API server.
type ManifestResponse struct {
	Manifests  []string `json:"manifests,omitempty"`
	Namespace  string   `json:"namespace,omitempty"`
	Server     string   `json:"server,omitempty"`
	Revision   string   `json:"revision,omitempty"`
	SourceType string   `json:"sourceType,omitempty"`
}

// Manifests renders the app at revision (empty: its target revision) through Argo CD's repo-server.
func (c *Client) Manifests(ctx context.Context, name, revision string) (*ManifestResponse, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	setNonEmpty(v, "appNamespace", ns)
	setNonEmpty(v, "revision", revision)
	var out ManifestResponse
	if err := c.call(ctx, request{method: "GET", path: apiPath("applications", n, "manifests"), query: v}, &out); err != nil {
		return nil, fmt.Errorf("getting manifests of application %q at %q: %w", name, revision, err)
	}
	return &out, nil
}

// SyncRequest is the body of POST /api/v1/applications/{name}/sync.
type SyncRequest struct {
	// Revision to sync a single-source app to (a SHA, tag or branch); empty means its targetRevision. With
	// automated sync on, Argo CD refuses any revision other than targetRevision (FailedPrecondition).
	Revision string
	// Revisions and SourcePositions (1-based) pick revisions of a multi-source app, pairwise.
	Revisions       []string
	SourcePositions []int64
	Prune           bool
	DryRun          bool
	Strategy        *v1alpha1.SyncStrategy
	Resources       []v1alpha1.SyncOperationResource
	SyncOptions     []string
	RetryStrategy   *v1alpha1.RetryStrategy
	Infos           []v1alpha1.Info
}

type syncBody struct {
	Name            string                           `json:"name"`
	AppNamespace    string                           `json:"appNamespace,omitempty"`
	Revision        string                           `json:"revision,omitempty"`
	Revisions       []string                         `json:"revisions,omitempty"`
	SourcePositions []int64                          `json:"sourcePositions,omitempty"`
	Prune           bool                             `json:"prune,omitempty"`
	DryRun          bool                             `json:"dryRun,omitempty"`
	Strategy        *v1alpha1.SyncStrategy           `json:"strategy,omitempty"`
	Resources       []v1alpha1.SyncOperationResource `json:"resources,omitempty"`
	SyncOptions     *syncOptions                     `json:"syncOptions,omitempty"`
	RetryStrategy   *v1alpha1.RetryStrategy          `json:"retryStrategy,omitempty"`
	Infos           []v1alpha1.Info                  `json:"infos,omitempty"`
}

type syncOptions struct {
	Items []string `json:"items"`
}

// Sync asks Argo CD to sync the app: it sets the app's operation and answers with the updated Application (its
// status.operationState cleared, util/argo/argo.go SetAppOperation); the controller runs the operation
// afterwards. Refusals: ErrOperationInProgress, ErrFailedPrecondition (automated sync on and a different
// revision, revision not resolvable), ErrPermissionDenied (sync window, RBAC), ErrNotFound.
//
// Like every call, a sync is retried after a 5xx or a connection error. When the first attempt had in fact
// reached the server, the retry is refused with ErrOperationInProgress: callers treat that as "an operation
// is running, perhaps ours" and check the operation's revision and start time.
func (c *Client) Sync(ctx context.Context, name string, r SyncRequest) (*v1alpha1.Application, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	body := syncBody{
		Name: n, AppNamespace: ns, Revision: r.Revision, Revisions: r.Revisions, SourcePositions: r.SourcePositions,
		Prune: r.Prune, DryRun: r.DryRun, Strategy: r.Strategy, Resources: r.Resources,
		RetryStrategy: r.RetryStrategy, Infos: r.Infos,
	}
	if r.SyncOptions != nil {
		body.SyncOptions = &syncOptions{Items: r.SyncOptions}
	}
	var out v1alpha1.Application
	if err := c.call(ctx, request{method: "POST", path: apiPath("applications", n, "sync"), body: body, startsOperation: true}, &out); err != nil {
		return nil, fmt.Errorf("syncing application %q: %w", name, err)
	}
	return &out, nil
}

// TerminateOperation aborts the app's running operation (its phase becomes Terminating, then Failed).
// ErrInvalidArgument when no operation is running.
func (c *Client) TerminateOperation(ctx context.Context, name string) error {
	ns, n, err := splitName(name)
	if err != nil {
		return err
	}
	v := url.Values{}
	setNonEmpty(v, "appNamespace", ns)
	if err := c.call(ctx, request{method: "DELETE", path: apiPath("applications", n, "operation"), query: v}, nil); err != nil {
		return fmt.Errorf("terminating the operation of application %q: %w", name, err)
	}
	return nil
}

// RollbackRequest is the body of POST /api/v1/applications/{name}/rollback; ID is a status.history[].id.
type RollbackRequest struct {
	ID     int64
	Prune  bool
	DryRun bool
}

type rollbackBody struct {
	Name         string `json:"name"`
	AppNamespace string `json:"appNamespace,omitempty"`
	ID           int64  `json:"id"`
	Prune        bool   `json:"prune,omitempty"`
	DryRun       bool   `json:"dryRun,omitempty"`
}

// Rollback syncs the app to the revision of history entry r.ID. Refused with ErrFailedPrecondition while
// automated sync is on, ErrInvalidArgument for an unknown ID, ErrOperationInProgress during an operation.
func (c *Client) Rollback(ctx context.Context, name string, r RollbackRequest) (*v1alpha1.Application, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	body := rollbackBody{Name: n, AppNamespace: ns, ID: r.ID, Prune: r.Prune, DryRun: r.DryRun}
	var out v1alpha1.Application
	if err := c.call(ctx, request{method: "POST", path: apiPath("applications", n, "rollback"), body: body, startsOperation: true}, &out); err != nil {
		return nil, fmt.Errorf("rolling back application %q to history id %d: %w", name, r.ID, err)
	}
	return &out, nil
}

// PatchType is how Patch interprets its patch (server/application/application.go Patch).
type PatchType string

const (
	// PatchJSON is an RFC 6902 JSON patch (the server's default).
	PatchJSON PatchType = "json"
	// PatchMerge is an RFC 7386 JSON merge patch.
	PatchMerge PatchType = "merge"
)

type patchBody struct {
	Name         string `json:"name"`
	AppNamespace string `json:"appNamespace,omitempty"`
	Patch        string `json:"patch"`
	PatchType    string `json:"patchType"`
}

// Patch changes the Application's spec, labels or annotations, e.g. turning automated sync off for a rollout:
// Patch(ctx, app, `{"spec":{"syncPolicy":{"automated":null}}}`, PatchMerge).
func (c *Client) Patch(ctx context.Context, name, patch string, patchType PatchType) (*v1alpha1.Application, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	body := patchBody{Name: n, AppNamespace: ns, Patch: patch, PatchType: string(patchType)}
	var out v1alpha1.Application
	if err := c.call(ctx, request{method: "PATCH", path: apiPath("applications", n), body: body}, &out); err != nil {
		return nil, fmt.Errorf("patching application %q: %w", name, err)
	}
	return &out, nil
}

// SyncWindows is the answer of GET /api/v1/applications/{name}/syncwindows.
type SyncWindows struct {
	ActiveWindows   []SyncWindow `json:"activeWindows,omitempty"`
	AssignedWindows []SyncWindow `json:"assignedWindows,omitempty"`
	CanSync         bool         `json:"canSync"`
}

// SyncWindow is one sync window of the app's project.
type SyncWindow struct {
	Kind       string `json:"kind"`
	Schedule   string `json:"schedule"`
	Duration   string `json:"duration"`
	ManualSync bool   `json:"manualSync"`
}

// SyncWindows reports whether a manual sync of the app is allowed now.
func (c *Client) SyncWindows(ctx context.Context, name string) (*SyncWindows, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	setNonEmpty(v, "appNamespace", ns)
	var out SyncWindows
	if err := c.call(ctx, request{method: "GET", path: apiPath("applications", n, "syncwindows"), query: v}, &out); err != nil {
		return nil, fmt.Errorf("getting sync windows of application %q: %w", name, err)
	}
	return &out, nil
}

// apiPath returns the segments of /api/v1/<elem...>.
func apiPath(elem ...string) []string {
	return append([]string{"api", "v1"}, elem...)
}

// splitName splits a qualified "namespace/name" (the Argo CD CLI's form for apps in any namespace).
func splitName(name string) (ns, n string, err error) {
	n = name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		ns, n = name[:i], name[i+1:]
	}
	if n == "" || n == "." || n == ".." || strings.ContainsRune(n, '/') || ns == "." || ns == ".." {
		return "", "", &validationError{fmt.Sprintf("application name %q is not valid", name)}
	}
	return ns, n, nil
}

func setNonEmpty(v url.Values, k, val string) {
	if val != "" {
		v.Set(k, val)
	}
}

// ResourceVersion returns an object's resourceVersion as an integer. Argo CD itself compares them so
// (server/application/application.go Watch and Get parse them with strconv.Atoi); ok is false when it is not one.
func ResourceVersion(rv string) (n int64, ok bool) {
	n, err := strconv.ParseInt(rv, 10, 64)
	return n, err == nil
}

// NewerResourceVersion: resourceVersion a is above b, compared as integers as Argo CD does; true when either is
// not an integer (an unknown version is taken as news, never dropped).
func NewerResourceVersion(a, b string) bool {
	na, okA := ResourceVersion(a)
	nb, okB := ResourceVersion(b)
	return !okA || !okB || na > nb
}
