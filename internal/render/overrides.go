package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	jsonpatch "github.com/evanphx/json-patch"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/repofs"
)

// Override files, as in reposerver/repository/repository.go (repoSourceFile, appSourceFile).
const (
	repoSourceFile = ".argocd-source.yaml"
	appSourceFile  = ".argocd-source-%s.yaml"
)

// mergeSourceParameters is repository.go mergeSourceParameters over the confined FS: .argocd-source.yaml and then
// .argocd-source-<appName>.yaml in the app path are JSON-merge-patched into the source; repoURL, path, chart and
// targetRevision cannot be overridden.
func mergeSourceParameters(source *v1alpha1.ApplicationSource, fsys *repofs.FS, appPath, appName string) error {
	overrides := []string{path.Join(appPath, repoSourceFile)}
	if appName != "" {
		overrides = append(overrides, path.Join(appPath, fmt.Sprintf(appSourceFile, appName)))
	}
	merged := *source.DeepCopy()
	for _, filename := range overrides {
		st, err := fsys.Stat(filename)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case st.IsDir():
			continue
		}
		data, err := json.Marshal(merged)
		if err != nil {
			return fmt.Errorf("%s: %w", filename, err)
		}
		patch, err := fsys.ReadFile(filename)
		if err != nil {
			return err
		}
		patch, err = yaml.YAMLToJSON(patch)
		if err != nil {
			return fmt.Errorf("%s: %w", filename, err)
		}
		data, err = jsonpatch.MergePatch(data, patch)
		if err != nil {
			return fmt.Errorf("%s: %w", filename, err)
		}
		if err := json.Unmarshal(data, &merged); err != nil {
			return fmt.Errorf("%s: %w", filename, err)
		}
	}
	merged.Chart = source.Chart
	merged.Path = source.Path
	merged.RepoURL = source.RepoURL
	merged.TargetRevision = source.TargetRevision
	*source = merged
	return nil
}
