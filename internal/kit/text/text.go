// Package text words things for people the same way everywhere fleetwave writes them (comments, check-runs,
// logs, errors): counts with their noun, abbreviated commit ids, an error or a message on one line.
package text

import (
	"fmt"
	"strconv"
	"strings"
)

// Plural is n with its noun: "1 app", "0 apps", "3 apps", "2 batches" (a noun ending in "ch" takes "es").
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "ch") {
		return strconv.Itoa(n) + " " + word + "es"
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// Short is s cut to its first n bytes when it is longer: a commit id abbreviated as git and GitHub show it (7
// characters on GitHub's pages; callers choose n).
func Short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// ShortRev abbreviates a revision to 10 characters when it is a whole commit id (40 or 64 characters) and keeps
// it as written otherwise, so that a branch or tag name is never cut.
func ShortRev(rev string) string {
	if len(rev) == 40 || len(rev) == 64 {
		return rev[:10]
	}
	return rev
}

// FirstLine is s up to its first line break: an error's headline, without the detail (a stack, a tool's
// output) that follows it.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// OneLine is s with every run of white space, line breaks included, made one space, and none at either end:
// a multi-line message kept whole on one line.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// FirstOf joins the first n of items with ", ", then "k more" for the rest: a list kept to one short line.
func FirstOf(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", %d more", len(items)-n)
}
