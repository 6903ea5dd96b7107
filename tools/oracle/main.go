// Command oracle renders an Application with Argo CD's own manifest generation
// (reposerver/repository.GenerateManifests of github.com/argoproj/argo-cd/v3, calling the helm and kustomize CLIs
// found on PATH), so fleetwave's golden files are Argo CD's output, not our reading of it.
//
//	oracle --app app.yaml --repo-root <checkout> [--settings render-env.yaml]
//
// It prints the manifests as a YAML stream (Argo CD's order) on stdout, or Argo CD's error on stderr (exit 1).
// `make goldens` runs it (argo-cd v3.6.1) over the render fixtures with helm v4.3.1, the helm v3.6.1 ships
// (hack/tool-versions.sh), and kustomize v5.8.1 on PATH.
// It is a separate module so the repo-server's dependency tree stays out of fleetwave's binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v3/reposerver/repository"
	"github.com/argoproj/argo-cd/v3/util/git"
	utilio "github.com/argoproj/argo-cd/v3/util/io"
	log "github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

type settings struct {
	KubeVersion           string   `json:"kubeVersion"`
	APIVersions           []string `json:"apiVersions"`
	AppLabelKey           string   `json:"appLabelKey"`
	TrackingMethod        string   `json:"trackingMethod"`
	InstallationID        string   `json:"installationID"`
	KustomizeBuildOptions string   `json:"kustomizeBuildOptions"`
	Revision              string   `json:"revision"`
	ControlPlaneNamespace string   `json:"controlPlaneNamespace"`
}

func main() {
	appFile := flag.String("app", "", "Application manifest")
	root := flag.String("repo-root", ".", "checkout every source's path is relative to")
	settingsFile := flag.String("settings", "", "render settings (render-env.yaml form)")
	flag.Parse()
	if err := run(*appFile, *root, *settingsFile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(appFile, root, settingsFile string) error {
	log.SetLevel(log.WarnLevel)
	s := settings{AppLabelKey: "app.kubernetes.io/instance", TrackingMethod: "annotation", ControlPlaneNamespace: "argocd", KubeVersion: "v1.30.0"}
	if settingsFile != "" {
		b, err := os.ReadFile(settingsFile)
		if err != nil {
			return err
		}
		if err := yaml.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	b, err := os.ReadFile(appFile)
	if err != nil {
		return err
	}
	var app v1alpha1.Application
	if err := yaml.Unmarshal(b, &app); err != nil {
		return err
	}
	// Argo CD renders in its own scratch clone and edits kustomization files in place: work on a copy.
	tmp, err := os.MkdirTemp("", "oracle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, os.DirFS(root)); err != nil {
		return fmt.Errorf("copying %s: %w", root, err)
	}
	if err := makeWritable(tmp); err != nil {
		return err
	}
	root = tmp
	sources := app.Spec.GetSources()
	// Every git source of the app lives in the one checkout; ref sources resolve "$ref/..." against it.
	paths := utilio.NewRandomizedTempPaths(os.TempDir())
	refSources := map[string]*v1alpha1.RefTarget{}
	for _, src := range sources {
		// Fixture convention: refs/<ref>/ holds the checkout of a ref source from another repository.
		repoRoot := root
		if src.Ref != "" {
			if st, err := os.Stat(filepath.Join(root, "refs", src.Ref)); err == nil && st.IsDir() {
				repoRoot = filepath.Join(root, "refs", src.Ref)
			}
		}
		if paths.GetPathIfExists(git.NormalizeGitURL(src.RepoURL)) == "" || repoRoot != root {
			paths.Add(git.NormalizeGitURL(src.RepoURL), repoRoot)
		}
		if src.Ref != "" {
			refSources["$"+src.Ref] = &v1alpha1.RefTarget{Repo: v1alpha1.Repository{Repo: src.RepoURL}, TargetRevision: src.TargetRevision}
		}
	}
	var opts *v1alpha1.KustomizeOptions
	if s.KustomizeBuildOptions != "" {
		opts = &v1alpha1.KustomizeOptions{BuildOptions: s.KustomizeBuildOptions}
	}
	first := true
	for i := range sources {
		src := sources[i]
		if app.Spec.HasMultipleSources() && src.Path == "" && !src.IsOCI() && !src.IsHelm() && src.IsRef() {
			continue
		}
		q := &apiclient.ManifestRequest{
			Repo:               &v1alpha1.Repository{Repo: src.RepoURL},
			Revision:           s.Revision,
			AppLabelKey:        s.AppLabelKey,
			AppName:            app.InstanceName(s.ControlPlaneNamespace),
			Namespace:          app.Spec.Destination.Namespace,
			ApplicationSource:  &src,
			KustomizeOptions:   opts,
			KubeVersion:        s.KubeVersion,
			ApiVersions:        s.APIVersions,
			TrackingMethod:     s.TrackingMethod,
			HasMultipleSources: app.Spec.HasMultipleSources(),
			RefSources:         refSources,
			ProjectName:        app.Spec.GetProject(),
			InstallationID:     s.InstallationID,
		}
		appPath := filepath.Join(root, src.Path)
		res, err := repository.GenerateManifests(context.Background(), appPath, root, s.Revision, q, true, &git.NoopCredsStore{}, resource.MustParse("1G"), paths)
		if err != nil {
			return fmt.Errorf("source %d: %w", i+1, err)
		}
		for _, m := range res.Manifests {
			y, err := yaml.JSONToYAML([]byte(m))
			if err != nil {
				return err
			}
			if !first {
				fmt.Print("---\n")
			}
			first = false
			fmt.Print(string(y))
		}
	}
	return nil
}

func makeWritable(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
}
