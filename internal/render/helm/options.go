package helm

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	k8sversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// file is a value file or --set-file target after Argo CD's path resolution: a confined path in a checkout or a
// URL.
type file struct {
	fs   *repofs.FS // nil when url is set
	rel  string     // repository-relative, cleaned
	url  string     // remote file (allowed scheme)
	name string     // how the Application names it, for messages
}

// key identifies the resolved file like Argo CD's absolute ResolvedFilePath does (dedup of globbed value files).
func (f file) key() string {
	if f.fs == nil {
		return "url:" + f.url
	}
	return f.fs.Root() + "\x00" + f.rel
}

// templateOpts is util/helm/cmd.go TemplateOpts as reposerver/repository/repository.go helmTemplate fills it.
type templateOpts struct {
	name                 string
	namespace            string
	kubeVersion          string // parsed ("1.30.0"), "" = Helm default
	apiVersions          []string
	set                  map[string]string
	setString            map[string]string
	setFile              map[string]file
	values               []file
	extraValues          []byte // spec.source.helm.values / valuesObject, the last --values
	skipCrds             bool
	skipSchemaValidation bool
	skipTests            bool
}

// defaultValuesFileSchemes is util/settings/settings.go GetHelmSettings' default for helm.valuesFileSchemes.
var defaultValuesFileSchemes = []string{"https", "http"}

// templateOptions mirrors reposerver/repository/repository.go helmTemplate (argo-cd v3.5.7, the corpus's
// version) up to the call of the helm CLI, with the rules that differ between Argo CD releases switched by
// in.Target (internal/render/target: value-file globs, accepted helm.version values).
func templateOptions(in Input, appPath string) (*templateOpts, error) {
	var env v1alpha1.Env
	if in.Env != nil {
		env = *in.Env
	}
	schemes := in.ValuesFileSchemes
	if schemes == nil {
		schemes = defaultValuesFileSchemes
	}
	// The release name is the name part of "<namespace>_<name>" (util/argo/argo.go ParseInstanceName).
	appName := in.AppName
	if i := strings.Index(appName, "_"); i >= 0 {
		appName = appName[i+1:]
	}
	kubeVersion, err := parseKubeVersion(in.KubeVersion)
	if err != nil {
		return nil, err
	}
	o := &templateOpts{
		name:        appName,
		namespace:   in.Namespace,
		kubeVersion: kubeVersion,
		apiVersions: in.APIVersions,
		set:         map[string]string{},
		setString:   map[string]string{},
		setFile:     map[string]file{},
	}
	if h := in.Helm; h != nil {
		// util/helm/cmd.go NewCmd: "v3" (and, since 3.5, "v4", both meaning "the bundled helm") or empty.
		if !slices.Contains(in.Target.HelmVersionValues(), h.Version) {
			return nil, in.Target.HelmVersionError(h.Version)
		}
		if h.ReleaseName != "" {
			o.name = h.ReleaseName
		}
		if h.Namespace != "" {
			o.namespace = h.Namespace
		}
		r := resolver{in: in, appPath: appPath, env: env, schemes: schemes, globs: in.Target.ValueFileGlobs()}
		if o.values, err = r.valueFiles(h.ValueFiles, h.IgnoreMissingValueFiles); err != nil {
			return nil, fmt.Errorf("error resolving helm value files: %w", err)
		}
		if !h.ValuesIsEmpty() {
			o.extraValues = h.ValuesYAML()
		}
		for _, p := range h.Parameters {
			if p.ForceString {
				o.setString[p.Name] = p.Value
			} else {
				o.set[p.Name] = p.Value
			}
		}
		for _, p := range h.FileParameters {
			var f file
			if ref := r.refSource(p.Path); ref != nil {
				if f, err = r.refFile(p.Path, ref); err != nil {
					return nil, fmt.Errorf("error resolving set-file path: %w", err)
				}
			} else if f, err = r.resolve(in.FS, appPath, env.Envsubst(p.Path), p.Path); err != nil {
				return nil, fmt.Errorf("error resolving helm value file path: %w", err)
			}
			o.setFile[p.Name] = f
		}
		o.skipCrds = h.SkipCrds
		o.skipSchemaValidation = h.SkipSchemaValidation
		o.skipTests = h.SkipTests
	}
	if o.name == "" {
		o.name = in.AppName
	}
	for k, v := range o.set {
		o.set[k] = env.Envsubst(v)
	}
	for k, v := range o.setString {
		o.setString[k] = env.Envsubst(v)
	}
	return o, nil
}

// parseKubeVersion is reposerver/repository/repository.go parseKubeVersion: strip what Helm cannot parse
// ("v1.30.0-eks-1234" -> "1.30.0").
func parseKubeVersion(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	kv, err := k8sversion.ParseGeneric(v)
	if err != nil {
		return "", fmt.Errorf("could not parse kubernetes version %s: %w", v, err)
	}
	return kv.String(), nil
}

// resolver resolves value-file paths like reposerver/repository/repository.go getResolvedValueFiles,
// getResolvedRefValueFile and util/io/path/resolved.go ResolveValueFilePathOrUrl, over confined checkouts.
type resolver struct {
	in      Input
	appPath string
	env     v1alpha1.Env
	schemes []string
	globs   bool // value-file glob patterns are expanded (target.Version.ValueFileGlobs)
}

// refSource is repository.go getReferencedSource: "$name/..." names a ref source when "$name" is one.
func (r resolver) refSource(raw string) *repofs.FS {
	if !strings.HasPrefix(raw, "$") {
		return nil
	}
	return r.in.RefSources[strings.Split(raw, "/")[0]]
}

// refFile is repository.go getResolvedRefValueFile: drop "$name", substitute the environment afterwards and
// resolve the rest as an absolute path in the referenced checkout.
func (r resolver) refFile(raw string, ref *repofs.FS) (file, error) {
	parts := strings.Split(raw, "/")
	parts[0] = ""
	return r.resolve(ref, ".", r.env.Envsubst(strings.Join(parts, "/")), raw)
}

// resolve is ResolveValueFilePathOrUrl: a URL with an allowed scheme is remote, another scheme is an error; a
// relative path is relative to base, an absolute one to the repository root; the result must stay inside the
// checkout and must not be the root itself.
func (r resolver) resolve(fsys *repofs.FS, base, p, name string) (file, error) {
	if u, err := url.Parse(p); err == nil && u.Scheme != "" {
		for _, s := range r.schemes {
			if strings.EqualFold(s, u.Scheme) {
				return file{url: p, name: name}, nil
			}
		}
		return file{}, fmt.Errorf("the URL scheme '%s' is not allowed", u.Scheme)
	}
	var joined string
	if strings.HasPrefix(p, "/") {
		joined = strings.TrimLeft(p, "/")
	} else {
		joined = path.Join(base, p)
	}
	rel, err := repofs.Clean(joined)
	if err != nil {
		return file{}, fmt.Errorf("file '%s' resolved to outside repository root: %w", name, err)
	}
	// Symbolic links are followed and must stay inside the checkout (resolved.go resolveSymbolicLinkRecursive).
	real, err := fsys.Resolve(rel)
	if err != nil {
		return file{}, fmt.Errorf("file '%s': %w", name, err)
	}
	if rel, err = fsys.Rel(real); err != nil {
		return file{}, fmt.Errorf("file '%s' resolved to outside repository root: %w", name, err)
	}
	if rel == "." {
		return file{}, fmt.Errorf("file '%s' resolved to the repository root, which is not allowed", name)
	}
	return file{fs: fsys, rel: rel, name: name}, nil
}

// isGlobPath is repository.go isGlobPath.
func isGlobPath(p string) bool { return strings.ContainsAny(p, "*?[") }

// isGlob reports that p is a pattern to expand: only from Argo CD 3.4, before which every value file is a path.
func (r resolver) isGlob(p string) bool { return r.globs && isGlobPath(p) }

// valueFiles is repository.go getResolvedValueFiles (v3.5.7): envsubst, "$ref/" paths, globs expanded in lexical
// order (doublestar), files listed explicitly keep their own position, duplicates dropped, missing files skipped
// with ignoreMissingValueFiles (otherwise they fail later, when helm reads them).
func (r resolver) valueFiles(raws []string, ignoreMissing bool) ([]file, error) {
	resolveOne := func(raw string) (file, *repofs.FS, error) {
		if ref := r.refSource(raw); ref != nil {
			f, err := r.refFile(raw, ref)
			return f, ref, err
		}
		f, err := r.resolve(r.in.FS, r.appPath, r.env.Envsubst(raw), raw)
		return f, r.in.FS, err
	}
	explicit := map[string]bool{}
	for _, raw := range raws {
		f, _, err := resolveOne(raw)
		if err != nil {
			continue // reported by the main loop
		}
		if f.fs != nil && !r.isGlob(f.rel) {
			explicit[f.key()] = true
		}
	}
	var out []file
	seen := map[string]bool{}
	add := func(f file) {
		if !seen[f.key()] {
			seen[f.key()] = true
			out = append(out, f)
		}
	}
	for _, raw := range raws {
		f, fsys, err := resolveOne(raw)
		if err != nil {
			return nil, fmt.Errorf("error resolving value file path: %w", err)
		}
		if f.fs == nil { // remote: passed through as is, refused when read
			add(f)
			continue
		}
		if r.isGlob(f.rel) {
			matches, err := glob(fsys, f.rel)
			if err != nil {
				return nil, fmt.Errorf("error expanding glob pattern %q: %w", raw, err)
			}
			if len(matches) == 0 {
				if ignoreMissing {
					continue
				}
				return nil, fmt.Errorf("values file glob %q matched no files: %w", raw, ErrValuesFileNotFound)
			}
			for _, m := range matches {
				// repository.go verifyGlobMatchesWithinRoot: a matched symlink must stay in its checkout.
				if _, err := fsys.Resolve(m); err != nil {
					return nil, fmt.Errorf("glob pattern %q: %w", raw, err)
				}
				g := file{fs: fsys, rel: m, name: m}
				if !explicit[g.key()] {
					add(g)
				}
			}
			continue
		}
		if _, err := fsys.Stat(f.rel); errors.Is(err, fs.ErrNotExist) && ignoreMissing {
			// Not read, but consulted: creating it changes the output, so affected-app detection must see it.
			fsys.Recorder().RecordFile(f.rel)
			continue
		}
		add(f)
	}
	return out, nil
}
