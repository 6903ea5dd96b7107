package helm4

import (
	"fmt"
	"log/slog"

	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/helm/helmtemplate"
)

// sortManifests is helm 4's releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
// (helm.sh/helm/v4@v4.3.1 pkg/release/v1/util/manifest_sorter.go), through helmtemplate's faster port of it: the
// same hooks and manifests in the same order, the same errors.
func sortManifests(files map[string]string) ([]*release.Hook, []releaseutil.Manifest, error) {
	s := helmtemplate.Sorter{
		Split: helmtemplate.SplitManifests4,
		Unmarshal: func(doc []byte) (helmtemplate.SimpleHead, error) {
			var h releaseutil.SimpleHead
			err := yaml.Unmarshal(doc, &h)
			return helmtemplate.SimpleHead(h), err
		},
		ParseError:  func(path string, err error) error { return fmt.Errorf("YAML parse error on %s: %w", path, err) },
		UnknownHook: func(hookTypes string) { slog.Info("skipping unknown hooks", "hookTypes", hookTypes) },
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
