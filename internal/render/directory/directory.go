package directory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/gobwas/glob"
	imagev1 "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/fleetwave/fleetwave/internal/render/outputcap"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// DefaultMaxManifestBytes is Argo CD's default cap on the combined size of a directory application's manifest
// files (the repo-server's --max-combined-directory-manifests-size, 10M).
const DefaultMaxManifestBytes int64 = 10 * 1000 * 1000

// ErrExceededMaxCombinedManifestFileSize is returned when the manifest files exceed the combined size cap
// (reposerver/repository/repository.go).
var ErrExceededMaxCombinedManifestFileSize = errors.New("exceeded max combined manifest file size")

// skipFileRenderingMarker excludes a file from rendering (reposerver/repository/repository.go).
const skipFileRenderingMarker = "+argocd:skip-file-rendering"

// manifestFile matches the file names Argo CD considers (reposerver/repository/repository.go).
var manifestFile = regexp.MustCompile(`^.*\.(yaml|yml|json|jsonnet)$`)

// Input is one directory application source to render.
type Input struct {
	FS        *repofs.FS
	AppPath   string                              // repository-relative
	Directory v1alpha1.ApplicationSourceDirectory // recurse, include, exclude, jsonnet{tlas, extVars, libs}
	Env       *v1alpha1.Env
	// MaxManifestBytes caps the combined size of the YAML/JSON manifest files (Argo CD's
	// maxCombinedManifestQuantity). 0 means DefaultMaxManifestBytes; a negative value means no cap.
	MaxManifestBytes int64
	// Output caps the app's output (render.Limits) before it is parsed: a Jsonnet program's JSON by its length
	// and, once parsed, its items; the YAML and JSON files' documents, counted in their text
	// (internal/render/outputcap). Zero: no cap here.
	Output outputcap.Limits
}

// Render produces the objects Argo CD's repo-server finds in a directory source (reposerver/repository/
// repository.go findManifests, argo-cd v3.5.7): files in filepath.Walk order, YAML streams, single JSON objects
// and evaluated Jsonnet, before list flattening and tracking.
func Render(ctx context.Context, in Input) ([]*unstructured.Unstructured, error) {
	objs, err := render(ctx, in)
	if err != nil {
		return nil, &renderError{app: in.AppPath, err: err}
	}
	return objs, nil
}

// renderError is a render failure: one line naming the application path, the cause kept for errors.As.
type renderError struct {
	app string
	err error
}

func (r *renderError) Error() string {
	return "directory " + r.app + ": " + strings.Join(strings.Fields(r.err.Error()), " ")
}
func (r *renderError) Unwrap() error { return r.err }

// manifest is a potentially valid manifest file.
type manifest struct {
	rel     string // repository-relative path as walked
	name    string // file name
	content []byte // UTF-8 decoded content (YAML/JSON files)
}

func render(ctx context.Context, in Input) (objs []*unstructured.Unstructured, err error) {
	if in.FS == nil {
		return nil, errors.New("no repository")
	}
	appPath, err := repofs.Clean(in.AppPath)
	if err != nil {
		return nil, err
	}
	max := in.MaxManifestBytes
	switch {
	case max == 0:
		max = DefaultMaxManifestBytes
	case max < 0:
		max = 0 // Argo CD's "no limit"
	}
	d := in.Directory
	manifests, err := potentiallyValidManifests(ctx, in.FS, appPath, d.Recurse, d.DisableExtensionFilter, d.Include, d.Exclude, max)
	if err != nil {
		return nil, fmt.Errorf("failed to get potentially valid manifests: %w", err)
	}
	// makeJsonnetVM envsubsts the TLAs and ext vars in place, in a slice shared across files: the second jsonnet
	// file sees values substituted twice. Reproduce it on a private copy.
	jsonnetOpts := d.Jsonnet
	jsonnetOpts.TLAs = append([]v1alpha1.JsonnetVar(nil), d.Jsonnet.TLAs...)
	jsonnetOpts.ExtVars = append([]v1alpha1.JsonnetVar(nil), d.Jsonnet.ExtVars...)
	defer func() {
		if p := recover(); p != nil {
			objs, err = nil, fmt.Errorf("rendering failed: %v", p)
		}
	}()
	// The files' documents, counted in their text before they are parsed (their bytes are MaxManifestBytes's);
	// Jsonnet's output, counted by its length before it is parsed.
	files := outputcap.Meter{Limits: outputcap.Limits{MaxDocuments: in.Output.MaxDocuments}}
	var jsonnetBytes int64
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if strings.HasSuffix(m.name, ".jsonnet") {
			out, err := evaluateJsonnet(in.FS, appPath, m.rel, &jsonnetOpts, in.Env)
			if err != nil {
				return nil, fmt.Errorf("failed to evaluate jsonnet %q: %w", m.name, err)
			}
			// go-jsonnet hands its output back as one string (github.com/google/go-jsonnet@v0.21.0 vm.go
			// EvaluateFile): measured before json.Unmarshal makes objects of it, several times its size.
			jsonnetBytes += int64(len(out))
			if err := in.Output.Bytes(jsonnetBytes); err != nil {
				return nil, fmt.Errorf("jsonnet %q: %w", m.name, err)
			}
			if items, ok := jsonArrayItems(out); ok {
				if err := in.Output.Documents(len(objs) + items); err != nil {
					return nil, fmt.Errorf("jsonnet %q: %w", m.name, err)
				}
			}
			// attempt to unmarshal either array or single object
			var list []*unstructured.Unstructured
			if err := json.Unmarshal([]byte(out), &list); err == nil {
				objs = append(objs, list...)
				continue
			}
			var obj unstructured.Unstructured
			if err := json.Unmarshal([]byte(out), &obj); err != nil {
				return nil, fmt.Errorf("failed to unmarshal generated json %q: %w", m.name, err)
			}
			objs = append(objs, &obj)
			continue
		}
		docs := 0
		if in.Output.MaxDocuments > 0 {
			docs = outputcap.CountDocuments(m.content)
		}
		if err := files.Add(0, docs); err != nil {
			return nil, fmt.Errorf("%s: %w", m.rel, err)
		}
		more, err := objsFromYAMLOrJSON(m)
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	return objs, nil
}

// potentiallyValidManifests mirrors getPotentiallyValidManifests: a filepath.Walk of the application directory
// (lexical order, symbolic links not followed into directories), the combined size cap on non-Jsonnet files.
func potentiallyValidManifests(ctx context.Context, repo *repofs.FS, appPath string, recurse, anyExtension bool, include, exclude string, max int64) ([]manifest, error) {
	st, err := repo.Stat(appPath)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", appPath)
	}
	var out []manifest
	var total int64
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := repo.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			rel := path.Join(dir, e.Name())
			if e.IsDir() {
				if recurse {
					if err := walk(rel); err != nil {
						return err
					}
				}
				continue
			}
			m, size, ok, err := potentiallyValidManifest(repo, appPath, rel, e, anyExtension, include, exclude)
			if err != nil {
				return fmt.Errorf("invalid manifest file %q: %w", rel, err)
			}
			if !ok {
				continue
			}
			// Jsonnet files are not counted: memory is jsonnet's responsibility.
			if !strings.HasSuffix(e.Name(), ".jsonnet") {
				total += size
				if max != 0 && total > max {
					return ErrExceededMaxCombinedManifestFileSize
				}
			}
			out = append(out, m)
		}
		return nil
	}
	if err := walk(appPath); err != nil {
		return nil, err
	}
	return out, nil
}

// potentiallyValidManifest mirrors getPotentiallyValidManifestFile. anyExtension is the directory's
// disableExtensionFilter (Argo CD 3.6): every file name is a candidate, include and exclude the only filters.
func potentiallyValidManifest(repo *repofs.FS, appPath, rel string, e fs.DirEntry, anyExtension bool, include, exclude string) (manifest, int64, bool, error) {
	relPath := strings.TrimPrefix(rel, appPath+"/")
	if appPath == "." {
		relPath = rel
	}
	if !anyExtension && !manifestFile.MatchString(e.Name()) {
		return manifest{}, 0, false, nil
	}
	info, err := e.Info()
	if err != nil {
		return manifest{}, 0, false, err
	}
	real := info
	if info.Mode()&fs.ModeSymlink != 0 {
		// files.ResolveInbound: a link out of the checkout is an error, a dangling link is skipped
		st, err := repo.Stat(rel)
		if err != nil {
			var r *repofs.Refusal
			if errors.As(err, &r) {
				return manifest{}, 0, false, fmt.Errorf("illegal filepath in symlink at %q: %w", relPath, err)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return manifest{}, 0, false, nil
			}
			return manifest{}, 0, false, fmt.Errorf("failed to evaluate symlink at %q: %w", relPath, err)
		}
		real = st
	}
	if !real.Mode().IsRegular() {
		return manifest{}, 0, false, nil
	}
	if exclude != "" && globMatch(exclude, relPath) {
		return manifest{}, 0, false, nil
	}
	if include != "" && !globMatch(include, relPath) {
		return manifest{}, 0, false, nil
	}
	raw, err := repo.ReadFile(rel)
	if err != nil {
		return manifest{}, 0, false, fmt.Errorf("failed to read %q: %w", relPath, err)
	}
	content, err := decodeUTF(raw)
	if err != nil {
		return manifest{}, 0, false, fmt.Errorf("failed to read %q: %w", relPath, err)
	}
	if bytes.Contains(content, []byte(skipFileRenderingMarker)) {
		return manifest{}, 0, false, nil
	}
	return manifest{rel: rel, name: e.Name(), content: content}, real.Size(), true, nil
}

// globMatch is util/glob.Match: a gobwas/glob pattern without separators (so `*` also matches `/`, and
// `{a,b}` alternatives work); a pattern that does not compile matches nothing.
func globMatch(pattern, text string) bool {
	g, err := glob.Compile(pattern)
	if err != nil {
		return false
	}
	return g.Match(text)
}

// decodeUTF mirrors utfutil.ReadFile(path, utfutil.UTF8): UTF-8 unless a byte-order mark says UTF-16, BOM
// dropped.
func decodeUTF(b []byte) ([]byte, error) {
	return io.ReadAll(transform.NewReader(bytes.NewReader(b), unicode.BOMOverride(unicode.UTF8.NewDecoder())))
}

// objsFromYAMLOrJSON mirrors getObjsFromYAMLOrJSON.
func objsFromYAMLOrJSON(m manifest) ([]*unstructured.Unstructured, error) {
	if strings.HasSuffix(m.name, ".json") {
		var obj unstructured.Unstructured
		decoder := json.NewDecoder(bytes.NewReader(m.content))
		if decoderErr := decoder.Decode(&obj); decoderErr != nil {
			// Argo CD then tries the file as an OCI image manifest; when that decodes, the (empty) object is
			// kept.
			var oci imagev1.Manifest
			if err := json.NewDecoder(bytes.NewReader(m.content)).Decode(&oci); err != nil {
				return nil, fmt.Errorf("failed to unmarshal %q: %w", m.name, decoderErr)
			}
		}
		if decoder.More() {
			return nil, fmt.Errorf("found multiple objects in %q: only single objects are allowed in JSON files", m.name)
		}
		return []*unstructured.Unstructured{&obj}, nil
	}
	objs, err := splitYAMLOrJSON(bytes.NewReader(m.content))
	if err != nil {
		if len(objs) > 0 {
			return nil, fmt.Errorf("failed to unmarshal %q: %w", m.name, err)
		}
		// a file that does not look like a manifest is an unrelated YAML file, ignored
		if bytes.Contains(m.content, []byte("apiVersion:")) && bytes.Contains(m.content, []byte("kind:")) &&
			bytes.Contains(m.content, []byte("metadata:")) {
			return nil, fmt.Errorf("failed to unmarshal %q: %w", m.name, err)
		}
	}
	return objs, nil
}

// splitYAMLOrJSON mirrors the repo-server's splitYAMLOrJSON.
func splitYAMLOrJSON(r io.Reader) ([]*unstructured.Unstructured, error) {
	d := kubeyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return objs, fmt.Errorf("failed to unmarshal manifest: %w", err)
		}
		if u == nil {
			continue
		}
		objs = append(objs, u)
	}
	return objs, nil
}
