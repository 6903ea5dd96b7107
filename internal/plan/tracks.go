package plan

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
	"github.com/fleetwave/fleetwave/internal/kit/markdown"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// Track is a way through the fleet chosen by what a change is (its risk classes, internal/diff/risk): the
// policy's waves as written, the same waves each held for an approval before it starts, or one wave for every
// app with no soak, gates or approval.
type Track struct {
	Name string
	// Classes are the risk classes that put an app on the track.
	Classes []string
	// OneWave: the track's apps roll out together in one wave of the track's name, first, with no soak, metric
	// gate or approval (for changes such as metadata only).
	OneWave bool
	// ApproveEveryWave: every wave holding an app of the track waits for an approval before it starts.
	ApproveEveryWave bool
	// Line is where the track starts in the policy file.
	Line int
}

// StandardTrack names the policy's waves as written: the track of an app none of whose classes a track names.
const StandardTrack = "standard"

// strictness orders tracks: approvals before every wave, then the policy's waves, then one wave.
func (t *Track) strictness() int {
	switch {
	case t == nil:
		return 1
	case t.ApproveEveryWave:
		return 2
	case t.OneWave:
		return 0
	}
	return 1
}

// Describe is what the track does, in a few words.
func (t *Track) Describe() string {
	switch {
	case t == nil:
		return "the policy's waves"
	case t.ApproveEveryWave:
		return "the policy's waves, each after an approval"
	case t.OneWave:
		return "one wave, no soak"
	}
	return "the policy's waves"
}

// Risk is one risk class of an app's change and where it comes from, for the plan to say why a track was
// chosen.
type Risk struct {
	Class string `json:"class"`
	// Resource is the resource whose change carries the class ("apps/Deployment shop/web"); Detail says how
	// ("api: ghcr.io/acme/api:1.2.0 → 1.3.0").
	Resource string `json:"resource,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

func (r Risk) String() string {
	s := "`" + r.Class + "`"
	if r.Resource != "" {
		s += " " + r.Resource
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// TrackUse says which apps of a plan took a track and why (the class and resource of its first app that put
// it there).
type TrackUse struct {
	Name     string `json:"name"`
	Describe string `json:"describe"`
	Apps     int    `json:"apps"`
	Why      *Risk  `json:"why,omitempty"`
}

// trackOf picks an app's track: of the tracks its classes name (a class no track names counts as the standard
// track), the strictest; between equally strict ones the first listed, the standard track after the listed
// ones. It returns the track's index (-1: standard) and the risk that decided it (nil when the app has no class
// a track names).
func (p *Policy) trackOf(a *App) (int, *Risk) {
	if len(p.Tracks) == 0 {
		return -1, nil
	}
	best, bestStrict := -1, -1
	var why *Risk
	for i := range a.Risks {
		r := &a.Risks[i]
		ti := slices.IndexFunc(p.Tracks, func(t Track) bool { return slices.Contains(t.Classes, r.Class) })
		var t *Track
		if ti >= 0 {
			t = &p.Tracks[ti]
		}
		s := t.strictness()
		if s > bestStrict || s == bestStrict && ti >= 0 && (best < 0 || ti < best) {
			best, bestStrict, why = ti, s, r
		}
	}
	if best < 0 && bestStrict < 0 {
		return -1, nil // no class at all: the policy's waves
	}
	return best, why
}

// trackName is the name of track index ti.
func (p *Policy) trackName(ti int) string {
	if ti < 0 {
		return StandardTrack
	}
	return p.Tracks[ti].Name
}

// tracks parses the policy's tracks: a list of {name, classes, oneWave, approveEveryWave}.
func (ps *parser) tracks(n *yaml.Node, p *Policy) {
	items, ok := ps.list(n, "tracks")
	if !ok {
		return
	}
	classOf := map[string]string{} // class → the track that names it
	names := map[string]int{}
	for i, it := range items {
		it = ps.resolve(it)
		t := Track{Line: it.Line}
		what := fmt.Sprintf("track %d", i+1)
		var oneWaveKey *yaml.Node
		ok := ps.fields(it, what, []string{"approveEveryWave", "classes", "name", "oneWave"}, func(f field) {
			switch f.name {
			case "name":
				if v, ok := ps.str(f.val, what+" name"); ok {
					if !validWaveName(v) {
						ps.errAt(ps.resolve(f.val), "use letters, digits, '.', '_' and '-'", "%s: invalid name %q", what, v)
					}
					t.Name = v
				}
			case "classes":
				cs, ok := ps.stringList(f.val, what+" classes")
				if !ok {
					return
				}
				for j, c := range cs {
					node := ps.resolve(f.val).Content[j]
					switch {
					case !risk.Known(c):
						ps.errAt(node, "classes are "+classList(), "%s: unknown class %q", what, c)
					case classOf[c] != "":
						ps.errAt(node, "a class takes one track; the strictest of an app's classes' tracks wins",
							"%s: class %q is already on track %q", what, c, classOf[c])
					default:
						classOf[c] = cmpOr(t.Name, what)
						t.Classes = append(t.Classes, c)
					}
				}
				if len(cs) == 0 {
					ps.errAt(ps.resolve(f.val), "name the risk classes that take this track", "%s: classes is empty", what)
				}
			case "oneWave":
				oneWaveKey = f.key
				t.OneWave, _ = ps.boolean(f.val, what+" oneWave")
			case "approveEveryWave":
				t.ApproveEveryWave, _ = ps.boolean(f.val, what+" approveEveryWave")
			}
		})
		if !ok {
			continue
		}
		if t.Name == "" {
			ps.errAt(it, "give the track a name: it names the wave of a oneWave track and says why in the plan", "%s has no name", what)
			continue
		}
		if t.Name == StandardTrack {
			ps.errAt(it, "the standard track is the policy's waves as written; name this track otherwise", "%s: the name %q is reserved", what, t.Name)
		}
		if first, dup := names[strings.ToLower(t.Name)]; dup {
			ps.errAt(it, fmt.Sprintf("first defined at line %d; track names must be unique", first), "duplicate track name %q", t.Name)
			continue
		}
		names[strings.ToLower(t.Name)] = t.Line
		if t.OneWave && t.ApproveEveryWave {
			ps.errAt(oneWaveKey, "a oneWave track has no approval; use one of the two", "%s: oneWave and approveEveryWave exclude each other", what)
		}
		if len(t.Classes) == 0 {
			continue
		}
		p.Tracks = append(p.Tracks, t)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func classList() string {
	s := make([]string, len(risk.Classes))
	for i, c := range risk.Classes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// applyTracks names the tracks of a wave's apps and holds the wave for an approval before it starts when one of
// them takes an approveEveryWave track (the strictest track wins for the whole wave: its apps sync together).
func (b *builder) applyTracks(w *WavePolicy, wave *Wave, members []int) {
	p := b.policy
	if len(p.Tracks) == 0 {
		return
	}
	approve := false
	for _, ai := range members {
		name := p.trackName(b.track[ai])
		if !slices.Contains(wave.Tracks, name) {
			wave.Tracks = append(wave.Tracks, name)
		}
		if ti := b.track[ai]; ti >= 0 && p.Tracks[ti].ApproveEveryWave {
			approve = true
		}
	}
	slices.Sort(wave.Tracks)
	if approve && !wave.Gates.Approval.Before() {
		approval := w.Approval
		approval.Required, approval.When = true, ApprovalBefore
		approval.Approvers = p.Approvers(w)
		wave.Gates.Approval = &approval
	}
}

// trackUses count the planned apps per track, in the policy's order of tracks then the standard track, each
// with the risk that put its first app there.
func (b *builder) trackUses() []TrackUse {
	p := b.policy
	if len(p.Tracks) == 0 {
		return nil
	}
	uses := make([]TrackUse, len(p.Tracks)+1)
	for ai := range b.apps {
		if b.wave[ai] < 0 {
			continue
		}
		ti := b.track[ai]
		u := &uses[len(p.Tracks)]
		if ti >= 0 {
			u = &uses[ti]
		}
		u.Apps++
		if u.Why == nil {
			u.Why = b.why[ai]
		}
	}
	var out []TrackUse
	for ti, u := range uses {
		if u.Apps == 0 {
			continue
		}
		var t *Track
		if ti < len(p.Tracks) {
			t = &p.Tracks[ti]
		}
		idx := ti
		if t == nil {
			idx = -1
		}
		u.Name, u.Describe = p.trackName(idx), t.Describe()
		out = append(out, u)
	}
	return out
}

// trackLines say which track the apps took and why: "`careful` (the policy's waves, each after an approval)
// for 2 apps, because of `crd` apiextensions.k8s.io/CustomResourceDefinition widgets.acme.io: spec.versions".
func (p *Plan) trackLines(md bool) []string {
	out := make([]string, 0, len(p.Tracks))
	for _, u := range p.Tracks {
		var s string
		if md {
			s = fmt.Sprintf("`%s` (%s) for %s", u.Name, u.Describe, text.Plural(u.Apps, "app"))
		} else {
			s = fmt.Sprintf("%s (%s): %s", u.Name, u.Describe, text.Plural(u.Apps, "app"))
		}
		if r := u.Why; r != nil {
			where := strings.TrimPrefix(strings.TrimSuffix(r.Resource+": "+r.Detail, ": "), ": ")
			if md {
				s += fmt.Sprintf(", because of `%s`", r.Class)
				if where != "" {
					s += " in " + markdown.EscapeLine(where)
				}
			} else {
				s += ", because of " + r.Class
				if where != "" {
					s += " in " + where
				}
			}
		}
		out = append(out, s)
	}
	return out
}
