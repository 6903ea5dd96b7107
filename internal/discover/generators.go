package discover

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"dario.cat/mergo"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/jeremywohl/flatten"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// This file re-implements the ApplicationSet generators Argo CD's controller runs (applicationset/generators in
// argo-cd v3.2.11), offline: list, clusters (over the declared clusters), git directories and files (over the
// checkout being previewed), matrix and merge. Parameter names and shapes are Argo CD's; each function cites the
// one it follows. SCM provider, pull request, cluster decision resource and plugin generators need live services
// and are reported as unsupported.

// ErrUnsupportedGenerator marks a generator that needs a live service (SCM, pull requests, plugins, ducktype).
var ErrUnsupportedGenerator = errors.New("generator needs a live service and is not evaluated offline")

// Errors of the matrix and merge generators (applicationset/generators/matrix.go, merge.go).
var (
	errMoreThanTwoGenerators  = errors.New("found more than two generators, Matrix support only two")
	errLessThanTwoGenerators  = errors.New("found less than two generators, Matrix support only two")
	errMoreThanOneInner       = errors.New("found more than one generator in matrix.Generators")
	errLessThanTwoInMerge     = errors.New("found less than two generators, Merge requires two or more")
	errNoMergeKeys            = errors.New("no merge keys were specified, Merge requires at least one")
	errNonUniqueParamSets     = errors.New("the parameters from a generator were not unique by the given mergeKeys, Merge requires all param sets to be unique")
	errEmptyAppSetGenerator   = errors.New("generator is empty")
	errChildGeneratedNoParams = errors.New("child generator generated no parameters")
)

// Tree is the repository at the revision being discovered, as the git generator reads it.
type Tree interface {
	// Dirs lists every directory (slash paths relative to the root, hidden directories and their contents
	// left out, the root itself excluded), as the repo-server's GetGitDirectories does.
	Dirs() ([]string, error)
	// Files lists every file (slash paths relative to the root), as `git ls-files` does.
	Files() ([]string, error)
	// ReadFile reads a file by its slash path relative to the root.
	ReadFile(rel string) ([]byte, error)
}

// generatorEnv is what the generators read: the declared clusters, the repository tree, and which repoURLs
// denote the repository.
type generatorEnv struct {
	t          *templater
	clusters   *Clusters
	tree       Tree
	isThisRepo func(repoURL string) bool
}

type transformResult struct {
	params   []map[string]any
	template v1alpha1.ApplicationSetTemplate
}

// transform is applicationset/generators/generator_spec_processor.go Transform: every generator set on req
// produces its parameter sets, interpolated with genParams (the matrix's first child's parameters), filtered by
// req.Selector over the flattened parameters; its template is the generator's own merged over baseTemplate.
func (e *generatorEnv) transform(req v1alpha1.ApplicationSetGenerator, baseTemplate v1alpha1.ApplicationSetTemplate, appSet *v1alpha1.ApplicationSet, genParams map[string]any) ([]transformResult, error) {
	var res []transformResult
	var firstErr error
	for _, kind := range relevantGenerators(&req) {
		tmpl, err := mergeGeneratorTemplate(kind, &req, baseTemplate)
		if err != nil {
			firstErr = cmpOr(firstErr, err)
			continue
		}
		gen := &req
		if len(genParams) != 0 {
			interpolated := &v1alpha1.ApplicationSetGenerator{}
			if err := e.t.replaceInto(req, interpolated, genParams, appSet.Spec.GoTemplate, appSet.Spec.GoTemplateOptions); err != nil {
				firstErr = cmpOr(firstErr, fmt.Errorf("failed to replace parameters in generator: %w", err))
				continue
			}
			gen = interpolated
		}
		params, err := e.generate(kind, gen, appSet)
		if err != nil {
			firstErr = cmpOr(firstErr, err)
			continue
		}
		var kept []map[string]any
		for _, p := range params {
			if req.Selector != nil {
				flat, err := flattenParameters(p)
				if err != nil {
					firstErr = cmpOr(firstErr, err)
					continue
				}
				ok, err := matchSelector(req.Selector, flat)
				if err != nil {
					return nil, fmt.Errorf("error parsing label selector: %w", err)
				}
				if !ok {
					continue
				}
			}
			kept = append(kept, p)
		}
		res = append(res, transformResult{params: kept, template: tmpl})
	}
	return res, firstErr
}

func cmpOr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// relevantGenerators names the generators set on req, in the field order of ApplicationSetGenerator
// (generator_spec_processor.go GetRelevantGenerators).
func relevantGenerators(g *v1alpha1.ApplicationSetGenerator) []string {
	var out []string
	if g.List != nil {
		out = append(out, "list")
	}
	if g.Clusters != nil {
		out = append(out, "clusters")
	}
	if g.Git != nil {
		out = append(out, "git")
	}
	if g.SCMProvider != nil {
		out = append(out, "scmProvider")
	}
	if g.ClusterDecisionResource != nil {
		out = append(out, "clusterDecisionResource")
	}
	if g.PullRequest != nil {
		out = append(out, "pullRequest")
	}
	if g.Matrix != nil {
		out = append(out, "matrix")
	}
	if g.Merge != nil {
		out = append(out, "merge")
	}
	if g.Plugin != nil {
		out = append(out, "plugin")
	}
	return out
}

func generatorTemplate(kind string, g *v1alpha1.ApplicationSetGenerator) *v1alpha1.ApplicationSetTemplate {
	switch kind {
	case "list":
		return &g.List.Template
	case "clusters":
		return &g.Clusters.Template
	case "git":
		return &g.Git.Template
	case "matrix":
		return &g.Matrix.Template
	case "merge":
		return &g.Merge.Template
	}
	return &v1alpha1.ApplicationSetTemplate{}
}

// mergeGeneratorTemplate is generator_spec_processor.go mergeGeneratorTemplate: the generator's template, with
// unset fields taken from the ApplicationSet's.
func mergeGeneratorTemplate(kind string, g *v1alpha1.ApplicationSetGenerator, base v1alpha1.ApplicationSetTemplate) (v1alpha1.ApplicationSetTemplate, error) {
	dest := generatorTemplate(kind, g).DeepCopy()
	err := mergo.Merge(dest, base)
	return *dest, err
}

func (e *generatorEnv) generate(kind string, g *v1alpha1.ApplicationSetGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	switch kind {
	case "list":
		return e.listParams(g.List, appSet)
	case "clusters":
		return e.clusterParams(g.Clusters, appSet)
	case "git":
		return e.gitParams(g.Git, appSet)
	case "matrix":
		return e.matrixParams(g.Matrix, appSet)
	case "merge":
		return e.mergeParams(g.Merge, appSet)
	}
	return nil, fmt.Errorf("%s: %w", kind, ErrUnsupportedGenerator)
}

// listParams is applicationset/generators/list.go GenerateParams.
func (e *generatorEnv) listParams(g *v1alpha1.ListGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	if g == nil {
		return nil, errEmptyAppSetGenerator
	}
	res := make([]map[string]any, len(g.Elements))
	for i, item := range g.Elements {
		var element map[string]any
		if err := json.Unmarshal(item.Raw, &element); err != nil {
			return nil, fmt.Errorf("error unmarshling list element %w", err)
		}
		if appSet.Spec.GoTemplate {
			res[i] = element
			continue
		}
		params := map[string]any{}
		for key, value := range element {
			if key == "values" {
				values, ok := value.(map[string]any)
				if !ok {
					return nil, errors.New("error parsing values map")
				}
				for k, v := range values {
					s, ok := v.(string)
					if !ok {
						return nil, fmt.Errorf("error parsing value as string: list element %d values.%s", i, k)
					}
					params["values."+k] = s
				}
				continue
			}
			s, ok := value.(string)
			if !ok {
				return nil, fmt.Errorf("error parsing value as string: list element %d key %s", i, key)
			}
			params[key] = s
		}
		res[i] = params
	}
	if g.ElementsYaml != "" {
		var more []map[string]any
		if err := yaml.Unmarshal([]byte(g.ElementsYaml), &more); err != nil {
			return nil, fmt.Errorf("error unmarshling decoded ElementsYaml %w", err)
		}
		res = append(res, more...)
	}
	return res, nil
}

// clusterParams is applicationset/generators/cluster.go GenerateParams over the declared clusters: name,
// nameNormalized, server, project, and metadata.labels/annotations (nested under "metadata" with goTemplate,
// flattened to "metadata.labels.<k>" otherwise); the local in-cluster destination only when no selector is set;
// values templated; flatList wraps everything under "clusters".
func (e *generatorEnv) clusterParams(g *v1alpha1.ClusterGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	if g == nil {
		return nil, errEmptyAppSetGenerator
	}
	sel := &g.Selector
	ignoreLocal := !selectorEmpty(sel)
	var params []map[string]any
	for _, c := range e.clusters.All() {
		var p map[string]any
		if c.Local {
			if ignoreLocal {
				continue
			}
			p = map[string]any{"name": c.Name, "nameNormalized": c.Name, "server": c.Server, "project": ""}
		} else {
			labels := map[string]string{secretTypeLabel: secretTypeCluster}
			maps.Copy(labels, c.Labels)
			ok, err := matchSelector(sel, labels)
			if err != nil {
				return nil, fmt.Errorf("error converting label selector: %w", err)
			}
			if !ok {
				continue
			}
			p = map[string]any{"name": c.Name, "nameNormalized": SanitizeName(c.Name), "server": c.Server, "project": c.Project}
			if appSet.Spec.GoTemplate {
				meta := map[string]any{}
				if len(c.Annotations) > 0 {
					meta["annotations"] = c.Annotations
				}
				meta["labels"] = labels
				p["metadata"] = meta
			} else {
				for k, v := range c.Annotations {
					p["metadata.annotations."+k] = v
				}
				for k, v := range labels {
					p["metadata.labels."+k] = v
				}
			}
		}
		if err := e.appendTemplatedValues(g.Values, p, appSet); err != nil {
			return nil, fmt.Errorf("error appending templated values for cluster: %w", err)
		}
		params = append(params, p)
	}
	if g.FlatList {
		list := make([]any, len(params))
		for i, p := range params {
			list[i] = p
		}
		return []map[string]any{{"clusters": list}}, nil
	}
	return params, nil
}

// appendTemplatedValues is applicationset/generators/value_interpolation.go: each value is templated with the
// parameters generated so far, then added as values.<k> (legacy) or under "values" (goTemplate).
func (e *generatorEnv) appendTemplatedValues(values map[string]string, params map[string]any, appSet *v1alpha1.ApplicationSet) error {
	tmp := map[string]any{}
	for k, v := range values {
		r, err := e.t.Replace(v, params, appSet.Spec.GoTemplate, appSet.Spec.GoTemplateOptions)
		if err != nil {
			return fmt.Errorf("failed to replace templated string: %w", err)
		}
		if appSet.Spec.GoTemplate {
			if tmp["values"] == nil {
				tmp["values"] = map[string]string{}
			}
			tmp["values"].(map[string]string)[k] = r
		} else {
			tmp["values."+k] = r
		}
	}
	maps.Copy(params, tmp)
	return nil
}

// gitParams is applicationset/generators/git.go GenerateParams, reading the checkout instead of asking the
// repo-server. The generator's revision is ignored: the preview reads the revision being previewed.
func (e *generatorEnv) gitParams(g *v1alpha1.GitGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	if g == nil {
		return nil, errEmptyAppSetGenerator
	}
	if e.isThisRepo == nil || !e.isThisRepo(g.RepoURL) {
		return nil, fmt.Errorf("git generator: repoURL %s is not the repository being previewed (pass it with --repo-url if it is)", g.RepoURL)
	}
	if e.tree == nil {
		return nil, errors.New("git generator: no checkout to read")
	}
	// A path outside the repository selects nothing (directories) or fails `git ls-files` (files): either way the
	// generator produces no application, which must not pass unnoticed.
	for _, it := range g.Directories {
		if !it.Exclude && leavesRepo(it.Path) {
			return nil, fmt.Errorf("git generator: directories path %q leaves the repository: it selects nothing", it.Path)
		}
	}
	for _, it := range g.Files {
		if !it.Exclude && leavesRepo(it.Path) {
			return nil, fmt.Errorf("git generator: files path %q leaves the repository: it selects nothing", it.Path)
		}
	}
	switch {
	case len(g.Directories) != 0:
		all, err := e.tree.Dirs()
		if err != nil {
			return nil, fmt.Errorf("error getting directories from repo: %w", err)
		}
		return e.paramsFromDirs(filterDirs(g.Directories, all), g, appSet)
	case len(g.Files) != 0:
		return e.paramsFromFiles(g, appSet)
	default:
		return nil, errEmptyAppSetGenerator
	}
}

// leavesRepo reports a generator path that is absolute or climbs above the repository root.
func leavesRepo(p string) bool {
	if strings.HasPrefix(p, "/") {
		return true
	}
	c := path.Clean(p)
	return c == ".." || strings.HasPrefix(c, "../")
}

// filterDirs is git.go filterApps: path.Match against each item; an exclude match always wins.
func filterDirs(items []v1alpha1.GitDirectoryGeneratorItem, all []string) []string {
	var res []string
	for _, p := range all {
		include, exclude := false, false
		for _, it := range items {
			m, err := path.Match(it.Path, p)
			if err != nil {
				continue
			}
			if m && !it.Exclude {
				include = true
			}
			if m && it.Exclude {
				exclude = true
			}
		}
		if include && !exclude {
			res = append(res, p)
		}
	}
	return res
}

// paramsFromDirs is git.go generateParamsFromApps.
func (e *generatorEnv) paramsFromDirs(dirs []string, g *v1alpha1.GitGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	res := make([]map[string]any, len(dirs))
	for i, a := range dirs {
		params := map[string]any{}
		if appSet.Spec.GoTemplate {
			pp := map[string]any{
				"path":               a,
				"basename":           path.Base(a),
				"basenameNormalized": SanitizeName(path.Base(a)),
				"segments":           strings.Split(a, "/"),
			}
			if g.PathParamPrefix != "" {
				params[g.PathParamPrefix] = map[string]any{"path": pp}
			} else {
				params["path"] = pp
			}
		} else {
			name := "path"
			if g.PathParamPrefix != "" {
				name = g.PathParamPrefix + "." + name
			}
			params[name] = a
			params[name+".basename"] = path.Base(a)
			params[name+".basenameNormalized"] = SanitizeName(path.Base(a))
			for k, v := range strings.Split(a, "/") {
				if v != "" {
					params[name+"["+strconv.Itoa(k)+"]"] = v
				}
			}
		}
		if err := e.appendTemplatedValues(g.Values, params, appSet); err != nil {
			return nil, fmt.Errorf("failed to append templated values: %w", err)
		}
		res[i] = params
	}
	return res, nil
}

// paramsFromFiles is git.go generateParamsForGitFiles: files matching any include pattern and no exclude pattern
// (git pathspec globbing, as `git ls-files -- <pattern>`), in path order, each a YAML/JSON object or array of
// objects.
func (e *generatorEnv) paramsFromFiles(g *v1alpha1.GitGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	files, err := e.tree.Files()
	if err != nil {
		return nil, err
	}
	selected := map[string]bool{}
	for _, it := range g.Files {
		if it.Exclude {
			continue
		}
		for _, f := range files {
			if pathspecMatch(it.Path, f) {
				selected[f] = true
			}
		}
	}
	for _, it := range g.Files {
		if !it.Exclude {
			continue
		}
		for f := range selected {
			if pathspecMatch(it.Path, f) {
				delete(selected, f)
			}
		}
	}
	paths := make([]string, 0, len(selected))
	for f := range selected {
		paths = append(paths, f)
	}
	sort.Strings(paths)
	var all []map[string]any
	for _, p := range paths {
		data, err := e.tree.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("unable to read file '%s': %w", p, err)
		}
		if err := repofs.CheckYAMLAliases(p, data, nil); err != nil {
			return nil, err
		}
		ps, err := e.paramsFromFile(p, data, g, appSet)
		if err != nil {
			return nil, fmt.Errorf("unable to process file '%s': %w", p, err)
		}
		all = append(all, ps...)
	}
	return all, nil
}

// paramsFromFile is git.go generateParamsFromGitFile.
func (e *generatorEnv) paramsFromFile(filePath string, content []byte, g *v1alpha1.GitGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	var objects []map[string]any
	single := map[string]any{}
	if err := yaml.Unmarshal(content, &single); err == nil {
		objects = append(objects, single)
	} else if err := yaml.Unmarshal(content, &objects); err != nil {
		return nil, fmt.Errorf("unable to parse file: %w", err)
	}
	var res []map[string]any
	dir := path.Dir(filePath)
	for _, obj := range objects {
		params := map[string]any{}
		if appSet.Spec.GoTemplate {
			maps.Copy(params, obj)
			pp := map[string]any{
				"path":               dir,
				"basename":           path.Base(dir),
				"filename":           path.Base(filePath),
				"basenameNormalized": SanitizeName(path.Base(dir)),
				"filenameNormalized": SanitizeName(path.Base(filePath)),
				"segments":           strings.Split(dir, "/"),
			}
			if g.PathParamPrefix != "" {
				params[g.PathParamPrefix] = map[string]any{"path": pp}
			} else {
				params["path"] = pp
			}
		} else {
			flat, err := flatten.Flatten(obj, "", flatten.DotStyle)
			if err != nil {
				return nil, fmt.Errorf("error flattening object: %w", err)
			}
			for k, v := range flat {
				params[k] = fmt.Sprintf("%v", v)
			}
			name := "path"
			if g.PathParamPrefix != "" {
				name = g.PathParamPrefix + "." + name
			}
			params[name] = dir
			params[name+".basename"] = path.Base(dir)
			params[name+".filename"] = path.Base(filePath)
			params[name+".basenameNormalized"] = SanitizeName(path.Base(dir))
			params[name+".filenameNormalized"] = SanitizeName(path.Base(filePath))
			for k, v := range strings.Split(dir, "/") {
				if v != "" {
					params[name+"["+strconv.Itoa(k)+"]"] = v
				}
			}
		}
		if err := e.appendTemplatedValues(g.Values, params, appSet); err != nil {
			return nil, fmt.Errorf("failed to append templated values: %w", err)
		}
		res = append(res, params)
	}
	return res, nil
}

// pathspecMatch matches a path the way `git ls-files -- <pathspec>` does with git's default pathspec magic
// (util/git/client.go LsFiles, the repo-server's default): a pattern without wildcards matches the path itself
// and everything below it; with wildcards it is an fnmatch pattern in which "*" also matches "/".
func pathspecMatch(pattern, p string) bool {
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" || pattern == "." {
		return true
	}
	if !strings.ContainsAny(pattern, "*?[") {
		pattern = strings.TrimSuffix(pattern, "/")
		return p == pattern || strings.HasPrefix(p, pattern+"/")
	}
	re, err := wildmatchRegexp(pattern)
	if err != nil {
		return false
	}
	return re.MatchString(p)
}

// wildmatchRegexp translates a git wildmatch pattern (without WM_PATHNAME) into a regular expression.
func wildmatchRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := i + 1
			if j < len(pattern) && (pattern[j] == '!' || pattern[j] == '^') {
				j++
			}
			if j < len(pattern) && pattern[j] == ']' {
				j++
			}
			for j < len(pattern) && pattern[j] != ']' {
				j++
			}
			if j >= len(pattern) {
				b.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i = j
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pattern[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// matrixParams is applicationset/generators/matrix.go GenerateParams: the second child is interpolated with each
// parameter set of the first; the sets are merged (mergo with override under goTemplate, else string maps that
// must agree on shared keys).
func (e *generatorEnv) matrixParams(g *v1alpha1.MatrixGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	if g == nil {
		return nil, errEmptyAppSetGenerator
	}
	if len(g.Generators) < 2 {
		return nil, errLessThanTwoGenerators
	}
	if len(g.Generators) > 2 {
		return nil, errMoreThanTwoGenerators
	}
	g0, err := e.childParams(g.Generators[0], appSet, nil)
	if err != nil {
		return nil, fmt.Errorf("error failed to get params for first generator in matrix generator: %w", err)
	}
	res := []map[string]any{}
	for _, a := range g0 {
		g1, err := e.childParams(g.Generators[1], appSet, a)
		if err != nil {
			return nil, fmt.Errorf("failed to get params for second generator in the matrix generator: %w", err)
		}
		for _, b := range g1 {
			if appSet.Spec.GoTemplate {
				tmp := map[string]any{}
				if err := safeMerge(&tmp, b); err != nil {
					return nil, fmt.Errorf("failed to merge params from the second generator in the matrix generator with temp map: %w", err)
				}
				if err := safeMerge(&tmp, a); err != nil {
					return nil, fmt.Errorf("failed to merge params from the second generator in the matrix generator with the first: %w", err)
				}
				res = append(res, tmp)
				continue
			}
			v, err := combineStringMaps(a, b)
			if err != nil {
				return nil, fmt.Errorf("failed to combine string maps with merging params for the matrix generator: %w", err)
			}
			res = append(res, v)
		}
	}
	return res, nil
}

// childParams is matrix.go/merge.go getParams: a nested generator run through transform with an empty template.
func (e *generatorEnv) childParams(n v1alpha1.ApplicationSetNestedGenerator, appSet *v1alpha1.ApplicationSet, params map[string]any) ([]map[string]any, error) {
	var matrix *v1alpha1.MatrixGenerator
	if n.Matrix != nil {
		nm, err := v1alpha1.ToNestedMatrixGenerator(n.Matrix)
		if err != nil {
			return nil, err
		}
		matrix = nm.ToMatrixGenerator()
	}
	var merge *v1alpha1.MergeGenerator
	if n.Merge != nil {
		nm, err := v1alpha1.ToNestedMergeGenerator(n.Merge)
		if err != nil {
			return nil, fmt.Errorf("error converting to nested merge generator: %w", err)
		}
		merge = nm.ToMergeGenerator()
	}
	t, err := e.transform(v1alpha1.ApplicationSetGenerator{
		List:                    n.List,
		Clusters:                n.Clusters,
		Git:                     n.Git,
		SCMProvider:             n.SCMProvider,
		ClusterDecisionResource: n.ClusterDecisionResource,
		PullRequest:             n.PullRequest,
		Plugin:                  n.Plugin,
		Matrix:                  matrix,
		Merge:                   merge,
		Selector:                n.Selector,
	}, v1alpha1.ApplicationSetTemplate{}, appSet, params)
	if err != nil {
		return nil, fmt.Errorf("child generator returned an error on parameter generation: %w", err)
	}
	if len(t) == 0 {
		return nil, errChildGeneratedNoParams
	}
	if len(t) > 1 {
		return nil, errMoreThanOneInner
	}
	return t[0].params, nil
}

// safeMerge is mergo.Merge with override, as Argo CD calls it, except that parameter maps whose nested types
// disagree (a map[string]string of values against a map[string]any) give an error instead of mergo's panic.
func safeMerge(dst *map[string]any, src map[string]any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parameters of different shapes cannot be merged: %v", r)
		}
	}()
	return mergo.Merge(dst, src, mergo.WithOverride)
}

// combineStringMaps is applicationset/utils/map.go CombineStringMaps.
func combineStringMaps(a, b map[string]any) (map[string]any, error) {
	res := map[string]any{}
	for k, v := range a {
		res[k] = fmt.Sprintf("%v", v)
	}
	for k, v := range b {
		s := fmt.Sprintf("%v", v)
		if cur, ok := res[k]; ok && cur != s {
			return nil, fmt.Errorf("found duplicate key %s with different value, a: %s ,b: %s", k, cur, s)
		}
		res[k] = s
	}
	return res, nil
}

// mergeParams is applicationset/generators/merge.go GenerateParams: parameter sets of later generators override
// the first generator's sets that share their merge-key values. Argo CD returns the merged sets in map order;
// here they keep the first generator's order, so previews are deterministic.
func (e *generatorEnv) mergeParams(g *v1alpha1.MergeGenerator, appSet *v1alpha1.ApplicationSet) ([]map[string]any, error) {
	if g == nil {
		return nil, errEmptyAppSetGenerator
	}
	if len(g.Generators) < 2 {
		return nil, errLessThanTwoInMerge
	}
	var sets [][]map[string]any
	for i, n := range g.Generators {
		ps, err := e.childParams(n, appSet, map[string]any{})
		if err != nil {
			return nil, fmt.Errorf("error getting params from generator %d of %d: %w", i+1, len(g.Generators), err)
		}
		sets = append(sets, ps)
	}
	baseKeys, base, err := paramSetsByMergeKey(g.MergeKeys, sets[0])
	if err != nil {
		return nil, fmt.Errorf("error getting param sets by merge key: %w", err)
	}
	for _, ps := range sets[1:] {
		_, byKey, err := paramSetsByMergeKey(g.MergeKeys, ps)
		if err != nil {
			return nil, fmt.Errorf("error getting param sets by merge key: %w", err)
		}
		for key, baseSet := range base {
			override, ok := byKey[key]
			if !ok {
				continue
			}
			if appSet.Spec.GoTemplate {
				if err := safeMerge(&baseSet, override); err != nil {
					return nil, fmt.Errorf("error merging base param set with override param set: %w", err)
				}
			} else {
				maps.Copy(baseSet, override)
			}
			base[key] = baseSet
		}
	}
	out := make([]map[string]any, 0, len(baseKeys))
	for _, k := range baseKeys {
		out = append(out, base[k])
	}
	return out, nil
}

// paramSetsByMergeKey is merge.go getParamSetsByMergeKey; it also returns the keys in input order.
func paramSetsByMergeKey(mergeKeys []string, sets []map[string]any) ([]string, map[string]map[string]any, error) {
	if len(mergeKeys) < 1 {
		return nil, nil, errNoMergeKeys
	}
	uniq := map[string]bool{}
	for _, k := range mergeKeys {
		uniq[k] = true
	}
	var order []string
	out := make(map[string]map[string]any, len(sets))
	for _, s := range sets {
		key := map[string]any{}
		for k := range uniq {
			key[k] = s[k]
		}
		b, err := json.Marshal(key)
		if err != nil {
			return nil, nil, fmt.Errorf("error marshalling param set key json: %w", err)
		}
		ks := string(b)
		if _, dup := out[ks]; dup {
			return nil, nil, fmt.Errorf("%w. Duplicate key was %s", errNonUniqueParamSets, ks)
		}
		out[ks] = s
		order = append(order, ks)
	}
	return order, out, nil
}

// flattenParameters is generator_spec_processor.go flattenParameters.
func flattenParameters(in map[string]any) (map[string]string, error) {
	flat, err := flatten.Flatten(in, "", flatten.DotStyle)
	if err != nil {
		return nil, fmt.Errorf("error flatenning parameters: %w", err)
	}
	out := make(map[string]string, len(flat))
	for k, v := range flat {
		out[k] = fmt.Sprintf("%v", v)
	}
	return out, nil
}
