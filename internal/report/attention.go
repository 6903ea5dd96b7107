package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetwave/fleetwave/internal/diff"
	"github.com/fleetwave/fleetwave/internal/kit/markdown"
	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// maxAttentionItems bounds each headline's list; the rest is counted.
const maxAttentionItems = 10

// headline is one kind of change that deserves a reviewer's attention, aggregated over the fleet: each item is
// one distinct change with the apps (and groups) it occurs in.
type headline struct {
	icon, title string
	items       []*attentionItem
	index       map[string]*attentionItem
}

type attentionItem struct {
	text   string // Markdown, escaped
	plain  string // the same for a terminal
	apps   int
	groups []int
}

func (h *headline) add(key, text, plain string, g *Group) {
	if h.index == nil {
		h.index = map[string]*attentionItem{}
	}
	it, ok := h.index[key]
	if !ok {
		it = &attentionItem{text: text, plain: plain}
		h.index[key] = it
		h.items = append(h.items, it)
	}
	it.apps += len(g.members)
	if !slices.Contains(it.groups, g.Section) {
		it.groups = append(it.groups, g.Section)
	}
}

// attention collects, in a fixed order, what a reviewer must not miss: Secret keys that change, deletions
// (resources and whole apps), CRDs, Namespaces and container images.
func attention(groups []Group) []*headline {
	secrets := &headline{icon: "🔒", title: "Secret keys change (values are never shown)"}
	deletions := &headline{icon: "🗑️", title: "Deletions"}
	crds := &headline{icon: "🧩", title: "CustomResourceDefinitions change"}
	namespaces := &headline{icon: "📁", title: "Namespaces change"}
	images := &headline{icon: "📦", title: "Images change"}
	for i := range groups {
		g := &groups[i]
		a := g.first()
		if a.Status == StatusRemoved {
			detail := "its resources are deleted with it"
			if a.Removal != nil {
				detail = a.Removal.Detail
			}
			for _, m := range g.members {
				deletions.add("app "+m.Key(), fmt.Sprintf("Application `%s` is removed: %s", m.Key(), markdown.Escape(detail)),
					fmt.Sprintf("Application %s is removed: %s", m.Key(), detail), &Group{Section: g.Section, members: []*App{m}})
			}
		}
		for _, r := range a.Resources {
			k := r.Key.String()
			for _, sk := range r.SecretKeys {
				secrets.add(k+"\x00"+sk.Key+"\x00"+sk.Change, fmt.Sprintf("`%s` `%s` %s", mdEscapeCode(k), mdEscapeCode(sk.Key), sk.Change),
					fmt.Sprintf("%s %s %s", k, sk.Key, sk.Change), g)
			}
			if r.Change == diff.Removed && a.Status != StatusRemoved {
				deletions.add("res "+k, fmt.Sprintf("`%s` is deleted", mdEscapeCode(k)), k+" is deleted", g)
			}
			if r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition" {
				crds.add(k+string(r.Change), fmt.Sprintf("`%s` %s", mdEscapeCode(r.Name), r.Change), r.Name+" "+string(r.Change), g)
			}
			if r.Group == "" && r.Kind == "Namespace" {
				namespaces.add(k+string(r.Change), fmt.Sprintf("`%s` %s", mdEscapeCode(r.Name), r.Change), r.Name+" "+string(r.Change), g)
			}
			for _, im := range r.Images {
				from, to := im.From, im.To
				if from == "" {
					from = "(new container)"
				}
				if to == "" {
					to = "(container removed)"
				}
				images.add(im.Container+"\x00"+im.From+"\x00"+im.To,
					fmt.Sprintf("`%s`: `%s` → `%s`", mdEscapeCode(im.Container), mdEscapeCode(from), mdEscapeCode(to)),
					fmt.Sprintf("%s: %s → %s", im.Container, from, to), g)
			}
		}
	}
	var out []*headline
	for _, h := range []*headline{secrets, deletions, crds, namespaces, images} {
		if len(h.items) > 0 {
			out = append(out, h)
		}
	}
	return out
}

// where says how many apps and which groups an item occurs in.
func (it *attentionItem) where() string {
	refs := make([]string, 0, len(it.groups))
	for i, id := range it.groups {
		if i == 5 {
			refs = append(refs, "…")
			break
		}
		refs = append(refs, fmt.Sprintf("#%d", id))
	}
	return fmt.Sprintf("%s (%s)", text.Plural(it.apps, "app"), strings.Join(refs, ", "))
}

func writeAttentionMarkdown(b *strings.Builder, hs []*headline) {
	if len(hs) == 0 {
		return
	}
	b.WriteString("**Needs attention**\n\n")
	for _, h := range hs {
		fmt.Fprintf(b, "- %s **%s**:", h.icon, h.title)
		if len(h.items) == 1 {
			fmt.Fprintf(b, " %s — %s\n", h.items[0].text, h.items[0].where())
			continue
		}
		b.WriteString("\n")
		for i, it := range h.items {
			if i == maxAttentionItems {
				fmt.Fprintf(b, "  - … and %d more\n", len(h.items)-i)
				break
			}
			fmt.Fprintf(b, "  - %s — %s\n", it.text, it.where())
		}
	}
	b.WriteString("\n")
}

func writeAttentionText(b *strings.Builder, hs []*headline) {
	for _, h := range hs {
		for i, it := range h.items {
			if i == maxAttentionItems {
				fmt.Fprintf(b, "attention: %s: … and %d more\n", strings.ToLower(h.title), len(h.items)-i)
				break
			}
			fmt.Fprintf(b, "attention: %s: %s — %s\n", strings.ToLower(h.title), it.plain, it.where())
		}
	}
}

// mdEscapeCode makes s safe inside a single-backtick code span (a backtick would end it).
func mdEscapeCode(s string) string { return strings.ReplaceAll(s, "`", "'") }
