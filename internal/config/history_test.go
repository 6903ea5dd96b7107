package config

import (
	"strings"
	"testing"
	"time"
)

// TestHistoryRetention: FLEETWAVE_HISTORY_RETENTION takes days or a Go duration, 0 (the default) keeps every
// rollout, and a bad value is one problem naming the setting.
func TestHistoryRetention(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM}
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  string
	}{
		{"", 0, ""},
		{"0", 0, ""},
		{"90d", 90 * 24 * time.Hour, ""},
		{"2160h", 90 * 24 * time.Hour, ""},
		{"ninety", 0, `FLEETWAVE_HISTORY_RETENTION: "ninety": want a duration such as 90d or 2160h (0: keep forever)`},
		{"-1h", 0, `FLEETWAVE_HISTORY_RETENTION: "-1h": want`},
	} {
		c, err := LoadServe(env(with(EnvHistoryRetention, tc.in)...), "", fsys.read)
		switch {
		case tc.bad != "":
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%q: %v, want %q", tc.in, err, tc.bad)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case c.HistoryRetention != tc.want:
			t.Errorf("%q: %v, want %v", tc.in, c.HistoryRetention, tc.want)
		}
	}
}

// TestLoadCLIStore: rollout history reads the store serve writes from FLEETWAVE_STORE.
func TestLoadCLIStore(t *testing.T) {
	c, err := LoadCLI(env(EnvStore, "sqlite:///var/lib/fleetwave/fleetwave.db"))
	if err != nil || c.Store.Reveal() != "sqlite:///var/lib/fleetwave/fleetwave.db" {
		t.Errorf("%+v, %v", c, err)
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "90d": 90 * 24 * time.Hour, " 1d ": 24 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute} {
		if d, err := ParseAge(in); err != nil || d != want {
			t.Errorf("%q: %v, %v; want %v", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "d", "1.5d", "-3d", "soon"} {
		if _, err := ParseAge(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
