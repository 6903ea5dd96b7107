package cli

import (
	"fmt"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/github/writebudget"
)

// TestWriteLimits: FLEETWAVE_GITHUB_WRITES_PER_MINUTE (read and checked by internal/config) as the budget's limits.
func TestWriteLimits(t *testing.T) {
	tests := []struct {
		perMinute int
		want      string
	}{
		{0, fmt.Sprint(writebudget.DefaultLimits)},
		{60, fmt.Sprint(writebudget.DefaultLimits)},
		{30, "[{30 1m0s 10} {240 1h0m0s 240}]"},
		{2, "[{2 1m0s 1} {16 1h0m0s 16}]"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(writeLimits(tc.perMinute)); got != tc.want {
			t.Errorf("writeLimits(%d) = %s; want %s", tc.perMinute, got, tc.want)
		}
	}
}
