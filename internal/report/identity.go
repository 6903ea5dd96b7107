package report

import (
	"slices"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
)

// Grouping modulo the app's own identity (#34). What Argo CD and the chart derive from the app itself differs
// from app to app even when the change is the same: the Helm release name (the app's name unless the source
// sets one, Argo CD's default: reposerver/repository/repository.go, helmTemplate: `Name: appName` unless helm.releaseName), so every
// `{{ .Release.Name }}-service` and `app.kubernetes.io/instance` label; the destination namespace; the cluster
// name in a generated value. Before grouping, each of these values is written as a placeholder in what an
// app's section shows (resource names and namespaces, diffs, secret keys, images, live comparison, messages):
// two apps whose changes are then the same are the same change. The placeholders whose value is the same for
// every app of a section are written back, so a section shows a placeholder only where its apps differ, and
// a section of one app shows that app's diff as it is.
//
// Nothing is hidden: an app's normalized text, with its own values put back for the placeholders, is its diff
// byte for byte (the substitution is skipped for an app whose text already holds a placeholder's mark), so two
// apps share a group only when their diffs differ by nothing but their identities.

// The placeholders, most specific first: when two identity values are equal, the first placeholder names it.
const (
	PlaceholderApp       = "‹app›"
	PlaceholderRelease   = "‹release›"
	PlaceholderNamespace = "‹namespace›"
	PlaceholderCluster   = "‹cluster›"
)

var placeholders = []string{PlaceholderApp, PlaceholderRelease, PlaceholderNamespace, PlaceholderCluster}

// placeholderMeaning is what each placeholder stands for, in the comment's legend.
var placeholderMeaning = map[string]string{
	PlaceholderApp:       "each app's name",
	PlaceholderRelease:   "its Helm release name",
	PlaceholderNamespace: "its destination namespace",
	PlaceholderCluster:   "its cluster",
}

// minIdentity is the shortest identity value substituted: shorter ones ("a", "db") match too much text for a
// placeholder to read well.
const minIdentity = 3

// substitution is one identity value of an app and its placeholder.
type substitution struct{ placeholder, value string }

// identityOf returns an app's identity values, longest first (so that a cluster name inside the app's name is
// not substituted in it), each value once; nil when the app's text cannot be normalized reversibly.
func identityOf(a *App) []substitution {
	release := a.ReleaseName
	vals := []string{a.Name, release, a.DestinationNamespace, a.cluster()}
	var subs []substitution
	for i, v := range vals {
		if len(v) < minIdentity || strings.ContainsAny(v, "‹›") || slices.ContainsFunc(subs, func(s substitution) bool { return s.value == v }) {
			continue
		}
		subs = append(subs, substitution{placeholders[i], v})
	}
	slices.SortStableFunc(subs, func(x, y substitution) int { return len(y.value) - len(x.value) })
	return subs
}

// isWord reports whether c continues a word: an identity value is substituted only where it is not part of a
// longer word ("web" in "web-service" and "ns/web", not in "webhook").
func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// normalize writes the identity values found in s as their placeholders.
func normalize(s string, subs []substitution) string {
	if len(subs) == 0 || s == "" {
		return s
	}
	found := false
	for _, sub := range subs {
		if strings.Contains(s, sub.value) {
			found = true
			break
		}
	}
	if !found {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(s); i++ {
		if i > 0 && isWord(s[i-1]) {
			continue
		}
		for _, sub := range subs {
			v := sub.value
			if s[i] != v[0] || !strings.HasPrefix(s[i:], v) {
				continue
			}
			if end := i + len(v); end < len(s) && isWord(s[end]) {
				continue
			}
			b.WriteString(s[last:i])
			b.WriteString(sub.placeholder)
			i += len(v) - 1
			last = i + 1
			break
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// restore writes the placeholders of s back as the values given.
func restore(s string, values map[string]string) string {
	if len(values) == 0 || !strings.Contains(s, "‹") {
		return s
	}
	for ph, v := range values {
		s = strings.ReplaceAll(s, ph, v)
	}
	return s
}

// mapApp returns a copy of a whose shown text (what changeDigest hashes and a section shows) went through f;
// the identity fields (name, namespaces, cluster, wave, files) are a's.
func mapApp(a *App, f func(string) string) *App {
	c := *a
	c.Error, c.Warning = f(a.Error), f(a.Warning)
	if a.Removal != nil {
		r := *a.Removal
		r.Detail = f(r.Detail)
		c.Removal = &r
	}
	c.Resources = mapResources(a.Resources, f)
	c.Hooks = mapResources(a.Hooks, f)
	if l := a.Live; l != nil {
		m := *l
		m.Error = f(l.Error)
		m.Drift = mapStrings(l.Drift, f)
		m.Extraneous = mapStrings(l.Extraneous, f)
		m.IgnoredExtraneous = mapStrings(l.IgnoredExtraneous, f)
		m.Notes = mapStrings(l.Notes, f)
		m.LiveDiff = mapResources(l.LiveDiff, f)
		if l.DriftSecretKeys != nil {
			m.DriftSecretKeys = make(map[string][]string, len(l.DriftSecretKeys))
			for k, v := range l.DriftSecretKeys {
				m.DriftSecretKeys[f(k)] = v
			}
		}
		c.Live = &m
	}
	return &c
}

func mapStrings(ss []string, f func(string) string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func mapResources(rs []diff.Resource, f func(string) string) []diff.Resource {
	if rs == nil {
		return nil
	}
	out := make([]diff.Resource, len(rs))
	for i, r := range rs {
		r.Namespace, r.Name, r.Diff = f(r.Namespace), f(r.Name), f(r.Diff)
		if r.SecretKeys != nil {
			sk := make([]diff.SecretKey, len(r.SecretKeys))
			for j, k := range r.SecretKeys {
				k.Key = f(k.Key)
				sk[j] = k
			}
			r.SecretKeys = sk
		}
		if r.Images != nil {
			im := make([]diff.ImageChange, len(r.Images))
			for j, c := range r.Images {
				c.Container, c.From, c.To = f(c.Container), f(c.From), f(c.To)
				im[j] = c
			}
			r.Images = im
		}
		out[i] = r
	}
	return out
}

// hasMark reports whether any text of a holds a placeholder's mark: its normalization would not be reversible.
func hasMark(a *App) bool {
	marked := false
	mapApp(a, func(s string) string {
		marked = marked || strings.ContainsAny(s, "‹›")
		return s
	})
	return marked
}

// normalized is a's shown text with its identity values as placeholders, and its identity; a itself (and no
// identity) when there is nothing to substitute.
func normalized(a *App) (*App, []substitution) {
	subs := identityOf(a)
	if len(subs) == 0 || hasMark(a) {
		return a, nil
	}
	return mapApp(a, func(s string) string { return normalize(s, subs) }), subs
}

// placeholdersIn returns the placeholders a's shown text holds, in placeholders' order.
func placeholdersIn(a *App) []string {
	var in []string
	mapApp(a, func(s string) string {
		if strings.Contains(s, "‹") {
			for _, ph := range placeholders {
				if !slices.Contains(in, ph) && strings.Contains(s, ph) {
					in = append(in, ph)
				}
			}
		}
		return s
	})
	slices.SortFunc(in, func(x, y string) int { return slices.Index(placeholders, x) - slices.Index(placeholders, y) })
	return in
}

// legend says what the placeholders a section shows stand for ("" when it shows none).
func legend(sec []*Group) string {
	var used []string
	for _, g := range sec {
		for _, ph := range g.Placeholders {
			if !slices.Contains(used, ph) {
				used = append(used, ph)
			}
		}
	}
	return legendOf(used)
}

// legendOf says what the placeholders used stand for ("" for none).
func legendOf(used []string) string {
	if len(used) == 0 {
		return ""
	}
	slices.SortFunc(used, func(x, y string) int { return slices.Index(placeholders, x) - slices.Index(placeholders, y) })
	parts := make([]string, len(used))
	for i, ph := range used {
		parts[i] = "`" + ph + "` " + placeholderMeaning[ph]
	}
	return "Placeholders stand for what differs by the app's own identity: " + strings.Join(parts, ", ") + "."
}
