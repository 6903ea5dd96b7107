package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/kit/markdown"
)

// Group is a set of apps whose change is the same, byte for byte once the app's own identity is left out:
// the same resources changed the same way, the same hooks, the same live comparison. A fleet-wide change to one
// shared value is one group of hundreds of apps, shown once.
type Group struct {
	// ID numbers the groups in rollout order, from 1; the comment refers to groups by it.
	ID int `json:"id"`
	// Label names what the group deploys: the apps' common kind ("api"), or up to three kinds.
	Label  string `json:"label"`
	Status Status `json:"status"`
	// Apps are the apps' keys ("namespace/name"), in rollout order (wave, batch, then key).
	Apps []string `json:"apps"`
	// Clusters are the apps' destination clusters, in the same order, each once.
	Clusters []string `json:"clusters"`
	// Waves are the names of the waves the apps are planned in, in plan order.
	Waves []string `json:"waves,omitempty"`
	// Counts are one app's resource changes (every app of the group has the same).
	Counts diff.Summary `json:"counts"`
	// Digest identifies the change (SHA-256 of what the apps have in common), stable across runs.
	Digest string `json:"digest"`
	// Section is the number (#N) of the comment section that shows the group. Groups of the same kind of app
	// that change the same resources the same way except for some hunks (cluster-specific values) share a
	// section, which shows the common diffs once and each variant's own.
	Section int `json:"section"`
	// Placeholders are the parts of the apps' own identity that the section shows as placeholders because
	// they differ between its apps ("‹app›": each app's name, "‹release›", "‹namespace›", "‹cluster›"); each
	// app's change is the shown one with its own values put back (identity.go).
	Placeholders []string `json:"placeholders,omitempty"`

	members []*App // the apps, in the order of Apps
	// view is what the group's section shows of its change: its first app's, with the identity values that
	// differ between the section's apps written as placeholders (the first app itself when none do).
	view *App
	// own are the identity values the same for every app of the group but not of its section: a variant's own
	// hunks are shown with them written back.
	own map[string]string
}

// first is the group's representative app, as its section shows it (its diff is every member's diff, with
// each member's identity in the placeholders).
func (g *Group) first() *App {
	if g.view != nil {
		return g.view
	}
	return g.members[0]
}

// grouped reports whether an app takes part in the grouped sections: it is shown and not a failure (failures
// are listed apart, one line each).
func grouped(a *App) bool { return shown(a) && a.Status != StatusError }

// groups groups the shown apps by identical change modulo their own identity (identity.go) and orders groups
// and their apps by rollout order: wave, then batch (unplanned apps last), then app key.
func (r *Report) groups() []Group {
	byDigest := map[string]*Group{}
	var order []*Group
	norms := map[*App]normal{}
	for i := range r.Apps {
		a := &r.Apps[i]
		if !grouped(a) {
			continue
		}
		n, subs := normalized(a)
		norms[a] = normal{n, subs}
		d := changeDigest(n)
		g, ok := byDigest[d]
		if !ok {
			g = &Group{Status: a.Status, Counts: a.Counts, Digest: d}
			byDigest[d] = g
			order = append(order, g)
		}
		g.members = append(g.members, a)
	}
	for _, g := range order {
		slices.SortStableFunc(g.members, compareRollout)
		g.view = norms[g.members[0]].app // the section's family compares normalized changes
	}
	sort.SliceStable(order, func(i, j int) bool { return compareRollout(order[i].first(), order[j].first()) < 0 })
	out := make([]Group, len(order))
	for i, g := range order {
		g.ID = i + 1
		kinds := map[string]bool{}
		var kindOrder []string
		seenCluster := map[string]bool{}
		seenWave := map[string]bool{}
		for _, a := range g.members {
			g.Apps = append(g.Apps, a.Key())
			if k := a.kind(); !kinds[k] {
				kinds[k] = true
				kindOrder = append(kindOrder, k)
			}
			if c := a.cluster(); !seenCluster[c] {
				seenCluster[c] = true
				g.Clusters = append(g.Clusters, c)
			}
			if a.Wave != "" && !seenWave[a.Wave] {
				seenWave[a.Wave] = true
				g.Waves = append(g.Waves, a.Wave)
			}
		}
		g.Label = strings.Join(kindOrder[:min(3, len(kindOrder))], ", ")
		if len(kindOrder) > 3 {
			g.Label += fmt.Sprintf(" +%d", len(kindOrder)-3)
		}
		out[i] = *g
	}
	assignSections(out)
	for _, sec := range sections(out) {
		setViews(sec, norms)
	}
	return out
}

// normal is an app's normalized change and identity.
type normal struct {
	app  *App
	subs []substitution
}

// setViews sets what a section shows of each of its groups: the placeholders whose value is the same for every
// app of the section are written back, the others stay (and are the groups' Placeholders). A section of one
// app shows it as it is.
func setViews(sec []*Group, norms map[*App]normal) {
	apps := 0
	for _, g := range sec {
		apps += len(g.members)
	}
	if apps == 1 {
		sec[0].view = nil
		return
	}
	var all []*App
	for _, g := range sec {
		all = append(all, g.members...)
	}
	values := constants(all, norms)
	for _, g := range sec {
		n := norms[g.members[0]]
		if len(n.subs) == 0 {
			g.view = nil
			continue
		}
		g.view = mapApp(n.app, func(s string) string { return restore(s, values) })
		g.Placeholders = placeholdersIn(g.view)
		if len(sec) > 1 && len(g.Placeholders) > 0 {
			g.own = constants(g.members, norms)
		}
	}
}

// constants are the identity values the same for every one of apps.
func constants(apps []*App, norms map[*App]normal) map[string]string {
	values := map[string]string{}
	varies := map[string]bool{}
	for _, m := range apps {
		for _, s := range norms[m].subs {
			if v, ok := values[s.placeholder]; ok && v != s.value {
				varies[s.placeholder] = true
			}
			values[s.placeholder] = s.value
		}
	}
	for ph := range varies {
		delete(values, ph)
	}
	return values
}

// family is the section key of a group: what it deploys and the shape of its change (which resources and hooks
// change how), not the hunks themselves.
func family(g *Group) string {
	a := g.first()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%s\x00%v", g.Label, g.Status, a.Error, a.Warning, a.RenderedBy, a.Live != nil)
	if a.Removal != nil {
		b.WriteString("\x00" + a.Removal.Effect + a.Removal.By)
	}
	for _, r := range a.Resources {
		fmt.Fprintf(&b, "\x00r:%s:%s", r.Key, r.Change)
	}
	for _, h := range a.Hooks {
		fmt.Fprintf(&b, "\x00h:%s:%s", h.Key, h.Change)
	}
	return b.String()
}

// assignSections numbers sections in rollout order: a group joins the section of an earlier group of its family.
func assignSections(groups []Group) {
	sections := map[string]int{}
	n := 0
	for i := range groups {
		f := family(&groups[i])
		if s, ok := sections[f]; ok {
			groups[i].Section = s
			continue
		}
		n++
		sections[f] = n
		groups[i].Section = n
	}
}

// sections gathers the groups by section, in section order.
func sections(groups []Group) [][]*Group {
	var out [][]*Group
	for i := range groups {
		g := &groups[i]
		if g.Section > len(out) {
			out = append(out, nil)
		}
		out[g.Section-1] = append(out[g.Section-1], g)
	}
	return out
}

// compareRollout orders apps by wave, then batch (unplanned last), then key.
func compareRollout(a, b *App) int {
	wa, wb := a.WaveIndex, b.WaveIndex
	if wa == 0 {
		wa = int(^uint(0) >> 1)
	}
	if wb == 0 {
		wb = int(^uint(0) >> 1)
	}
	if wa != wb {
		return wa - wb
	}
	if a.Batch != b.Batch {
		return a.Batch - b.Batch
	}
	return strings.Compare(a.Key(), b.Key())
}

func (a *App) kind() string {
	if a.Kind != "" {
		return a.Kind
	}
	return a.Name
}

// cluster names the app's destination cluster, with its Argo CD instance when it has one ("eu/in-cluster": two
// instances may both call a cluster in-cluster), as the plan names clusters; alone in a fleet of one Argo CD.
func (a *App) cluster() string {
	c := a.Cluster
	if c == "" {
		c = a.Server
	}
	if a.Instance != "" {
		return a.Instance + "/" + c
	}
	return c
}

// changeDigest hashes everything an app's section shows except the app's identity (name, cluster, wave,
// files): two apps with the same digest render the same section body. Grouping hashes the normalized app
// (identity.go), so that the identity in the text is left out too.
func changeDigest(a *App) string {
	h := sha256.New()
	field := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s", len(p), p)
		}
		h.Write([]byte{0})
	}
	field("status", string(a.Status), a.Error, a.Warning, a.RenderedBy)
	if a.Removal != nil {
		field("removal", a.Removal.Effect, a.Removal.By, a.Removal.Detail)
	}
	writeResources(field, "resource", a.Resources)
	writeResources(field, "hook", a.Hooks)
	if l := a.Live; l != nil {
		field("live", fmt.Sprint(l.Missing), l.Error, fmt.Sprint(l.Compared))
		field(append([]string{"drift"}, l.Drift...)...)
		field(append([]string{"notes"}, l.Notes...)...)
		writeResources(field, "livediff", l.LiveDiff)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeResources(field func(...string), what string, rs []diff.Resource) {
	for _, r := range rs {
		field(what, r.Key.String(), string(r.Change), r.Diff, strings.Join(r.HookTypes, ","))
		for _, k := range r.SecretKeys {
			field("secret", k.Key, k.Change)
		}
	}
}

// markdown is the comment's last section.
func (f *Footer) markdown() string {
	var b strings.Builder
	b.WriteString("\n---\n\n")
	if f.PolicyInvalid {
		b.WriteString("**After merge**, fleetwave rolls out only the plan of a valid release policy; once it is fixed, comment on this PR to steer the rollout:")
		for i, c := range f.Commands {
			if i > 0 {
				b.WriteString(" ·")
			}
			fmt.Fprintf(&b, " `/%s`", mdEscapeCode(c.Command))
		}
		b.WriteString(" (the policy says who may).\n\n")
	} else if len(f.Commands) > 0 {
		b.WriteString("**After merge**, fleetwave rolls this plan out; comment on this PR to steer it:")
		for i, c := range f.Commands {
			if i > 0 {
				b.WriteString(" ·")
			}
			fmt.Fprintf(&b, " `/%s` (%s)", mdEscapeCode(c.Command), markdown.Escape(c.Who))
		}
		b.WriteString(".\n\n")
	}
	switch {
	case f.PolicyInvalid && f.PolicyURL != "" && f.PolicyFile != "":
		fmt.Fprintf(&b, "Release policy: [`%s`](%s), **invalid** (its errors are above): no plan was made.", mdEscapeCode(f.PolicyFile), f.PolicyURL)
	case f.PolicyInvalid:
		fmt.Fprintf(&b, "Release policy: `%s`, **invalid** (its errors are above): no plan was made.", mdEscapeCode(f.PolicyFile))
	case f.PolicyURL != "" && f.PolicyFile != "":
		fmt.Fprintf(&b, "Release policy: [`%s`](%s).", mdEscapeCode(f.PolicyFile), f.PolicyURL)
	case f.PolicyFile != "":
		fmt.Fprintf(&b, "Release policy: `%s`.", mdEscapeCode(f.PolicyFile))
	default:
		b.WriteString("Release policy: fleetwave's default (no `.fleetwave.yaml`).")
	}
	if f.Reproduce != "" {
		fmt.Fprintf(&b, " Reproduce locally: `%s`", mdEscapeCode(f.Reproduce))
	}
	b.WriteString("\n")
	return b.String()
}
