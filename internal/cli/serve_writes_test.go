package cli

import (
	"fmt"
	"testing"

	"github.com/fleetwave/fleetwave/internal/github/writebudget"
)

func TestWriteLimits(t *testing.T) {
	tests := []struct {
		env  string
		want string // the limits, or "error"
	}{
		{"", fmt.Sprint(writebudget.DefaultLimits)},
		{"60", fmt.Sprint(writebudget.DefaultLimits)},
		{" 30 ", "[{30 1m0s 10} {240 1h0m0s 240}]"},
		{"2", "[{2 1m0s 1} {16 1h0m0s 16}]"},
		{"0", "error"},
		{"-5", "error"},
		{"60/m", "error"},
	}
	for _, tc := range tests {
		got, err := writeLimits(tc.env)
		s := fmt.Sprint(got)
		if err != nil {
			s = "error"
		}
		if s != tc.want {
			t.Errorf("%s=%q: %s (%v); want %s", envGitHubWrites, tc.env, s, err, tc.want)
		}
	}
}
