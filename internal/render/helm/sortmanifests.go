package helm

import (
	"fmt"
	"log"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
)

// sortManifests is Helm 3's releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
// (helm.sh/helm/v3@v3.19.4 pkg/releaseutil/manifest_sorter.go), through helmtemplate's faster port of it: the
// same hooks and manifests in the same order, the same errors.
func sortManifests(files map[string]string) ([]*release.Hook, []releaseutil.Manifest, error) {
	s := helmtemplate.Sorter{
		Split: helmtemplate.SplitManifests,
		Unmarshal: func(doc []byte) (helmtemplate.SimpleHead, error) {
			var h releaseutil.SimpleHead
			err := yaml.Unmarshal(doc, &h)
			return helmtemplate.SimpleHead(h), err
		},
		// errors.Wrapf(err, "YAML parse error on %s", path) in the SDK (github.com/pkg/errors): the same text.
		ParseError:  func(path string, err error) error { return fmt.Errorf("YAML parse error on %s: %w", path, err) },
		UnknownHook: func(hookTypes string) { log.Printf("info: skipping unknown hook: %q", hookTypes) },
		Order:       releaseutil.InstallOrder,
	}
	hs, ms, err := s.SortManifests(files)
	var hooks []*release.Hook // nil when the SDK's is
	if hs != nil {
		hooks = make([]*release.Hook, len(hs))
	}
	for i, h := range hs {
		hooks[i] = &release.Hook{
			Name: h.Name, Kind: h.Kind, Path: h.Path, Manifest: h.Manifest,
			Events:            helmtemplate.StringsAs[release.HookEvent](h.Events),
			Weight:            h.Weight,
			DeletePolicies:    helmtemplate.StringsAs[release.HookDeletePolicy](h.DeletePolicies),
			OutputLogPolicies: helmtemplate.StringsAs[release.HookOutputLogPolicy](h.OutputLogPolicies),
		}
	}
	var manifests []releaseutil.Manifest
	if ms != nil {
		manifests = make([]releaseutil.Manifest, len(ms))
	}
	for i, m := range ms {
		manifests[i] = releaseutil.Manifest{Name: m.Name, Content: m.Content, Head: (*releaseutil.SimpleHead)(m.Head)}
	}
	return hooks, manifests, err
}
