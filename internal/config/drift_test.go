package config

import (
	"strings"
	"testing"
	"time"
)

// TestLoadServeDrift: FLEETWAVE_DRIFT_AFTER turns the drift alerts on (0 or unset: off), and
// FLEETWAVE_DRIFT_REPORT_REPO names where they are reported, only with a threshold.
func TestLoadServeDrift(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM}
	for _, tc := range []struct {
		name      string
		env       []string
		after     time.Duration
		repo      string
		problem   string
		printsAny string
	}{
		{name: "unset: off"},
		{name: "zero: off", env: []string{EnvDriftAfter, "0"}},
		{name: "a threshold", env: []string{EnvDriftAfter, "30m"}, after: 30 * time.Minute, printsAny: "drift-after=30m0s"},
		{name: "reports", env: []string{EnvDriftAfter, "2h", EnvDriftReportRepo, " acme/fleet-ops "}, after: 2 * time.Hour,
			repo: "acme/fleet-ops", printsAny: "drift-reports=acme/fleet-ops"},
		{name: "not a duration", env: []string{EnvDriftAfter, "30"}, problem: `FLEETWAVE_DRIFT_AFTER: "30" is not a duration`},
		{name: "too short", env: []string{EnvDriftAfter, "10s"}, problem: "FLEETWAVE_DRIFT_AFTER: 10s is shorter than a minute"},
		{name: "negative", env: []string{EnvDriftAfter, "-5m"}, problem: "FLEETWAVE_DRIFT_AFTER: -5m0s is shorter than a minute"},
		{name: "reports without a threshold", env: []string{EnvDriftReportRepo, "acme/ops"}, problem: "FLEETWAVE_DRIFT_REPORT_REPO: set, but FLEETWAVE_DRIFT_AFTER is not"},
		{name: "not a repository", env: []string{EnvDriftAfter, "1h", EnvDriftReportRepo, "https://github.com/acme/ops"}, problem: `"https://github.com/acme/ops" is not a repository owner/name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadServe(env(with(tc.env...)...), "", fsys.read)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("error %v; want one saying %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.DriftAfter != tc.after || c.DriftReportRepo != tc.repo {
				t.Errorf("DriftAfter %v, DriftReportRepo %q; want %v, %q", c.DriftAfter, c.DriftReportRepo, tc.after, tc.repo)
			}
			if tc.printsAny != "" && !strings.Contains(c.String(), tc.printsAny) {
				t.Errorf("%s does not say %s", c, tc.printsAny)
			}
		})
	}
}
