package config

import (
	"regexp"
	"strings"
)

// mdLink is a markdown link to a sibling docs page, "[security.md](security.md)".
var mdLink = regexp.MustCompile(`\[([^\]]+)\]\(([^)]+)\)`)

// Help lists the settings read by who (ForServe or ForCLI) for a command's --help: one entry per setting, its name
// padded to a column and its documentation wrapped at width, markdown turned into plain text (links become the
// docs/ page they name). It is generated from Settings, so --help never lists a setting the code does not read
// or misses one it does.
func Help(who, width int) string {
	const indent = 39 // the documentation column: two spaces, the longest name, one space
	var b strings.Builder
	for _, s := range Settings {
		if s.For&who == 0 {
			continue
		}
		doc := plainDoc(s.Doc)
		if s.Default != "" {
			doc += " (default " + s.Default + ")"
		}
		b.WriteString("  " + s.Name)
		col := 2 + len(s.Name)
		if col >= indent {
			b.WriteString("\n")
			col = 0
		}
		b.WriteString(strings.Repeat(" ", indent-col))
		wrapInto(&b, doc, indent, width)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// plainDoc turns a setting's markdown documentation into terminal text.
func plainDoc(doc string) string {
	doc = mdLink.ReplaceAllStringFunc(doc, func(m string) string {
		sub := mdLink.FindStringSubmatch(m)
		if strings.HasSuffix(sub[2], ".md") {
			return "docs/" + sub[2]
		}
		return sub[1]
	})
	return strings.NewReplacer("`", "", `\\n`, `\n`).Replace(doc)
}

// wrapInto writes text word by word, breaking before width and continuing lines at column indent.
func wrapInto(b *strings.Builder, text string, indent, width int) {
	col := indent
	for i, w := range strings.Fields(text) {
		if i > 0 {
			if col+1+len(w) > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				col = indent
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString(w)
		col += len(w)
	}
	b.WriteString("\n")
}
