package report

import (
	"regexp"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
)

// chartLabelLine matches a changed line that sets the helm.sh/chart label: every chart version bump changes it
// on every object of the chart, burying the change that matters.
var chartLabelLine = regexp.MustCompile(`^[+-]\s*helm\.sh/chart: `)

// foldChartLabels drops the hunks of a unified diff whose changed lines all set the helm.sh/chart label. It
// returns the rest ("" when no hunk is left) and how many hunks it dropped.
func foldChartLabels(d string) (string, int) {
	header, hunks := splitHunks(d)
	if len(hunks) == 0 {
		return d, 0
	}
	var b strings.Builder
	folded := 0
	for _, h := range hunks {
		if onlyChartLabels(h) {
			folded++
			continue
		}
		b.WriteString(h)
	}
	if folded == 0 {
		return d, 0
	}
	if b.Len() == 0 {
		return "", folded
	}
	return header + b.String(), folded
}

func onlyChartLabels(hunk string) bool {
	changed := false
	for _, line := range strings.Split(hunk, "\n")[1:] { // the first line is the @@ header
		if strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-") {
			if !chartLabelLine.MatchString(line) {
				return false
			}
			changed = true
		}
	}
	return changed
}

// foldResources returns copies of rs with chart-label hunks folded when on, and how many hunks were folded.
func foldResources(rs []diff.Resource, on bool) ([]diff.Resource, int) {
	if !on {
		return rs, 0
	}
	out := make([]diff.Resource, len(rs))
	total := 0
	for i, r := range rs {
		d, n := foldChartLabels(r.Diff)
		r.Diff = d
		out[i] = r
		total += n
	}
	return out, total
}
