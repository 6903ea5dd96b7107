package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/render"
)

// renderFlags are the flags of `render`; explicit flags win over --settings.
type renderFlags struct {
	app, repoRoot, settingsFile              string
	kubeVersion, apiVersions, trackingMethod string
	appLabelKey, revision, controlPlaneNS    string
	installationID, kustomizeBuildOptions    string
	repositories, argocdVersion              string
	allowRemote                              bool
	maxFileBytes, maxOutputBytes             int64
	maxDocuments                             int
	timeout                                  time.Duration
	all                                      renderAllFlags
}

func newRenderCmd(deps *Deps) *cobra.Command {
	var f renderFlags
	cmd := &cobra.Command{
		Use:   "render --app <Application.yaml> --repo-root <dir> | render --all --repo <dir> [--revision <rev>]",
		Short: "Print an application's manifests exactly as Argo CD's repo-server would render them, or every app's",
		Long: `render prints the manifests of one Argo CD Application as a YAML stream, in Argo CD's order, rendered
in-process the way Argo CD's repo-server renders them (Helm, Kustomize, plain directories and Jsonnet), with the
tracking metadata Argo CD adds. --repo-root is the checkout that spec.source.path is relative to; every git source
of the app is read from it. Charts from Helm repositories (repoURL + chart + targetRevision) and chart
dependencies that are not vendored are fetched from the repositories --repositories allows, and only from them.
Defaults match a current Argo CD install.

With --all, render finds every Application and ApplicationSet app of the git repository --repo at --revision
(default HEAD; following app-of-apps, as diff does) and renders each, at most --concurrency at once, writing
each app's result as soon as it is made: one JSON line per app (its manifests, or with --out-dir the file they
were written to), or with --output yaml one YAML stream. Progress goes to stderr, with one line per app that
failed and a summary at the end. Apps whose source only Argo CD can render are skipped, not failed. Exit
status 2 when an app failed to render or the repository has problems (the other apps are still rendered).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd, deps, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.app, "app", "", "path of the Application manifest (required)")
	fl.StringVar(&f.repoRoot, "repo-root", ".", "checkout that spec.source.path is relative to")
	fl.StringVar(&f.settingsFile, "settings", "", "YAML file with kubeVersion, apiVersions, appLabelKey, trackingMethod, installationID, kustomizeBuildOptions, revision, controlPlaneNamespace, argocdVersion")
	fl.StringVar(&f.kubeVersion, "kube-version", "", "destination cluster's Kubernetes version (default "+render.DefaultKubeVersion+")")
	fl.StringVar(&f.apiVersions, "api-versions", "", "comma-separated API versions of the cluster (group/version and group/version/Kind)")
	fl.StringVar(&f.trackingMethod, "tracking-method", "", "annotation (default), label or annotation+label")
	fl.StringVar(&f.appLabelKey, "app-label-key", "", "instance label key (default "+render.DefaultAppLabelKey+")")
	fl.StringVar(&f.revision, "revision", "", "commit SHA being rendered ($ARGOCD_APP_REVISION); with --all, the revision of --repo to render (branch, tag or sha; default HEAD), whose commit the apps see")
	fl.StringVar(&f.controlPlaneNS, "control-plane-namespace", "", "namespace Argo CD runs in (default "+render.DefaultControlPlaneNamespace+")")
	fl.StringVar(&f.installationID, "installation-id", "", "argocd-cm installationID")
	fl.StringVar(&f.kustomizeBuildOptions, "kustomize-build-options", "", "argocd-cm kustomize.buildOptions, e.g. --enable-helm")
	registerArgoCDVersion(fl, &f.argocdVersion)
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "operator allows remote Kustomize bases (fetching them is still not performed)")
	registerRepositories(fl, &f.repositories)
	fl.Int64Var(&f.maxFileBytes, "max-file-bytes", 0, "cap on one repository file (default 8 MiB)")
	fl.Int64Var(&f.maxOutputBytes, "max-output-bytes", 0, "cap on one app's manifests (default 64 MiB)")
	fl.IntVar(&f.maxDocuments, "max-documents", 0, "cap on one app's object count (default 10000)")
	fl.DurationVar(&f.timeout, "timeout", 0, "cap on one app's render time (default 60s)")
	f.all.register(cmd)
	return cmd
}

func runRender(cmd *cobra.Command, deps *Deps, f *renderFlags) error {
	if f.all.all {
		return runRenderAll(cmd, deps, f, &f.all)
	}
	loosenRenderGC(deps)
	for _, name := range []string{"repo", "output", "out-dir", "clusters", "repo-url", "concurrency", "progress-every"} {
		if cmd.Flags().Changed(name) {
			return usageErr(fmt.Errorf("render: --%s needs --all", name))
		}
	}
	if f.app == "" {
		return usageErr(errors.New("render: --app is required (or --all)"))
	}
	s, err := renderSettings(cmd, f)
	if err != nil {
		return usageErr(err)
	}
	data, err := os.ReadFile(f.app)
	if err != nil {
		return usageErr(fmt.Errorf("render: %w", err))
	}
	app, err := render.ParseApplication(data)
	if err != nil {
		return usageErr(fmt.Errorf("render: %s: %w", f.app, err))
	}
	if st, err := os.Stat(f.repoRoot); err != nil || !st.IsDir() {
		return usageErr(fmt.Errorf("render: --repo-root %s is not a directory", f.repoRoot))
	}
	charts, err := chartFetcher(deps, f.repositories)
	if err != nil {
		return usageErr(fmt.Errorf("render: %w", err))
	}
	// One app: one worker process (internal/render/isolate), as under serve.
	r, closeRenderer, _, err := newAppRenderer(deps.Getenv, toolLog(deps.Stderr), render.Options{
		AllowRemote: f.allowRemote, Charts: charts,
		Limits: render.Limits{MaxFileBytes: f.maxFileBytes, MaxOutputBytes: f.maxOutputBytes,
			MaxDocuments: f.maxDocuments, Timeout: f.timeout},
	})
	if err != nil {
		return usageErr(fmt.Errorf("render: %w", err))
	}
	defer closeRenderer()
	res, err := r.Render(cmd.Context(), render.Request{
		App:      app,
		Repos:    func(string) (string, bool) { return f.repoRoot, true },
		Settings: s,
		YAML:     true, // the worker encodes: the objects need not cross the pipe and be decoded here
	})
	if err != nil {
		return usageErr(err)
	}
	if res.YAML != nil {
		_, err := deps.Stdout.Write(res.YAML)
		return err
	}
	return render.WriteYAML(deps.Stdout, res.Objects)
}

// renderSettings merges --settings with the explicit flags (flags win) over the defaults.
func renderSettings(cmd *cobra.Command, f *renderFlags) (render.Settings, error) {
	var s render.Settings
	if f.settingsFile != "" {
		var err error
		if s, err = render.LoadSettings(f.settingsFile); err != nil {
			return s, err
		}
	}
	set := func(name string, dst *string, val string) {
		if cmd.Flags().Changed(name) {
			*dst = val
		}
	}
	set("kube-version", &s.KubeVersion, f.kubeVersion)
	set("tracking-method", &s.TrackingMethod, f.trackingMethod)
	set("app-label-key", &s.AppLabelKey, f.appLabelKey)
	set("revision", &s.Revision, f.revision)
	set("control-plane-namespace", &s.ControlPlaneNamespace, f.controlPlaneNS)
	set("installation-id", &s.InstallationID, f.installationID)
	set("kustomize-build-options", &s.KustomizeBuildOptions, f.kustomizeBuildOptions)
	if err := applyArgoCDVersion(cmd.Flags(), &s, f.argocdVersion); err != nil {
		return s, err
	}
	if cmd.Flags().Changed("api-versions") {
		s.APIVersions = nil
		for _, v := range strings.Split(f.apiVersions, ",") {
			if v = strings.TrimSpace(v); v != "" {
				s.APIVersions = append(s.APIVersions, v)
			}
		}
	}
	s = s.WithDefaults()
	return s, s.Validate()
}
