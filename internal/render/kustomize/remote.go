package kustomize

import (
	"net/url"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// Refusal rules added by this package (repofs defines the path rules).
const (
	// RuleRemote: a resource, base, component or file is a URL kustomize would clone or download.
	RuleRemote repofs.Rule = "remote-reference"
	// RuleHelmPull: a helmCharts entry names a chart that is not vendored in the repository.
	RuleHelmPull repofs.Rule = "helm-chart-pull"
	// RulePlugin: a plugin kustomize would have to execute (exec/container KRM functions, Go plugins) or a
	// builtin plugin that shells out (HelmChartInflationGenerator listed under generators).
	RulePlugin repofs.Rule = "exec-plugin"
)

var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// isRemote reports whether kustomize would treat s as a remote location: a URL its file loader downloads
// (loader.IsRemoteFile: http/https) or anything git.NewRepoSpecFromURL accepts, which the loader clones with the
// git binary. The test is a superset of both (api@v0.21.1 internal/git/repospec.go): after an optional "git::"
// prefix, a scheme among ssh/https/http/file, an scp-style "user@" prefix, or a github.com/ or github.com: host.
func isRemote(s string) bool {
	if u, err := url.Parse(s); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return true
	}
	t := strings.ToLower(s)
	t = strings.TrimPrefix(t, "git::")
	for _, p := range []string{"ssh://", "https://", "http://", "file://"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	if scpUser.MatchString(t) {
		return true
	}
	return strings.HasPrefix(t, "github.com/") || strings.HasPrefix(t, "github.com:")
}

// pathRef is one path-like entry of a kustomization: the field it sits in and its value.
type pathRef struct {
	field string
	value string
	// dirOK: the entry may name a directory (a base or component) rather than a file.
	dirOK bool
}

// pathRefs lists every entry of k (after FixKustomization) that kustomize hands to its loader's Load (a file,
// possibly downloaded) or New (a directory, possibly cloned), so each can be vetted before the build.
func pathRefs(k *types.Kustomization) []pathRef {
	var refs []pathRef
	add := func(field string, dirOK bool, vals ...string) {
		for _, v := range vals {
			if v != "" {
				refs = append(refs, pathRef{field: field, value: v, dirOK: dirOK})
			}
		}
	}
	add("resources", true, k.Resources...)
	add("bases", true, k.Bases...)
	add("components", true, k.Components...)
	add("crds", false, k.Crds...)
	add("configurations", false, k.Configurations...)
	if p, ok := k.OpenAPI["path"]; ok {
		add("openapi.path", false, p)
	}
	for _, p := range k.PatchesStrategicMerge {
		// inline patches are YAML documents; only single-line entries can be paths
		if !strings.ContainsAny(string(p), "\n") {
			add("patchesStrategicMerge", false, string(p))
		}
	}
	for _, p := range k.PatchesJson6902 {
		add("patchesJson6902.path", false, p.Path)
	}
	for _, p := range k.Patches {
		add("patches.path", false, p.Path)
	}
	for _, r := range k.Replacements {
		add("replacements.path", false, r.Path)
	}
	kv := func(field string, a types.GeneratorArgs) {
		for _, f := range a.FileSources {
			// "[key=]path" (kv.ParseFileSource)
			add(field+".files", false, f)
			if _, p, ok := strings.Cut(f, "="); ok {
				add(field+".files", false, p)
			}
		}
		add(field+".envs", false, a.EnvSources...)
		add(field+".env", false, a.EnvSource)
	}
	for _, g := range k.ConfigMapGenerator {
		kv("configMapGenerator", g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		kv("secretGenerator", g.GeneratorArgs)
	}
	for _, h := range k.HelmCharts {
		add("helmCharts.valuesFile", false, h.ValuesFile)
		add("helmCharts.additionalValuesFiles", false, h.AdditionalValuesFiles...)
	}
	return refs
}

// pluginPathKeys are the fields of builtin plugin configurations whose values the plugins pass to their
// loader's Load (PatchTransformer.path, PatchJson6902Transformer.path, PatchStrategicMergeTransformer.paths,
// ReplacementTransformer.replacements[].path, ValueAddTransformer.targetFilePath, ConfigMap/SecretGenerator
// files/envs/env, HelmChartInflationGenerator valuesFile/additionalValuesFiles).
var pluginPathKeys = map[string]bool{
	"path": true, "paths": true, "targetFilePath": true, "files": true, "envs": true, "env": true,
	"valuesFile": true, "additionalValuesFiles": true,
}

// remoteInPluginConfig returns the first remote location found under a path key anywhere in a plugin
// configuration object.
func remoteInPluginConfig(v any) (string, bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if pluginPathKeys[k] {
				if s, ok := firstRemoteString(x); ok {
					return s, true
				}
			}
			if s, ok := remoteInPluginConfig(x); ok {
				return s, true
			}
		}
	case []any:
		for _, x := range t {
			if s, ok := remoteInPluginConfig(x); ok {
				return s, true
			}
		}
	}
	return "", false
}

func firstRemoteString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		if isRemote(t) {
			return t, true
		}
		if _, p, ok := strings.Cut(t, "="); ok && isRemote(p) {
			return t, true
		}
	case []any:
		for _, x := range t {
			if s, ok := firstRemoteString(x); ok {
				return s, true
			}
		}
	}
	return "", false
}
