package directory

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/google/go-jsonnet"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// evaluateJsonnet mirrors makeJsonnetVM + vm.EvaluateFile (reposerver/repository/repository.go): TLAs and ext
// vars envsubst'ed in place (opts is shared across the application's files, as in Argo CD), code or string, and
// an importer searching the importing file's directory, then the library paths last to first, then the
// application path. The importer reads only through repofs: an import that leaves the checkout is refused
// (argo-cd v3.5.7 confinedImporter refuses the same).
func evaluateJsonnet(repo *repofs.FS, appPath, file string, opts *v1alpha1.ApplicationSourceJsonnet, env *v1alpha1.Env) (string, error) {
	vm := jsonnet.MakeVM()
	for i, j := range opts.TLAs {
		opts.TLAs[i].Value = envsubst(env, j.Value)
	}
	for i, j := range opts.ExtVars {
		opts.ExtVars[i].Value = envsubst(env, j.Value)
	}
	for _, a := range opts.TLAs {
		if a.Code {
			vm.TLACode(a.Name, a.Value)
		} else {
			vm.TLAVar(a.Name, a.Value)
		}
	}
	for _, v := range opts.ExtVars {
		if v.Code {
			vm.ExtCode(v.Name, v.Value)
		} else {
			vm.ExtVar(v.Name, v.Value)
		}
	}
	jpaths := []string{appPath}
	for _, lib := range opts.Libs {
		// util/io/path ResolveFileOrDirectoryPath(repoRoot, repoRoot, lib): relative to the repository root, an
		// absolute path too
		p, err := repofs.Clean(strings.TrimLeft(lib, "/"))
		if err != nil {
			return "", fmt.Errorf("jsonnet library path %q: %w", lib, err)
		}
		if _, err := repo.Resolve(p); err != nil {
			return "", fmt.Errorf("jsonnet library path %q: %w", lib, err)
		}
		jpaths = append(jpaths, p)
	}
	vm.Importer(&importer{repo: repo, jpaths: jpaths, cache: map[string]*cacheEntry{}})
	out, err := vm.EvaluateFile(file)
	if err != nil {
		return "", errors.New(shortTrace(err.Error()))
	}
	return out, nil
}

// shortTrace turns go-jsonnet's multi-line error (the message, then a stack trace of up to 20 frames, a stack
// overflow's all the same) into one short line: the message, the first frame, and how many frames followed it
// and how many of those repeat it.
func shortTrace(msg string) string {
	lines := strings.Split(msg, "\n")
	head := strings.TrimSpace(lines[0])
	var frames []string
	cut := false
	for _, l := range lines[1:] {
		l = strings.Join(strings.Fields(l), " ")
		switch l {
		case "", "During evaluation":
		case "...":
			cut = true
		default:
			frames = append(frames, l)
		}
	}
	if len(frames) == 0 {
		return head
	}
	out := head + " at " + frames[0]
	if rest := frames[1:]; len(rest) > 0 {
		same := 0
		for _, f := range rest {
			if f == frames[0] {
				same++
			}
		}
		out += fmt.Sprintf(" (then %d more frames", len(rest))
		if same > 0 {
			out += fmt.Sprintf(", %d of them the same as this one", same)
		}
		if cut {
			out += ", and more not shown"
		}
		out += ")"
	}
	return out
}

// envsubst is v1alpha1.Env.Envsubst, tolerating a nil environment.
func envsubst(env *v1alpha1.Env, s string) string {
	if env == nil {
		return v1alpha1.Env{}.Envsubst(s)
	}
	return env.Envsubst(s)
}

// importer is go-jsonnet's FileImporter search over repofs. Paths are repository-relative.
type importer struct {
	repo   *repofs.FS
	jpaths []string
	cache  map[string]*cacheEntry
}

type cacheEntry struct {
	contents jsonnet.Contents
	exists   bool
}

// Import implements jsonnet.Importer.
func (i *importer) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	dir, _ := path.Split(importedFrom)
	found, c, at, err := i.try(dir, importedPath)
	if err != nil {
		return jsonnet.Contents{}, "", err
	}
	for j := len(i.jpaths) - 1; !found && j >= 0; j-- {
		found, c, at, err = i.try(i.jpaths[j], importedPath)
		if err != nil {
			return jsonnet.Contents{}, "", err
		}
	}
	if !found {
		return jsonnet.Contents{}, "", fmt.Errorf("couldn't open import %#v: no match locally or in the Jsonnet library paths", importedPath)
	}
	return c, at, nil
}

func (i *importer) try(dir, importedPath string) (bool, jsonnet.Contents, string, error) {
	if path.IsAbs(importedPath) {
		return false, jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %q: %w", importedPath,
			&repofs.Refusal{Rule: repofs.RuleAbsolutePath, Path: importedPath, Detail: "imports must be relative to the repository"})
	}
	p, err := repofs.Join(dir, importedPath)
	if err != nil {
		return false, jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %q: %w", importedPath, err)
	}
	if e, ok := i.cache[p]; ok {
		return e.exists, e.contents, p, nil
	}
	st, err := i.repo.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			i.cache[p] = &cacheEntry{}
			return false, jsonnet.Contents{}, "", nil
		}
		return false, jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %q: %w", importedPath, err)
	}
	if !st.Mode().IsRegular() {
		return false, jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %q is not a regular file", importedPath)
	}
	b, err := i.repo.ReadFile(p)
	if err != nil {
		return false, jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %q: %w", importedPath, err)
	}
	e := &cacheEntry{contents: jsonnet.MakeContentsRaw(b), exists: true}
	i.cache[p] = e
	return true, e.contents, p, nil
}

// jsonArrayItems counts the items of the JSON array s (go-jsonnet's output, well-formed) without parsing it:
// the commas at its top level, outside strings. ok is false when s is not an array (a single object).
func jsonArrayItems(s string) (n int, ok bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	if i == len(s) || s[i] != '[' {
		return 0, false
	}
	depth, inString, empty := 0, false, true
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			empty = false
		case c == '[' || c == '{':
			if depth > 0 {
				empty = false
			}
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			n++
		case c != ' ' && c != '\n' && c != '\t' && c != '\r' && depth == 1:
			empty = false
		}
	}
	if empty {
		return 0, true
	}
	return n + 1, true
}
