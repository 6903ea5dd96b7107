package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/edge/repocreds"
	"github.com/fleetwave/fleetwave/internal/render"
)

// repositoriesUsage is the help of --repositories, shared by render, diff and plan.
const repositoriesUsage = "allowed repositories: a YAML stream of Argo CD repository and repo-creds Secrets (and argocd-tls-certs-cm for certificate authorities per host); charts of the Helm repositories and OCI registries (and native oci:// sources) and revisions of the git repositories it allows are fetched and rendered (cached under $FLEETWAVE_CACHE_DIR/charts and git, default the user cache directory)"

func registerRepositories(fl *pflag.FlagSet, file *string) {
	fl.StringVar(file, "repositories", "", repositoriesUsage)
}

// fetchers returns render options with the chart and git fetchers of --repositories (none without it: sources in
// other repositories then stay external).
func fetchers(deps *Deps, file string) (render.Options, error) {
	if file == "" {
		return render.Options{}, nil
	}
	set, err := repocreds.Load(file)
	if err != nil {
		return render.Options{}, fmt.Errorf("--repositories: %w", err)
	}
	env, err := config.LoadCLI(deps.Getenv)
	if err != nil {
		return render.Options{}, err
	}
	charts, err := newChartFetcher(set, env.CacheDir)
	if err != nil {
		return render.Options{}, err
	}
	git, err := newGitFetcher(set, env.CacheDir)
	if err != nil {
		return render.Options{}, err
	}
	return render.Options{Charts: charts, Git: git}, nil
}

// newGitFetcher builds the fetcher of the allowed git repositories, its mirrors under cacheDir/git (cacheDir as
// for newChartFetcher).
func newGitFetcher(set *repocreds.Set, cacheDir string) (*gitfetch.Fetcher, error) {
	f, err := gitfetch.New(gitfetch.Options{Repos: set, CacheDir: filepath.Join(cacheRoot(cacheDir), "git")})
	if err != nil {
		return nil, fmt.Errorf("git cache: %w", err)
	}
	return f, nil
}

// cacheRoot is cacheDir, or when empty the user's cache directory, else the temporary directory.
func cacheRoot(cacheDir string) string {
	if cacheDir != "" {
		return cacheDir
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "fleetwave")
	}
	return filepath.Join(os.TempDir(), "fleetwave-cache")
}

// chartFetcher returns the chart fetcher of --repositories, nil without it (chart sources then stay external).
func chartFetcher(deps *Deps, file string) (*chartfetch.Fetcher, error) {
	if file == "" {
		return nil, nil
	}
	set, err := repocreds.Load(file)
	if err != nil {
		return nil, fmt.Errorf("--repositories: %w", err)
	}
	env, err := config.LoadCLI(deps.Getenv)
	if err != nil {
		return nil, err
	}
	return newChartFetcher(set, env.CacheDir)
}

// newChartFetcher builds a fetcher caching under cacheDir/charts (cacheDir "" is the user's cache directory,
// else the temporary directory).
func newChartFetcher(set *repocreds.Set, cacheDir string) (*chartfetch.Fetcher, error) {
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: filepath.Join(cacheRoot(cacheDir), "charts")})
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	return f, nil
}
