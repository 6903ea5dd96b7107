package app

import (
	"context"
	"strings"
	"testing"
)

// TestReadPolicyRefusesANonCommit: a revision that is not a full commit SHA is an error, never the default
// policy standing in for the gates and command rules the repository may have.
func TestReadPolicyRefusesANonCommit(t *testing.T) {
	a := &App{}
	for _, rev := range []string{"", "main", "abc1234", strings.Repeat("g", 40)} {
		p, err := a.readPolicy(context.Background(), t.TempDir(), rev)
		if err == nil || p != nil {
			t.Errorf("readPolicy(%q) = %v, %v; want an error", rev, p, err)
		}
	}
}
