package config

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHelp: --help lists exactly the settings the command reads, each once, within the width, in plain text.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		name string
		who  int
	}{{"serve", ForServe}, {"cli", ForCLI}} {
		t.Run(tc.name, func(t *testing.T) {
			const width = 118
			help := Help(tc.who, width)
			for _, s := range Settings {
				n := strings.Count(help, "  "+s.Name+" ") + strings.Count(help, "  "+s.Name+"\n")
				want := 0
				if s.For&tc.who != 0 {
					want = 1
				}
				if n != want {
					t.Errorf("%s is listed %d times, want %d", s.Name, n, want)
				}
			}
			for _, line := range strings.Split(help, "\n") {
				if utf8.RuneCountInString(line) > width {
					t.Errorf("line over %d characters: %q", width, line)
				}
			}
			if strings.ContainsAny(help, "`[]") {
				t.Errorf("markdown left in the help:\n%s", help)
			}
		})
	}
	if got := plainDoc("never a fork's ([security.md](security.md)); `*` for all"); got != "never a fork's (docs/security.md); * for all" {
		t.Errorf("plainDoc = %q", got)
	}
}
