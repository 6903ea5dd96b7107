package kustomize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// maxNesting bounds kustomization nesting (and nested plugin-configuration builds) during the pre-walk;
// kustomize itself detects cycles.
const maxNesting = 64

// walker pre-walks the kustomization tree kustomize is about to build, the way kusttarget traverses it
// (api@v0.21.1 internal/target/kusttarget.go: resources and components that are directories, generator,
// transformer and validator entries), in order to
//   - refuse, with the kustomization file and field named, any entry kustomize would fetch from the network
//     (git clone, HTTP download) or that leaves the checkout;
//   - render helmCharts in-process: each chart becomes a file in the overlay listed under the kustomization's
//     resources, its resources carrying kustomize's helm-generated annotation so that the namespace transformer
//     skips them exactly as it skips generator output;
//   - vet the builtin plugin configurations listed under generators/transformers/validators.
type walker struct {
	e    *Engine
	st   *buildState
	fs   *buildFS
	ctx  context.Context
	seen map[string]bool
	// rewrite, during the pre-walk's vet of one kustomization, collects its remote bases that were fetched and
	// mounted: entry → its directory relative to the kustomization's. nil (during the build): remote is refused.
	rewrite map[string]string
}

// readKustomization mirrors target.LoadKustFile: exactly one recognised kustomization file in dir.
func (w *walker) readKustomization(dir string) (file string, data []byte, ok bool, err error) {
	var found []string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, n)
		if w.fs.Exists(virtual(p)) && !w.fs.IsDir(virtual(p)) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return "", nil, false, nil // kustomize reports the missing or ambiguous file
	}
	rr, err := w.fs.resolve(virtual(found[0]))
	if err != nil {
		return "", nil, false, err
	}
	b, ok := w.fs.overlayFile(rr)
	if !ok {
		b, err = w.fs.repo.ReadFile(found[0])
		if err != nil {
			return "", nil, false, err
		}
	}
	if err := w.fs.checkAliases(rr, b); err != nil {
		return "", nil, false, err
	}
	return rr, b, true, nil
}

func parseKustomization(data []byte) (*types.Kustomization, error) {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, err
	}
	k.FixKustomization()
	return &k, nil
}

// visit vets the kustomization in dir (symlink-resolved, repository-relative) and the tree below it.
// inheritedNS is kusttarget's helmRootNamespace: the nearest ancestor namespace, passed to Helm when neither the
// chart nor this kustomization sets one.
func (w *walker) visit(dir, inheritedNS string, depth int) error {
	if depth > maxNesting {
		return nil
	}
	key := dir + "\x00" + inheritedNS
	if w.seen[key] {
		return nil
	}
	w.seen[key] = true
	if err := w.ctx.Err(); err != nil {
		return err
	}
	file, data, ok, err := w.readKustomization(dir)
	if err != nil || !ok {
		return err
	}
	k, err := parseKustomization(data)
	if err != nil {
		return nil // kustomize reports it
	}
	w.rewrite = map[string]string{}
	err = w.vet(dir, file, k)
	rewrite := w.rewrite
	w.rewrite = nil
	if err != nil {
		return err
	}
	if len(rewrite) > 0 {
		if k, err = w.rewriteRemote(file, k, rewrite); err != nil {
			return err
		}
	}
	if len(k.OpenAPI) > 0 {
		w.st.openAPI = true
	}
	childNS := inheritedNS
	if k.Namespace != "" {
		childNS = k.Namespace
	}
	// kusttarget.accumulateTarget order: resources (depth first), this kustomization's generators, components.
	visitDirs := func(entries []string) error {
		for _, r := range entries {
			if isRemote(r) || path.IsAbs(r) {
				continue
			}
			p := path.Join(dir, r)
			if !w.fs.IsDir(virtual(p)) {
				continue
			}
			rp, err := w.fs.resolve(virtual(p))
			if err != nil {
				return err
			}
			if err := w.visit(rp, childNS, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visitDirs(k.Resources); err != nil {
		return err
	}
	if len(k.HelmCharts) > 0 && w.st.opts.helm.enabled {
		if err := w.renderCharts(dir, file, k, inheritedNS); err != nil {
			return err
		}
	}
	if err := visitDirs(k.Components); err != nil {
		return err
	}
	for _, list := range [][]string{k.Generators, k.Transformers, k.Validators} {
		for _, g := range list {
			if err := w.vetPluginEntry(dir, file, g, childNS, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// refuse builds the one-line refusal for an entry of kustomization file.
func (w *walker) refuse(file, field, value string, rule repofs.Rule, detail string) error {
	return &repofs.Refusal{Rule: rule, Path: file, Detail: fmt.Sprintf("%s entry %q: %s", field, value, detail)}
}

func (w *walker) remoteDetail() string {
	if w.st.in.AllowRemote {
		return "remote bases are allowed by configuration, but this renderer has no network access and never fetches them"
	}
	return "remote bases and files are not fetched (not allowed)"
}

// vet refuses the entries of kustomization k (in dir, read from file) that are remote or leave the checkout.
func (w *walker) vet(dir, file string, k *types.Kustomization) error {
	for _, r := range pathRefs(k) {
		if isRemote(r.value) {
			if fetched, err := w.fetchRemote(dir, r); fetched {
				if err != nil {
					return w.refuse(file, r.field, r.value, RuleRemote, remoteFailure(err))
				}
				continue
			}
			return w.refuse(file, r.field, r.value, RuleRemote, w.remoteDetail())
		}
		if strings.HasPrefix(r.field, "patchesStrategicMerge") && (strings.HasPrefix(strings.TrimSpace(r.value), "{") || strings.Contains(r.value, ": ")) {
			continue // an inline patch
		}
		if path.IsAbs(r.value) {
			return w.refuse(file, r.field, r.value, repofs.RuleAbsolutePath, "paths must be relative")
		}
		p, err := repofs.Join(dir, r.value)
		if err != nil {
			return w.refuse(file, r.field, r.value, repofs.RulePathEscape, "path leaves the repository root")
		}
		if _, err := w.fs.repo.Resolve(p); err != nil {
			var ref *repofs.Refusal
			if errors.As(err, &ref) {
				return w.refuse(file, r.field, r.value, ref.Rule, ref.Detail)
			}
			return err
		}
	}
	for _, list := range []struct {
		field string
		vals  []string
	}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
		for _, v := range list.vals {
			if w.isInlineConfig(v) {
				continue
			}
			if isRemote(v) {
				return w.refuse(file, list.field, v, RuleRemote, w.remoteDetail())
			}
			if path.IsAbs(v) {
				return w.refuse(file, list.field, v, repofs.RuleAbsolutePath, "paths must be relative")
			}
			if _, err := repofs.Join(dir, v); err != nil {
				return w.refuse(file, list.field, v, repofs.RulePathEscape, "path leaves the repository root")
			}
		}
	}
	return nil
}

func (w *walker) isInlineConfig(s string) bool {
	_, err := w.e.rmf.NewResMapFromBytes([]byte(s))
	return err == nil && strings.ContainsAny(s, "\n:")
}

// vetPluginEntry vets one generators/transformers/validators entry: inline configurations and configuration files
// are scanned for remote paths; a directory is itself a kustomization whose output is the configuration, so it is
// visited and built, and its output scanned.
func (w *walker) vetPluginEntry(dir, file, entry, ns string, depth int) error {
	if w.isInlineConfig(entry) {
		return w.vetPluginConfigs(file, "inline plugin configuration", []byte(entry))
	}
	if isRemote(entry) || path.IsAbs(entry) {
		return nil // vet refused it already
	}
	p := path.Join(dir, entry)
	if w.fs.IsDir(virtual(p)) {
		rp, err := w.fs.resolve(virtual(p))
		if err != nil {
			return err
		}
		w.st.pluginDirs = append(w.st.pluginDirs, pluginDir{file: file, entry: entry, dir: rp})
		return w.visit(rp, ns, depth+1)
	}
	b, err := w.fs.ReadFile(virtual(p))
	if err != nil {
		return nil //nolint:nilerr // the real build reports it
	}
	return w.vetPluginConfigs(file, entry, b)
}

// scanPluginDirs builds each kustomization listed as a directory under generators/transformers/validators, whose
// output is plugin configuration, and vets that output. Directories found deeper are built first, so no build
// here consumes configuration that was not vetted.
func (w *walker) scanPluginDirs() error {
	for i := len(w.st.pluginDirs) - 1; i >= 0; i-- {
		pd := w.st.pluginDirs[i]
		if w.st.scanned[pd.dir] {
			continue
		}
		w.st.scanned[pd.dir] = true
		rm, err := w.e.krustyRun(w.ctx, w.st, pd.dir)
		if err != nil {
			var r *repofs.Refusal
			if errors.As(err, &r) {
				return err
			}
			continue // the real build reports it
		}
		out, err := rm.AsYaml()
		if err != nil {
			continue
		}
		if err := w.vetPluginConfigs(pd.file, pd.entry, out); err != nil {
			return err
		}
	}
	return nil
}

// vetPluginConfigs refuses plugin configurations that name remote files, and HelmChartInflationGenerator
// configurations (kustomize would shell out to helm; helmCharts is the supported form).
func (w *walker) vetPluginConfigs(file, where string, data []byte) error {
	rm, err := w.e.rmf.NewResMapFromBytes(data)
	if err != nil {
		return nil //nolint:nilerr // the real build reports it
	}
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			continue
		}
		if s, ok := remoteInPluginConfig(m); ok {
			return w.refuse(file, where, s, RuleRemote, w.remoteDetail())
		}
		if r.GetKind() == "HelmChartInflationGenerator" {
			return w.refuse(file, where, r.GetName(), RulePlugin,
				"a HelmChartInflationGenerator plugin configuration would run the helm binary; use the helmCharts field")
		}
	}
	return nil
}

// checkServed vets a kustomization file as kustomize reads it during the build: whatever the pre-walk did not
// reach is checked here, and a kustomization still holding helmCharts (not rendered in-process) is refused, so
// kustomize never runs helm.
func (w *walker) checkServed(dir, file string, data []byte) error {
	k, err := parseKustomization(data)
	if err != nil {
		return nil //nolint:nilerr // kustomize reports it
	}
	if err := w.vet(dir, file, k); err != nil {
		return err
	}
	if len(k.OpenAPI) > 0 && !w.st.openAPI {
		return fmt.Errorf("%s: openapi is set in a kustomization the pre-walk did not reach", file)
	}
	if len(k.HelmCharts) > 0 && w.st.opts.helm.enabled {
		return fmt.Errorf("%s: helmCharts were not rendered in-process (the kustomization was not reached by the pre-walk)", file)
	}
	return nil
}

// renderCharts renders every helmCharts entry of k in-process and rewrites the kustomization in the overlay: the
// Helm fields removed, one file of rendered resources per chart appended to resources.
func (w *walker) renderCharts(dir, file string, k *types.Kustomization, inheritedNS string) error {
	nss := make([]string, len(k.HelmCharts))
	for i, c := range k.HelmCharts {
		// kusttarget configureBuiltinGenerators: chart namespace, else the kustomization's, else the inherited one
		switch {
		case c.Namespace != "":
			nss[i] = c.Namespace
		case k.Namespace != "":
			nss[i] = k.Namespace
		default:
			nss[i] = inheritedNS
		}
	}
	if prev, ok := w.st.planned[dir]; ok {
		if !reflect.DeepEqual(prev, nss) {
			return fmt.Errorf("%s: its helmCharts are reached from kustomizations with different namespaces; rendering them once per parent is not supported", file)
		}
		return nil
	}
	w.st.planned[dir] = nss
	var globals types.HelmGlobals
	if k.HelmGlobals != nil {
		globals = *k.HelmGlobals
	}
	ldr := kustLoader{fs: w.fs, root: filesys.ConfirmedDir(virtual(dir)), lr: w.st.opts.loadRestrictions}
	sum := sha256.Sum256([]byte(dir))
	tag := hex.EncodeToString(sum[:4])
	// Config, for every chart of the kustomization before any is generated (kusttarget.runGenerators). The CLI's
	// --helm-api-versions slice is assigned first and the chart's own apiVersions are then unmarshalled into it
	// element by element, so a chart's list overwrites the shared backing array the other charts of the build
	// still read (kustomize v5.8.1 behaviour, reproduced on the same slice).
	runs := make([]*helmRun, len(k.HelmCharts))
	for i, c := range k.HelmCharts {
		c.Namespace = nss[i]
		av := w.st.opts.helm.apiVersions
		if len(c.ApiVersions) > 0 {
			av = av[:0]
			//lint:ignore S1011 the capacity growth of element-wise appends is what kustomize's quirk depends on
			for _, v := range c.ApiVersions { // one by one, as encoding/json decodes: not append(av, list...)
				av = append(av, v)
			}
		}
		runs[i] = &helmRun{chart: c, globals: globals, ldr: ldr, cfg: w.st.opts.helm, apiVersions: av}
	}
	var added []string
	for i, run := range runs {
		c := run.chart
		rm, err := run.inflate(w.ctx, w.e.rmf, w.e.now)
		if err != nil {
			return fmt.Errorf("%s: helmCharts %q: %w", file, c.Name, err)
		}
		if rm.Size() == 0 {
			continue
		}
		out, err := rm.AsYaml()
		if err != nil {
			return err
		}
		name := w.syntheticName(dir, tag, i)
		w.st.overlay[path.Join(dir, name)] = out
		w.st.helmFiles[name] = path.Base(file)
		added = append(added, name)
	}
	nk := *k
	nk.HelmCharts = nil
	nk.HelmGlobals = nil
	nk.HelmChartInflationGenerator = nil
	if len(added) > 0 {
		nk.Resources = append(append([]string{}, k.Resources...), added...)
	}
	b, err := yaml.Marshal(&nk)
	if err != nil {
		return fmt.Errorf("%s: rewrite after rendering helmCharts: %w", file, err)
	}
	// the rewrite must mean exactly the kustomization minus its Helm fields
	back, err := parseKustomization(b)
	if err != nil {
		return fmt.Errorf("%s: rewrite after rendering helmCharts: %w", file, err)
	}
	if j1, j2 := mustJSON(back), mustJSON(&nk); j1 != j2 {
		return fmt.Errorf("%s: rewrite after rendering helmCharts does not round-trip", file)
	}
	w.st.overlay[file] = b
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// syntheticName picks a file name for a rendered chart that exists neither in the checkout nor in the overlay.
func (w *walker) syntheticName(dir, tag string, i int) string {
	for n := 0; ; n++ {
		name := fmt.Sprintf(".fleetwave-helmchart-%s-%d.yaml", tag, i)
		if n > 0 {
			name = fmt.Sprintf(".fleetwave-helmchart-%s-%d-%d.yaml", tag, i, n)
		}
		p := path.Join(dir, name)
		if _, ok := w.st.overlay[p]; ok {
			continue
		}
		if w.fs.repo.Exists(p) {
			continue
		}
		return name
	}
}

// fetchRemote fetches and mounts a remote base (a resources, bases or components entry naming an https git
// repository) during the pre-walk, when the build has a RemoteFetcher; fetched is false for anything else, which
// vet refuses as before.
func (w *walker) fetchRemote(dir string, r pathRef) (fetched bool, err error) {
	if w.rewrite == nil || w.st.in.Remote == nil || !r.dirOK || (r.field != "resources" && r.field != "bases" && r.field != "components") {
		return false, nil
	}
	rb, ok := parseRemoteBase(r.value)
	if !ok {
		return false, nil
	}
	at, err := w.mountRemote(rb)
	if err != nil {
		return true, err
	}
	rel, err := filepath.Rel(filepath.FromSlash(dir), filepath.FromSlash(at))
	if err != nil {
		return true, err
	}
	w.rewrite[r.value] = filepath.ToSlash(rel)
	return true, nil
}

// rewriteRemote writes kustomization k (read from file) into the overlay with its fetched remote bases replaced by
// the directories they are mounted at, as kustomize replaces them by its clone's directory, and returns it.
func (w *walker) rewriteRemote(file string, k *types.Kustomization, rewrite map[string]string) (*types.Kustomization, error) {
	nk := *k
	swap := func(list []string) []string {
		out := make([]string, len(list))
		for i, v := range list {
			out[i] = v
			if to, ok := rewrite[v]; ok {
				out[i] = to
			}
		}
		return out
	}
	nk.Resources, nk.Bases, nk.Components = swap(k.Resources), swap(k.Bases), swap(k.Components)
	b, err := yaml.Marshal(&nk)
	if err != nil {
		return nil, fmt.Errorf("%s: rewrite after fetching remote bases: %w", file, err)
	}
	back, err := parseKustomization(b)
	if err != nil {
		return nil, fmt.Errorf("%s: rewrite after fetching remote bases: %w", file, err)
	}
	if j1, j2 := mustJSON(back), mustJSON(&nk); j1 != j2 {
		return nil, fmt.Errorf("%s: rewrite after fetching remote bases does not round-trip", file)
	}
	w.st.overlay[file] = b
	return back, nil
}
