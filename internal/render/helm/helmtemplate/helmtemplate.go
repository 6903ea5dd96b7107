// Package helmtemplate holds what `helm template` does the same way in Helm 3 and helm 4, written once over
// either SDK's types: subcharts in a fixed order, the rendered NOTES.txt dropped, test hooks recognised, and
// stdout assembled document by document. internal/render/helm (Helm 3), its helm4 half and Kustomize's
// helmCharts use it; what differs between the SDKs (their chart, release and capabilities types, their error
// messages) stays with each caller.
package helmtemplate

import (
	"sort"
	"strings"
	"unicode"
)

// Chart is what both SDKs' *chart.Chart (helm.sh/helm/v3/pkg/chart, helm.sh/helm/v4/pkg/chart/v2) offer for
// walking a chart's subcharts.
type Chart[C any] interface {
	Name() string
	Dependencies() []C
	SetDependencies(charts ...C)
}

// SortDependencies orders the subcharts of ch, at every depth, by name and then by version (read with
// version, the chart's Metadata.Version). Helm's loader.LoadFiles adds subcharts while ranging over a map, so
// its order, which shows in the order of subchart CRDs, is random; a fixed one keeps the output stable.
func SortDependencies[C Chart[C]](ch C, version func(C) string) {
	deps := append([]C(nil), ch.Dependencies()...)
	sort.SliceStable(deps, func(i, j int) bool {
		if deps[i].Name() != deps[j].Name() {
			return deps[i].Name() < deps[j].Name()
		}
		return version(deps[i]) < version(deps[j])
	})
	for _, d := range deps {
		SortDependencies(d, version)
	}
	ch.SetDependencies(deps...)
}

// DropNotes removes the rendered NOTES.txt files (of the chart and its subcharts) from an engine's output, as
// pkg/action/action.go renderResources does before sorting manifests: `helm template` never prints them.
func DropNotes(files map[string]string) {
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k)
		}
	}
}

// IsTestHook reports whether a hook runs on `helm test` (an event "test", release.HookTest in both SDKs):
// those are the hooks --skip-tests leaves out.
func IsTestHook[E ~string](events []E) bool {
	for _, e := range events {
		if e == "test" {
			return true
		}
	}
	return false
}

// Output is `helm template`'s stdout (pkg/cmd/template.go, cmd/helm/template.go in Helm 3): the release
// manifest (CRDs with --include-crds, then the manifests in install order, as renderResources writes them),
// trimmed of white space at both ends, then each hook. The zero value is empty and ready. It keeps the texts
// and copies them once, into a buffer of the output's size: a large chart's are megabytes.
type Output struct {
	manifest, hooks []string
}

// Resource adds a CRD or a manifest to the release manifest, rendered from the file source.
func (o *Output) Resource(source, content string) {
	o.manifest = append(o.manifest, "---\n# Source: ", source, "\n", content, "\n")
}

// Release adds a release manifest that the SDK assembled itself (action.Install's Release.Manifest).
func (o *Output) Release(manifest string) { o.manifest = append(o.manifest, manifest) }

// Hook adds a hook, rendered from the file source, after the release manifest.
func (o *Output) Hook(source, content string) {
	o.hooks = append(o.hooks, "---\n# Source: ", source, "\n", content, "\n")
}

// Bytes is the whole stdout: strings.TrimSpace(manifest) + "\n" + hooks.
func (o *Output) Bytes() []byte {
	manifest := trimSpace(o.manifest)
	n := 1
	for _, t := range manifest {
		n += len(t)
	}
	for _, t := range o.hooks {
		n += len(t)
	}
	b := make([]byte, 0, n)
	for _, t := range manifest {
		b = append(b, t...)
	}
	b = append(b, '\n')
	for _, t := range o.hooks {
		b = append(b, t...)
	}
	return b
}

// trimSpace is strings.TrimSpace of the texts' concatenation, as texts: those of white space only at either end
// dropped, and the first and last others trimmed on their outer side. A text never ends inside a character (each
// is whole: a template's output, a file, or the ASCII around them), so trimming each is trimming the whole.
func trimSpace(texts []string) []string {
	for len(texts) > 0 && strings.TrimLeftFunc(texts[0], unicode.IsSpace) == "" {
		texts = texts[1:]
	}
	for len(texts) > 0 && strings.TrimRightFunc(texts[len(texts)-1], unicode.IsSpace) == "" {
		texts = texts[:len(texts)-1]
	}
	if len(texts) == 0 {
		return nil
	}
	out := append([]string(nil), texts...)
	out[0] = strings.TrimLeftFunc(out[0], unicode.IsSpace)
	out[len(out)-1] = strings.TrimRightFunc(out[len(out)-1], unicode.IsSpace)
	return out
}
