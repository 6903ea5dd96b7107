package discover

import (
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// refSources are an Application's ref sources by the name a Helm value file or file parameter gives them:
// "$name" for the source with ref: name (reposerver/repository/repository.go getReferencedSource).
type refSources map[string]v1alpha1.ApplicationSource

func refSourcesOf(app *v1alpha1.Application) refSources {
	refs := refSources{}
	for _, s := range app.Spec.GetSources() {
		if s.Ref != "" {
			refs["$"+s.Ref] = s
		}
	}
	return refs
}

// refPath is a "$name/rest" path resolved: the ref source, whether "$name" names one, and rest as a path in
// the ref source's repository, from its root.
type refPath struct {
	src   v1alpha1.ApplicationSource
	known bool
	rel   string
}

// lookup resolves p when it starts with "$" (false otherwise): "$name/rest" is rest in the repository of the
// source named "$name", the rest of the path after the first "/" (getResolvedRefValueFile).
func (r refSources) lookup(p string) (refPath, bool) {
	if !strings.HasPrefix(p, "$") {
		return refPath{}, false
	}
	name, rest, _ := strings.Cut(p, "/")
	src, known := r[name]
	return refPath{src: src, known: known, rel: cleanRel(rest)}, true
}
