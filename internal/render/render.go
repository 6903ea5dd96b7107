package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/hook"
	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/utils/kube"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/manifestyaml"
	"github.com/fleetwave/fleetwave/internal/render/directory"
	helmengine "github.com/fleetwave/fleetwave/internal/render/helm"
	kustengine "github.com/fleetwave/fleetwave/internal/render/kustomize"
	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// Limits cap what one application's render may consume. PR content is hostile: a chart can loop, an overlay can
// multiply objects, a YAML file can be a billion laughs. Zero values take the defaults below.
type Limits struct {
	// MaxFileBytes caps any single file read from the repository (default 8 MiB).
	MaxFileBytes int64
	// MaxOutputBytes caps the JSON size of all manifests of one app (default 64 MiB).
	MaxOutputBytes int64
	// MaxDocuments caps the number of objects one app renders to (default 10,000).
	MaxDocuments int
	// Timeout caps the wall time of one app's render (default 60 s; Argo CD's exec timeout is 90 s).
	Timeout time.Duration
}

// Default limits.
const (
	DefaultMaxOutputBytes = 64 << 20
	DefaultMaxDocuments   = 10000
	DefaultTimeout        = 60 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = repofs.DefaultMaxFileBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxDocuments <= 0 {
		l.MaxDocuments = DefaultMaxDocuments
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// Options configure a Renderer.
type Options struct {
	Limits Limits
	// AllowRemote lets an operator allow remote Kustomize bases. Fetching them is not implemented: with or without
	// it, a remote base is refused, with a message that says which.
	AllowRemote bool
	// Charts fetches charts from the Helm chart repositories the operator allows (internal/edge/chartfetch): chart
	// sources (repoURL + chart) and chart dependencies that are not vendored. nil leaves chart sources external
	// (ErrExternalSource) and unvendored dependencies failing, as before.
	Charts ChartFetcher
	// Git fetches revisions of the git repositories the operator allows (internal/edge/gitfetch): a source or a ref
	// source in another repository than the checkout's is rendered at the targetRevision its Application names.
	// nil leaves them external (ErrExternalSource).
	Git GitFetcher
	// KeepJSON keeps each object's JSON encoding in Result.JSON: the render encodes every object anyway to
	// measure the output, and a caller that sends the objects on as JSON need not encode them again.
	KeepJSON bool
	// OneRender says the Renderer renders a single application (render --app): what the engines keep for the
	// next render of the same chart (Helm's rendered output, a deep copy of a large chart's objects) is not kept.
	OneRender bool
}

// GitFetcher fetches one revision of an allowed git repository: a *gitfetch.Fetcher, or in a render worker its
// parent's fetcher across the pipe. A repository that is not allowed is an error wrapping gitfetch.ErrNotAllowed
// (or, across the pipe, ErrExternalSource).
type GitFetcher interface {
	Checkout(ctx context.Context, repoURL, revision, tagPrefix string) (*gitfetch.Tree, error)
}

// ChartFetcher fetches charts from the allowed Helm repositories: a *chartfetch.Fetcher, or in a render worker
// (internal/render/isolate) its parent's fetcher across the pipe, so that workers hold no repository credentials.
type ChartFetcher interface {
	Chart(ctx context.Context, repoURL, chart, revision string) (*chartfetch.Chart, error)
	Archive(ctx context.Context, repository, chart, constraint string) ([]byte, string, error)
}

// Renderer renders Applications in-process. It is safe for concurrent use; its engines cache parsed charts.
type Renderer struct {
	opts Options
	helm *helmengine.Engine
	kust *kustengine.Engine
}

// New returns a Renderer.
func New(opts Options) *Renderer {
	opts.Limits = opts.Limits.withDefaults()
	if f, ok := opts.Charts.(*chartfetch.Fetcher); ok && f == nil {
		opts.Charts = nil // a nil *Fetcher means none, not a fetcher to call
	}
	if f, ok := opts.Git.(*gitfetch.Fetcher); ok && f == nil {
		opts.Git = nil
	}
	var hopts []helmengine.Option
	if opts.OneRender {
		hopts = append(hopts, helmengine.WithOutputCache(-1, 0))
	}
	return &Renderer{opts: opts, helm: helmengine.New(hopts...), kust: kustengine.New()}
}

// Request is one application to render.
type Request struct {
	App *v1alpha1.Application
	// Repos maps a source's repoURL to the local checkout that holds it; ok=false marks the source as external
	// (rendered through Argo CD when it is configured).
	Repos func(repoURL string) (root string, ok bool)
	// Settings are the cluster and argocd-cm facts; zero fields take DefaultSettings.
	Settings Settings
	// YAML asks for Result.YAML, for a caller that only prints the manifests (render --app): a render worker
	// (internal/render/isolate) then encodes them itself and sends that stream instead of the objects.
	YAML bool
}

// Result is an application's rendered manifests.
type Result struct {
	// Objects are the manifests in Argo CD's order (sources in order, each in its tool's output order), with
	// List kinds flattened and tracking metadata applied to every object but CRDs.
	Objects []*unstructured.Unstructured
	// ReadFiles are the repository-relative paths of the files the render read; ReadDirs the directories it listed.
	ReadFiles []string
	ReadDirs  []string
	// SourceTypes are the detected types per source (Helm, Kustomize, Directory; "" for a skipped ref source).
	SourceTypes []string
	// JSON is each object's JSON encoding, the one measured against Limits.MaxOutputBytes, when Options.KeepJSON
	// asks for it (a render worker sends it as is), else nil.
	JSON []json.RawMessage
	// YAML, when Request.YAML asked for it and a render worker sent it, is the objects as WriteYAML writes them;
	// Objects is then nil. Otherwise YAML is nil and Objects holds the manifests: a caller that asks for YAML
	// writes YAML when it is not nil and Objects (with WriteYAML) when it is.
	YAML []byte
}

// ErrExternalSource marks a source that is not in the local checkout (another repository or a chart
// repository). ErrPluginSource marks a config-management-plugin source, which only Argo CD can render.
var (
	ErrExternalSource = errors.New("source is not in the checkout")
	ErrPluginSource   = errors.New("config management plugins run only inside Argo CD; render this app through the Argo CD API (diff --argocd)")
)

// Error is a render failure of one application: one line naming the app, the source path and the cause.
type Error struct {
	App  string
	Path string // the source's path inside its repository
	Err  error
}

func (e *Error) Error() string {
	cause := TagRefusal(e.Err.Error())
	if e.Path != "" {
		return fmt.Sprintf("app %q (%s): %s", e.App, e.Path, cause)
	}
	return fmt.Sprintf("app %q: %s", e.App, cause)
}

// libraryRules are the refusals of hostile input the libraries make themselves, recognised by their own words,
// so that every refusal line names its rule as fleetwave's own do ("refused (rule)"):
//   - yaml-aliases: go.yaml.in/yaml/v3 decode.go, "document contains excessive aliasing" (Helm values, plain
//     manifests, Jsonnet's parseYaml);
//   - nesting-depth: encoding/json scanner.go and yaml/v3 scannerc.go, "exceeded max depth";
//   - template-recursion: Helm's engine.go (recursionMaxNums), "rendering template has a nested reference name",
//     and text/template exec.go, "exceeded maximum template depth";
//   - stack-limit: go-jsonnet interpreter.go, "max stack frames exceeded";
//   - remote-reference: a chart dependency that is neither vendored nor fetchable (internal/render/helm).
var libraryRules = []struct{ words, rule string }{
	{"excessive aliasing", "yaml-aliases"},
	{"exceeded max depth", "nesting-depth"},
	{"rendering template has a nested reference name", "template-recursion"},
	{"exceeded maximum template depth", "template-recursion"},
	{"max stack frames exceeded", "stack-limit"},
	{"is not vendored under", "remote-reference"},
}

// TagRefusal prefixes a library's refusal in msg with its rule, "refused (rule): msg", and returns any other
// message as it is (one that names its rule already included). A render worker tags a message before it
// shortens it: the words that name the rule may be at its end (Helm's recursion message is 100 KB long).
func TagRefusal(msg string) string {
	if strings.Contains(msg, "refused (") {
		return msg
	}
	for _, r := range libraryRules {
		if strings.Contains(msg, r.words) {
			return "refused (" + r.rule + "): " + msg
		}
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ParseApplication parses an Application manifest (YAML or JSON), strictly enough to catch a misspelt kind.
func ParseApplication(data []byte) (*v1alpha1.Application, error) {
	var app v1alpha1.Application
	if err := yaml.Unmarshal(data, &app); err != nil {
		return nil, fmt.Errorf("parsing Application: %w", err)
	}
	if app.Kind != "Application" || !strings.HasPrefix(app.APIVersion, "argoproj.io/") {
		return nil, fmt.Errorf("not an argoproj.io Application (apiVersion %q, kind %q)", app.APIVersion, app.Kind)
	}
	if app.Name == "" {
		return nil, errors.New("application has no metadata.name")
	}
	return &app, nil
}

// IsHook reports whether obj is a sync hook (Argo CD or Helm hook annotation) rather than a managed resource,
// with gitops-engine's own rules (pkg/sync/hook/hook.go): hooks never count toward sync status.
func IsHook(obj *unstructured.Unstructured) bool { return hook.IsHook(obj) }

// Render produces the manifests Argo CD's repo-server would produce for req.App.
func (r *Renderer) Render(ctx context.Context, req Request) (*Result, error) {
	app := req.App
	if app == nil {
		return nil, errors.New("render: no application")
	}
	s := req.Settings.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, &Error{App: app.Name, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Limits.Timeout)
	defer cancel()

	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	// Helm's template engine takes no context: run the render aside so the time cap holds even when a hostile
	// chart loops. The abandoned goroutine ends when its template does; its result is dropped.
	go func() {
		res, err := r.render(ctx, app, req.Repos, s)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &Error{App: app.Name, Err: fmt.Errorf("refused (time-limit): rendering took longer than %s", r.opts.Limits.Timeout)}
		}
		return nil, &Error{App: app.Name, Err: ctx.Err()}
	}
}

func (r *Renderer) render(ctx context.Context, app *v1alpha1.Application, repos func(string) (string, bool), s Settings) (*Result, error) {
	instance := s.InstanceName(app)
	multi := app.Spec.HasMultipleSources()
	sources := app.Spec.GetSources()
	if len(sources) == 0 {
		return nil, &Error{App: app.Name, Err: errors.New("application has no source")}
	}
	if repos == nil {
		repos = func(string) (string, bool) { return "", false }
	}
	rec := &repofs.Recorder{}
	checkouts := map[string]*repofs.FS{}
	// open returns the files of repoURL at revision, and the commit they are at ("" for the checkout: the
	// side's revision). The checkout's reads are recorded; a fetched repository's are not (they are not this
	// repository's files: the Application's targetRevision is what changes them).
	tagPrefixes := s.Target().GitTagPrefix()
	open := func(src *v1alpha1.ApplicationSource) (*repofs.FS, string, error) {
		repoURL, revision, tagPrefix := src.RepoURL, src.TargetRevision, ""
		if tagPrefixes {
			tagPrefix = src.TagPrefix
		}
		root, ok := repos(repoURL)
		commit := ""
		if !ok {
			tree, err := r.gitTree(ctx, repoURL, revision, tagPrefix)
			if err != nil {
				return nil, "", err
			}
			root, commit = tree.Dir, tree.Commit
		}
		if f, ok := checkouts[root]; ok {
			return f, commit, nil
		}
		f, err := repofs.New(root, r.opts.Limits.MaxFileBytes)
		if err != nil {
			return nil, "", err
		}
		if commit == "" {
			f = f.WithRecorder(rec)
		}
		checkouts[root] = f
		return f, commit, nil
	}

	// Ref sources provide "$name/..." value files to the Helm sources of a multi-source app.
	refs := map[string]*repofs.FS{}
	refErrs := map[string]error{}
	refRevs := map[string]refRev{}
	if multi {
		for _, src := range sources {
			if src.Ref == "" {
				continue
			}
			if f, commit, err := open(&src); err == nil {
				refs["$"+src.Ref] = f
				refRevs["$"+src.Ref] = refRev{repoURL: src.RepoURL, targetRevision: src.TargetRevision, commit: commit}
			} else if r.opts.Git != nil {
				refErrs["$"+src.Ref] = err // else: external, said by externalRef
			}
		}
	}

	res := &Result{}
	var size int64
	for i := range sources {
		src := sources[i].DeepCopy()
		// reposerver/repository/repository.go GenerateManifest: a ref-only source of a multi-source app renders nothing.
		if multi && src.Path == "" && !src.IsOCI() && !src.IsHelm() && src.IsRef() {
			res.SourceTypes = append(res.SourceTypes, "")
			continue
		}
		objs, typ, err := r.renderSource(ctx, app, instance, src, open, refs, refErrs, refRevs, s)
		if err != nil {
			return nil, &Error{App: app.Name, Path: sourceLabel(src, i, multi), Err: err}
		}
		res.SourceTypes = append(res.SourceTypes, typ)
		// The objects, flattened and tracked in order up to the first that fails (its error comes after what
		// precedes it is measured, as when each object was done in turn)...
		var targets []*unstructured.Unstructured
		var targetErr error
	collect:
		for _, obj := range objs {
			ts, err := flatten(obj)
			if err != nil {
				targetErr = &Error{App: app.Name, Path: sourceLabel(src, i, multi), Err: err}
				break
			}
			for _, t := range ts {
				// GenerateManifests: tracking on everything but CRDs.
				if s.AppLabelKey != "" && instance != "" && !kube.IsCRD(t) {
					if err := setAppInstance(t, s.AppLabelKey, instance, app.Spec.Destination.Namespace, s.TrackingMethod, s.InstallationID); err != nil {
						targetErr = &Error{App: app.Name, Path: sourceLabel(src, i, multi), Err: err}
						break collect
					}
				}
				targets = append(targets, t)
			}
		}
		// ...then encoded on all CPUs a batch at a time, each batch measured in order: the caps stop the
		// encoding within a batch of where they are reached.
		for start := 0; start < len(targets); start += encodeBatch {
			batch := targets[start:min(start+encodeBatch, len(targets))]
			encs, errs := marshalEach(batch)
			for j, t := range batch {
				if errs[j] != nil {
					return nil, &Error{App: app.Name, Err: errs[j]}
				}
				size += int64(len(encs[j]))
				if r.opts.KeepJSON {
					res.JSON = append(res.JSON, encs[j])
				}
				if size > r.opts.Limits.MaxOutputBytes {
					return nil, &Error{App: app.Name, Path: sourceLabel(src, i, multi), Err: fmt.Errorf("refused (output-size): manifests exceed %d bytes", r.opts.Limits.MaxOutputBytes)}
				}
				res.Objects = append(res.Objects, t)
				if len(res.Objects) > r.opts.Limits.MaxDocuments {
					return nil, &Error{App: app.Name, Path: sourceLabel(src, i, multi), Err: fmt.Errorf("refused (document-count): more than %d objects", r.opts.Limits.MaxDocuments)}
				}
			}
		}
		if targetErr != nil {
			return nil, targetErr
		}
	}
	res.ReadFiles = rec.Files()
	res.ReadDirs = rec.Dirs()
	return res, nil
}

// encodeBatch is how many objects a render encodes at once, on all CPUs (marshalEach).
const encodeBatch = 64

// marshalEach is json.Marshal of each object, on all CPUs: a large chart's objects are megabytes of JSON.
func marshalEach(objs []*unstructured.Unstructured) ([][]byte, []error) {
	encs, errs := make([][]byte, len(objs)), make([]error, len(objs))
	workers := min(runtime.GOMAXPROCS(0), len(objs))
	if workers <= 1 {
		for i, o := range objs {
			encs[i], errs[i] = json.Marshal(o.Object)
		}
		return encs, errs
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(objs); i = int(next.Add(1) - 1) {
				encs[i], errs[i] = json.Marshal(objs[i].Object)
			}
		})
	}
	wg.Wait()
	return encs, errs
}

func sourceLabel(src *v1alpha1.ApplicationSource, i int, multi bool) string {
	label := src.Path
	if src.Chart != "" {
		label = "chart " + src.Chart
	}
	if multi {
		return fmt.Sprintf("source %d: %s", i+1, label)
	}
	return label
}

func (r *Renderer) renderSource(ctx context.Context, app *v1alpha1.Application, instance string, src *v1alpha1.ApplicationSource,
	open func(*v1alpha1.ApplicationSource) (*repofs.FS, string, error), refs map[string]*repofs.FS, refErrs map[string]error, refRevs map[string]refRev,
	s Settings) ([]*unstructured.Unstructured, string, error) {
	fsys, appPath, commit, err := r.openSource(ctx, app, src, open, refs, refErrs)
	if err != nil {
		return nil, "", err
	}
	tgt := s.Target()
	if err := refConflict(app, src, commit, refRevs, tgt.RefRevisionsResolved()); err != nil {
		return nil, "", err
	}
	refs = refsAsResolved(app, src, tgt.RefRevisionsResolved(), refs, refRevs)
	revision := s.Revision
	if commit != "" {
		// reposerver/repository/repository.go GenerateManifests: a source's ARGOCD_APP_REVISION is the commit its
		// own repository was resolved to.
		revision = commit
	}
	appPath, err = repofs.Clean(appPath)
	if err != nil {
		return nil, "", err
	}
	if !fsys.IsDir(appPath) {
		// reposerver/repository/repository.go runManifestGenAsync: "<path>: app path does not exist".
		if _, err := fsys.Resolve(appPath); err != nil {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("%s: app path does not exist", appPath)
	}
	if err := mergeSourceParameters(src, fsys, appPath, instance); err != nil {
		return nil, "", fmt.Errorf("error while parsing source parameters: %w", err)
	}
	typ, err := sourceType(src, fsys, appPath)
	if err != nil {
		return nil, "", err
	}
	env := newEnv(app, instance, src, revision)
	// The cluster version in the format the target's controller passes it ("1.30" before 3.4, "v1.30.5" since).
	kubeVersion := src.GetKubeVersionOrDefault(tgt.ClusterVersion(s.KubeVersion))
	apiVersions := src.GetAPIVersionsOrDefault(s.APIVersions)
	// The app's output caps, checked again where each library hands its output back (internal/render/outputcap).
	caps := outputcap.Limits{MaxBytes: r.opts.Limits.MaxOutputBytes, MaxDocuments: r.opts.Limits.MaxDocuments}
	var objs []*unstructured.Unstructured
	switch typ {
	case v1alpha1.ApplicationSourceTypeHelm:
		objs, err = r.helm.Template(ctx, helmengine.Input{
			FS: fsys, AppPath: appPath, Helm: src.Helm, Env: env, AppName: instance,
			Namespace: app.Spec.Destination.Namespace, KubeVersion: kubeVersion, APIVersions: apiVersions,
			RefSources: refs, AllowRemote: r.opts.AllowRemote, Charts: r.chartSource(), Target: tgt, Output: caps,
		})
	case v1alpha1.ApplicationSourceTypeKustomize:
		objs, err = r.kust.Build(ctx, kustengine.Input{
			FS: fsys, AppPath: appPath, Kustomize: src.Kustomize, Env: env, BuildOptions: s.KustomizeBuildOptions,
			KubeVersion: kubeVersion, APIVersions: apiVersions, AllowRemote: r.opts.AllowRemote, Remote: r.remoteBases(),
			Target: tgt, Output: caps,
		})
	case v1alpha1.ApplicationSourceTypeDirectory:
		dir := v1alpha1.ApplicationSourceDirectory{}
		if src.Directory != nil {
			dir = *src.Directory
		}
		if !tgt.DirectoryExtensionFilterOption() {
			dir.DisableExtensionFilter = false // a field the release does not have
		}
		objs, err = directory.Render(ctx, directory.Input{FS: fsys, AppPath: appPath, Directory: dir, Env: env, MaxManifestBytes: r.opts.Limits.MaxOutputBytes, Output: caps})
	case v1alpha1.ApplicationSourceTypePlugin:
		err = ErrPluginSource
	default:
		err = fmt.Errorf("unknown source type %q", typ)
	}
	return objs, string(typ), err
}

// sourceType mirrors reposerver/repository/repository.go GetAppSourceType: an explicit helm/kustomize/directory/
// plugin block wins (more than one is an error); otherwise util/app/discovery/discovery.go decides from the files
// at the top of the app path: a file named *Chart.yaml means Helm, a kustomization file means Kustomize (which wins
// over Helm), else Directory. Config-management-plugin discovery needs the sidecars and is not attempted.
func sourceType(src *v1alpha1.ApplicationSource, fsys *repofs.FS, appPath string) (v1alpha1.ApplicationSourceType, error) {
	explicit, err := src.ExplicitType()
	if err != nil {
		return "", err
	}
	if explicit != nil {
		return *explicit, nil
	}
	ents, err := fsys.ReadDir(appPath)
	if err != nil {
		return "", err
	}
	typ := v1alpha1.ApplicationSourceTypeDirectory
	helm, kust := false, false
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		if strings.HasSuffix(name, "Chart.yaml") {
			helm = true
		}
		if name == "kustomization.yaml" || name == "kustomization.yml" || name == "Kustomization" {
			kust = true
		}
	}
	switch {
	case kust:
		typ = v1alpha1.ApplicationSourceTypeKustomize
	case helm:
		typ = v1alpha1.ApplicationSourceTypeHelm
	}
	return typ, nil
}

// newEnv is reposerver/repository/repository.go newEnv: the build environment substituted into value-file paths,
// parameters, Kustomize images and labels, and Jsonnet.
func newEnv(app *v1alpha1.Application, instance string, src *v1alpha1.ApplicationSource, revision string) *v1alpha1.Env {
	short := func(n int) string {
		if len(revision) > n {
			return revision[:n]
		}
		return revision
	}
	return &v1alpha1.Env{
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_NAME", Value: instance},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_NAMESPACE", Value: app.Spec.Destination.Namespace},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_PROJECT_NAME", Value: app.Spec.GetProject()},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_REVISION", Value: revision},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_REVISION_SHORT", Value: short(7)},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_REVISION_SHORT_8", Value: short(8)},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: src.RepoURL},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_SOURCE_PATH", Value: src.Path},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: src.TargetRevision},
	}
}

// flatten expands List kinds into their items and drops null lists, as GenerateManifests does.
func flatten(obj *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, nil
	}
	if obj.IsList() {
		var out []*unstructured.Unstructured
		err := obj.EachListItem(func(o kruntime.Object) error {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				return errors.New("resource list item has unexpected type")
			}
			out = append(out, u)
			return nil
		})
		return out, err
	}
	if isNullList(obj) {
		return nil, nil
	}
	return []*unstructured.Unstructured{obj}, nil
}

// isNullList is repository.go isNullList: a "List" whose items are null.
func isNullList(obj *unstructured.Unstructured) bool {
	if _, ok := obj.Object["spec"]; ok {
		return false
	}
	if _, ok := obj.Object["status"]; ok {
		return false
	}
	field, ok := obj.Object["items"]
	return ok && field == nil
}

// WriteYAML writes objs as a YAML stream, "---" separated, keys sorted, in the given order: each object as
// sigs.k8s.io/yaml.Marshal writes it (manifestyaml.Marshal, the same bytes), encoded on all CPUs a batch at a
// time. On an object that does not encode, what precedes it is written and the error names it.
func WriteYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	const batch = 256
	maps := make([]map[string]interface{}, 0, min(batch, len(objs)))
	for start := 0; start < len(objs); start += batch {
		maps = maps[:0]
		for _, o := range objs[start:min(start+batch, len(objs))] {
			maps = append(maps, o.Object)
		}
		docs, errs := manifestyaml.MarshalEach(maps)
		for j, b := range docs {
			if err := errs[j]; err != nil {
				return encodingErr(objs[start+j], err)
			}
			if start+j > 0 {
				if _, err := io.WriteString(w, "---\n"); err != nil {
					return err
				}
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// EncodeYAML is what WriteYAML writes, in one buffer of its size, or ErrYAMLTooLarge past max bytes.
func EncodeYAML(objs []*unstructured.Unstructured, max int64) ([]byte, error) {
	maps := make([]map[string]interface{}, len(objs))
	for i, o := range objs {
		maps[i] = o.Object
	}
	docs, errs := manifestyaml.MarshalEach(maps)
	var n int64
	for i, b := range docs {
		if errs[i] != nil {
			return nil, encodingErr(objs[i], errs[i])
		}
		if i > 0 {
			n += int64(len("---\n"))
		}
		if n += int64(len(b)); n > max {
			return nil, ErrYAMLTooLarge
		}
	}
	out := make([]byte, 0, n)
	for i, b := range docs {
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, b...)
	}
	return out, nil
}

// ErrYAMLTooLarge is EncodeYAML's answer past its bound.
var ErrYAMLTooLarge = errors.New("the manifests' YAML is past its bound")

func encodingErr(o *unstructured.Unstructured, err error) error {
	return fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err)
}
