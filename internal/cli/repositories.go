package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/fleetwave/fleetwave/internal/chartfetch"
	"github.com/fleetwave/fleetwave/internal/repocreds"
)

// repositoriesUsage is the help of --repositories, shared by render, diff and plan.
const repositoriesUsage = "allowed chart repositories: a YAML stream of Argo CD repository and repo-creds Secrets; charts of Helm repositories it allows are fetched and rendered (cached under $FLEETWAVE_CACHE_DIR/charts, default the user cache directory)"

func registerRepositories(fl *pflag.FlagSet, file *string) {
	fl.StringVar(file, "repositories", "", repositoriesUsage)
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
	dir := ""
	if deps != nil && deps.Getenv != nil {
		dir = deps.Getenv("FLEETWAVE_CACHE_DIR")
	}
	return newChartFetcher(set, dir)
}

// newChartFetcher builds a fetcher caching under cacheDir/charts (cacheDir "" is the user's cache directory,
// else the temporary directory).
func newChartFetcher(set *repocreds.Set, cacheDir string) (*chartfetch.Fetcher, error) {
	if cacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			cacheDir = filepath.Join(d, "fleetwave")
		} else {
			cacheDir = filepath.Join(os.TempDir(), "fleetwave-cache")
		}
	}
	f, err := chartfetch.New(chartfetch.Options{Repos: set, CacheDir: filepath.Join(cacheDir, "charts")})
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	return f, nil
}
