package kustomize

import (
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/fleetwave/fleetwave/internal/render/helm/chartdir"
)

// loadChartDir loads the chart in the repository directory dir the way helm's loader.LoadDir does
// (chartdir.Read, the reader of Argo CD's Helm sources too), then parses it (loader.LoadFiles). Every read goes
// through the view, so the walk cannot leave the checkout and every file is recorded.
func loadChartDir(repo *view, dir string) (*chart.Chart, error) {
	files, err := chartdir.Read(repo, dir, chartdir.DefaultLimits)
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(files)
}
