package helm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"helm.sh/helm/v3/pkg/chart"
	chart4 "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/render/target"
)

// Input is one Helm source of one Application, as the renderer core resolved it.
type Input struct {
	FS          *repofs.FS                      // checkout holding the chart; it records every read
	AppPath     string                          // repository-relative chart directory (source.path)
	Helm        *v1alpha1.ApplicationSourceHelm // spec.source.helm, may be nil
	Env         *v1alpha1.Env                   // build environment for envsubst (ARGOCD_APP_NAME, ...)
	AppName     string                          // Argo CD instance name ("<ns>_<name>" outside the control-plane ns)
	Namespace   string                          // spec.destination.namespace
	KubeVersion string                          // source.GetKubeVersionOrDefault(cluster version); "" = Helm default
	APIVersions []string                        // source.GetAPIVersionsOrDefault(cluster list)
	// RefSources maps "$name" of multi-source `ref:` sources to their checkout, for "$name/path" value files and
	// fileParameters.
	RefSources map[string]*repofs.FS
	// AllowRemote reports that the operator allows remote value files. They are never fetched, so they are
	// refused either way; the flag only changes the message. (Charts come through Charts, from the operator's
	// allowed repositories only.)
	AllowRemote bool
	// ValuesFileSchemes is argocd-cm helm.valuesFileSchemes: URL schemes a value file may use. nil means Argo CD's
	// default (https, http). A URL with another scheme is an error, as in Argo CD; an allowed one is refused
	// because remote files are not fetched.
	ValuesFileSchemes []string
	// Charts downloads chart dependencies from chart repositories (`helm dependency build`); nil refuses them.
	Charts ChartSource
	// Target is the Argo CD version to render as (the zero value is target.Newest): Helm 4 from 3.5, Helm 3
	// before, and the version-dependent rules of internal/render/target.
	Target target.Version
	// Output caps the app's output (render.Limits), checked on the rendered templates as Helm's engine returns
	// them, before they are sorted, assembled and split (internal/render/outputcap); zero: no cap here.
	Output outputcap.Limits
}

// ChartSource fetches chart archives from the chart repositories the operator allows.
type ChartSource interface {
	// Archive returns the archive of chart at the highest version satisfying constraint in repository (a URL, or
	// "@name"/"alias:name" naming an allowed repository), and that version.
	Archive(ctx context.Context, repository, chart, constraint string) (data []byte, version string, err error)
}

// Sentinel errors, for callers that classify failures (errors.Is).
var (
	// ErrRemote marks content that would need the network: remote value files, chart repositories, remote
	// JSON-schema references.
	ErrRemote = errors.New("remote content is not fetched")
	// ErrValuesFileNotFound marks a value file that does not exist (and ignoreMissingValueFiles is off).
	ErrValuesFileNotFound = errors.New("values file not found")
	// ErrMissingDependency marks a chart dependency that is neither vendored nor buildable offline.
	ErrMissingDependency = errors.New("missing chart dependency")
)

// Limits bound what one chart may make the engine load.
type Limits struct {
	MaxChartFiles int   // files in a chart directory tree (subcharts included); default 20000
	MaxChartBytes int64 // total bytes of those files; default 100 MiB (Helm's MaxDecompressedChartSize)
	MaxDirDepth   int   // directory nesting (symlink loops end here); default 64
}

func (l Limits) withDefaults() Limits {
	if l.MaxChartFiles <= 0 {
		l.MaxChartFiles = 20000
	}
	if l.MaxChartBytes <= 0 {
		l.MaxChartBytes = 100 << 20
	}
	if l.MaxDirDepth <= 0 {
		l.MaxDirDepth = 64
	}
	return l
}

// Option configures an Engine.
type Option func(*Engine)

// WithCacheEntries bounds the number of parsed charts kept in memory (default 128).
func WithCacheEntries(n int) Option {
	return func(e *Engine) { e.cache, e.cache4 = newChartCache[*chart.Chart](n), newChartCache[*chart4.Chart](n) }
}

// WithOutputCache bounds the cache of rendered results: entries and total bytes of helm output (defaults 256
// entries, 64 MiB). maxEntries < 0 disables it.
func WithOutputCache(maxEntries int, maxBytes int64) Option {
	return func(e *Engine) { e.outputs = newOutputCache(maxEntries, maxBytes) }
}

// WithLimits sets the chart loading limits.
func WithLimits(l Limits) Option { return func(e *Engine) { e.limits = l.withDefaults() } }

// Engine renders Helm charts in-process the way Argo CD's repo-server does with the helm CLI. It is safe for
// concurrent use. Parsed charts are cached by the hash of their files' contents and copied per render; rendered
// results are cached by chart hash and every input of the render (merged values, release, capabilities, flags).
type Engine struct {
	cache   *chartCache[*chart.Chart]  // Helm 3 parses
	cache4  *chartCache[*chart4.Chart] // helm 4 parses of the same files (rendering as Argo CD 3.5+)
	outputs *outputCache
	limits  Limits
}

// New returns an Engine.
func New(opts ...Option) *Engine {
	e := &Engine{cache: newChartCache[*chart.Chart](128), cache4: newChartCache[*chart4.Chart](128),
		outputs: newOutputCache(256, 64<<20), limits: Limits{}.withDefaults()}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Template renders the chart at in.AppPath and returns its objects in the order `helm template` prints them
// (CRDs, manifests in Helm's install order, hooks), split as reposerver/repository/repository.go helmTemplate
// splits them (gitops-engine kube.SplitYAML). Tracking metadata is not applied here.
func (e *Engine) Template(ctx context.Context, in Input) ([]*unstructured.Unstructured, error) {
	if in.FS == nil {
		return nil, errors.New("helm template: no repository checkout")
	}
	appPath, err := repofs.Clean(in.AppPath)
	if err != nil {
		return nil, fmt.Errorf("helm template: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts, err := templateOptions(in, appPath)
	if err != nil {
		return nil, oneLine(fmt.Errorf("helm template %s: %w", appPath, err))
	}
	objs, err := e.helmTemplate(ctx, in, appPath, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, oneLine(fmt.Errorf("helm template %s: %w", appPath, err))
	}
	return objs, nil
}

// lineError keeps the wrapped error for errors.Is/As but prints on one line (Helm's schema and YAML errors span
// several lines).
type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

func oneLine(err error) error {
	msg := err.Error()
	if !strings.ContainsAny(msg, "\r\n") {
		return err
	}
	var parts []string
	for _, l := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return &lineError{msg: strings.Join(parts, "; "), err: err}
}
