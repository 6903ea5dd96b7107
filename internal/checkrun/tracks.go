package checkrun

import (
	"fmt"
	"strings"

	"github.com/fleetwave/fleetwave/internal/rollout"
)

// trackLine says which tracks of the release policy the wave's apps took and why (the class and resource that
// put a track's first app there): "**Track:** `careful` (the policy's waves, each after an approval), because of
// `crd` in …". Empty when the policy has no tracks.
func trackLine(s rollout.Snapshot, wi int) string {
	if wi >= len(s.Plan.Waves) || len(s.Plan.Waves[wi].Tracks) == 0 {
		return ""
	}
	var parts []string
	for _, name := range s.Plan.Waves[wi].Tracks {
		part := "`" + name + "`"
		for _, u := range s.Plan.Tracks {
			if u.Name != name {
				continue
			}
			part += " (" + u.Describe + ")"
			if r := u.Why; r != nil {
				part += fmt.Sprintf(", because of `%s`", r.Class)
				if where := strings.Trim(r.Resource+": "+r.Detail, ": "); where != "" {
					part += " in " + mdCell(where, 200)
				}
			}
		}
		parts = append(parts, part)
	}
	label := "Track"
	if len(parts) > 1 {
		label = "Tracks (the strictest holds the wave)"
	}
	return fmt.Sprintf("**%s:** %s\n\n", label, strings.Join(parts, "; "))
}
