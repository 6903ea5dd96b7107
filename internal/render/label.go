package render

import (
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// SourcesLabel names all of an app's sources as Error.Path names one (a source's path, or "chart <name>"; "source
// <n>: …" in a multi-source app), one after the other: for errors about the app's render as a whole (a render
// worker killed at its cap, the change's render budget), which cannot tell the source or file at fault.
func SourcesLabel(app *v1alpha1.Application) string {
	srcs := app.Spec.GetSources()
	labels := make([]string, 0, len(srcs))
	for i := range srcs {
		if l := sourceLabel(&srcs[i], i, len(srcs) > 1); l != "" && !strings.HasSuffix(l, ": ") {
			labels = append(labels, l)
		}
	}
	return strings.Join(labels, "; ")
}
