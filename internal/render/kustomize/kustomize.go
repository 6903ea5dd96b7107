package kustomize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/ifc"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/manifestyaml"
	"github.com/fleetwave/fleetwave/internal/render/helm/helm4"
	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/render/target"
)

// Input is one Kustomize application source to build.
type Input struct {
	FS        *repofs.FS                           // the checkout; records every read (affected-app detection)
	AppPath   string                               // repository-relative path of the kustomization (source.path)
	Kustomize *v1alpha1.ApplicationSourceKustomize // may be nil
	Env       *v1alpha1.Env
	// BuildOptions is argocd-cm's kustomize.buildOptions, e.g. "--enable-helm --load-restrictor LoadRestrictionsNone".
	BuildOptions string
	// KubeVersion is source.GetKubeVersionOrDefault(cluster version), e.g. "v1.30.0".
	KubeVersion string
	// APIVersions is source.GetAPIVersionsOrDefault(cluster API versions).
	APIVersions []string
	// AllowRemote records that the operator allows remote bases; without Remote they are refused either way, but
	// the message says which.
	AllowRemote bool
	// Target is the Argo CD version to render as (zero: target.Newest); it picks the helm that inflates
	// helmCharts (Helm 4 from 3.5).
	Target target.Version
	// Remote fetches the repository of a remote base (resources, bases, components: "https://host/org/repo//dir?ref=v1",
	// "github.com/org/repo/dir?ref=v1") from the allowed git repositories; the base is then built from that
	// revision as kustomize builds the clone it would make. nil refuses remote bases.
	Remote RemoteFetcher
	// Output caps the app's output (render.Limits): its object count on the ResMap krusty returns, its bytes
	// while the ResMap is encoded, both before the text is split into objects (internal/render/outputcap);
	// zero: no cap here.
	Output outputcap.Limits
}

// Engine builds Kustomize sources in-process. It is safe for concurrent use.
type Engine struct {
	schema sync.RWMutex     // kustomize's process-wide OpenAPI schema (see build)
	now    func() time.Time // helm --generate-name release names
	rmf    *resmap.Factory
	// validator is kustomize edit's field validator (kustomize v5.8.1's accepts everything).
	validator ifc.Validator
}

// New returns an Engine.
func New() *Engine {
	p := provider.NewDefaultDepProvider()
	return &Engine{now: time.Now, rmf: resmap.NewFactory(p.GetResourceFactory()), validator: p.GetFieldValidator()}
}

// isKustomizationName reports whether name is one of kustomize's recognised kustomization file names.
func isKustomizationName(name string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if n == name {
			return true
		}
	}
	return false
}

// Build produces the manifests Argo CD's repo-server would produce for the source (util/kustomize/kustomize.go
// Build, argo-cd v3.5.7): the `kustomize edit` sequence on a scratch copy of the kustomization, then
// `kustomize build <path> <buildOptions>` with kustomize v5.8.1's semantics, in-process and confined to the
// checkout. Objects are returned in kustomize's output order, before tracking.
func (e *Engine) Build(ctx context.Context, in Input) ([]*unstructured.Unstructured, error) {
	objs, err := e.build(ctx, in)
	if err != nil {
		return nil, &buildError{app: in.AppPath, err: err}
	}
	return objs, nil
}

// buildError is a build failure: one line naming the application path, the cause kept for errors.As.
type buildError struct {
	app string
	err error
}

func (b *buildError) Error() string {
	return "kustomize build " + b.app + ": " + text.OneLine(b.err.Error())
}
func (b *buildError) Unwrap() error { return b.err }

// buildState is shared by the application build and any nested builds the pre-walk runs.
type buildState struct {
	in      Input
	opts    *buildOptions
	overlay map[string][]byte
	// helmFiles maps the base name of each rendered-chart file to the kustomization file name it replaces a
	// helmCharts field of (origin annotations).
	helmFiles map[string]string
	// planned maps a kustomization directory whose charts were rendered to the namespace each chart got.
	planned map[string][]string
	// pluginDirs are kustomizations whose output is plugin configuration, in discovery order.
	pluginDirs []pluginDir
	scanned    map[string]bool
	// openAPI: some kustomization in the tree sets `openapi`, which kustomize applies process-wide.
	openAPI bool
	// aliases is the YAML alias expansion budget of the whole build (every buildFS of it).
	aliases repofs.AliasBudget
	// view is the checkout with the fetched remote bases mounted; mounted maps a remote repository and ref to
	// where it is mounted.
	view    *view
	mountMu sync.Mutex
	mounted map[string]string
}

type pluginDir struct {
	file  string // the kustomization listing it
	entry string // as listed
	dir   string // resolved repository-relative directory
}

func (e *Engine) build(ctx context.Context, in Input) ([]*unstructured.Unstructured, error) {
	if in.FS == nil {
		return nil, errors.New("no repository")
	}
	appPath, err := repofs.Clean(in.AppPath)
	if err != nil {
		return nil, err
	}
	kubeVersion, err := parseKubeVersion(in.KubeVersion)
	if err != nil {
		return nil, err
	}
	st := &buildState{in: in, overlay: map[string][]byte{}, helmFiles: map[string]string{}, planned: map[string][]string{}, scanned: map[string]bool{},
		view: newView(in.FS), mounted: map[string]string{}}

	if in.Kustomize != nil {
		ed := &editor{
			fs:        &buildFS{repo: st.view, cwd: appPath, overlay: st.overlay, aliases: &st.aliases},
			appPath:   appPath,
			validator: e.validator,
			env:       in.Env,
		}
		if _, err := ed.apply(in.Kustomize); err != nil {
			if r := ed.fs.firstRefusal(); r != nil {
				return nil, r
			}
			return nil, err
		}
	}

	if in.BuildOptions != "" {
		st.opts, err = parseBuildArgs(buildArgs(appPath, in.BuildOptions, kubeVersion, in.APIVersions))
	} else {
		st.opts, err = parseBuildArgs([]string{appPath})
	}
	if err != nil {
		return nil, err
	}
	// The helm binary kustomize runs for helmCharts is the one Argo CD's image ships: helm 4 from 3.5.
	if in.Target.Helm4() {
		cli := helm4.CLIs[in.Target.HelmCLI()]
		st.opts.helm.helm4 = &cli
	}
	st.opts.helm.output = in.Output
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bfs := newBuildFS(st.view, st.overlay)
	bfs.aliases = &st.aliases
	w := &walker{e: e, st: st, fs: bfs, ctx: ctx, seen: map[string]bool{}}
	rdir, err := bfs.resolve(virtual(appPath))
	if err != nil {
		return nil, err
	}
	if err := w.visit(rdir, "", 0); err != nil {
		return nil, err
	}
	// kustomize keeps the OpenAPI schema in process-wide state (kyaml/openapi): a tree that sets `openapi` builds
	// alone and the state is reset afterwards; every other build uses the default schema, concurrently.
	if st.openAPI {
		e.schema.Lock()
		defer func() {
			openapi.ResetOpenAPI()
			e.schema.Unlock()
		}()
	} else {
		e.schema.RLock()
		defer e.schema.RUnlock()
	}
	if err := w.scanPluginDirs(); err != nil {
		return nil, err
	}
	rm, err := e.krustyRun(ctx, st, rdir)
	if err != nil {
		return nil, err
	}
	if err := e.fixHelmOrigins(rm, st); err != nil {
		return nil, err
	}
	out, err := asYAML(rm, in.Output)
	if err != nil {
		return nil, err
	}
	// Argo CD splits kustomize's standard output with gitops-engine kube.SplitYAML: manifestyaml.Split is it.
	return manifestyaml.Split(out)
}

// asYAML is resmap's AsYaml (sigs.k8s.io/kustomize/api@v0.21.1 resmap/reswrangler.go: each resource's
// AsYAML, "---\n" between them), the same bytes, with the output caps checked as it goes: krusty builds the
// whole ResMap before it returns (krusty/kustomizer.go Run, no hook on the way), so its object count is
// checked first, and the text's size after each resource, before the next is encoded and before it is split.
func asYAML(rm resmap.ResMap, caps outputcap.Limits) ([]byte, error) {
	if err := caps.Documents(rm.Size()); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, res := range rm.Resources() {
		out, err := res.AsYAML()
		if err != nil {
			m, _ := res.Map()
			return nil, fmt.Errorf("%#v: %w", m, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(out)
		if err := caps.Bytes(int64(buf.Len())); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// krustyRun builds the (pre-walked) kustomization at dir with krusty on the confined filesystem, with kustomize
// build's options and builtin plugins only.
func (e *Engine) krustyRun(ctx context.Context, st *buildState, dir string) (rm resmap.ResMap, err error) {
	bfs := newBuildFS(st.view, st.overlay)
	bfs.aliases = &st.aliases
	w := &walker{e: e, st: st, fs: bfs, ctx: ctx, seen: map[string]bool{}}
	bfs.checkKustomization = w.checkServed
	pc := types.DisabledPluginConfig() // builtin plugins only: no exec, container or Go plugins, ever
	pc.HelmConfig.Enabled = false      // helmCharts were rendered in-process by the pre-walk
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:           st.opts.reorder,
		AddManagedbyLabel: st.opts.addManagedBy,
		LoadRestrictions:  st.opts.loadRestrictions,
		PluginConfig:      pc,
	})
	defer func() {
		if p := recover(); p != nil {
			rm, err = nil, fmt.Errorf("kustomize failed: %v", p)
		}
	}()
	rm, err = k.Run(bfs, virtual(dir))
	if r := bfs.firstRefusal(); r != nil {
		return nil, r
	}
	if err != nil {
		if strings.Contains(err.Error(), "external plugins disabled") {
			return nil, &repofs.Refusal{Rule: RulePlugin, Path: dir, Detail: text.OneLine(err.Error())}
		}
		return nil, err
	}
	return rm, ctx.Err()
}

// fixHelmOrigins rewrites the origin annotation (buildMetadata: [originAnnotations]) of resources that came from
// a rendered chart to what kustomize's generator path writes (kusttarget.runGenerators).
func (e *Engine) fixHelmOrigins(rm resmap.ResMap, st *buildState) error {
	if len(st.helmFiles) == 0 {
		return nil
	}
	for _, r := range rm.Resources() {
		o, err := r.GetOrigin()
		if err != nil || o == nil || o.Path == "" {
			continue
		}
		kf, ok := st.helmFiles[path.Base(o.Path)]
		if !ok {
			continue
		}
		n := &resource.Origin{
			Repo:         o.Repo,
			Ref:          o.Ref,
			ConfiguredIn: path.Join(path.Dir(o.Path), kf),
			ConfiguredBy: kyaml.ResourceIdentifier{TypeMeta: kyaml.TypeMeta{APIVersion: "builtin", Kind: "HelmChartInflationGenerator"}},
		}
		if err := r.SetOrigin(n); err != nil {
			return err
		}
	}
	return nil
}
