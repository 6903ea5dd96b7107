package app

import "testing"

func TestExternalIDRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		number int
		digest string
	}{{2, ""}, {7, "abc123"}} {
		n, d, ok := parseExternalID(externalID(tt.number, tt.digest))
		if !ok || n != tt.number || d != tt.digest {
			t.Errorf("round trip of (%d, %q) = (%d, %q, %v)", tt.number, tt.digest, n, d, ok)
		}
	}
	for _, s := range []string{"", "fleetwave:12", "fleetwave:12:wave:canary", "fleetwave-pr:", "fleetwave-pr:x", "fleetwave-pr:-1"} {
		if _, _, ok := parseExternalID(s); ok {
			t.Errorf("parseExternalID(%q) accepted", s)
		}
	}
}
