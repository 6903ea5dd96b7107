package helmtemplate

import (
	"strings"
	"unicode"
)

// SplitManifests is Helm 3's releaseutil.SplitManifests (helm.sh/helm/v3@v3.19.4 pkg/releaseutil/manifest.go) as
// the list of its documents in order (the SDK's map is keyed "manifest-<n>" and read back in that order): the
// input trimmed of Unicode white space, split by the regexp `(?:^|\s*\n)---\s*`, empty pieces dropped, each
// piece trimmed. The regexp's backtracking search over every template's output is a large part of sorting a
// large chart's manifests; this scan gives the same pieces.
//
// regexp.Regexp.Split (RE2, leftmost-first) finds non-overlapping matches, each searched from the end of the
// previous one: `---` at offset 0 (the `^` branch, which never matches later: no multi-line flag), or the run
// of \s ([\t\n\f\r ], RE2's Perl class, no \v) that ends with a line feed right before `---`, starting where that
// run starts (but not before the previous match's end); a match then takes all the \s after `---`. Split appends
// the text before each match and, the matches being non-empty, the rest after the last one.
func SplitManifests(bigFile string) []string {
	s := strings.TrimSpace(bigFile)
	var docs []string
	add := func(d string) {
		if d != "" {
			docs = append(docs, strings.TrimSpace(d))
		}
	}
	beg := 0
	for {
		start, end, ok := nextSep3(s, beg)
		if !ok {
			break
		}
		add(s[beg:start])
		beg = end
	}
	add(s[beg:])
	return docs
}

// nextSep3 is the leftmost match of `(?:^|\s*\n)---\s*` in s at or after pos.
func nextSep3(s string, pos int) (start, end int, ok bool) {
	if pos == 0 && strings.HasPrefix(s, "---") {
		return 0, skipSpace3(s, 3), true
	}
	k := strings.Index(s[pos:], "\n---")
	if k < 0 {
		return 0, 0, false
	}
	k += pos
	start = k
	for start > pos && isSpace3(s[start-1]) {
		start--
	}
	return start, skipSpace3(s, k+4), true
}

// isSpace3 is RE2's \s.
func isSpace3(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func skipSpace3(s string, i int) int {
	for i < len(s) && isSpace3(s[i]) {
		i++
	}
	return i
}

// SplitManifests4 is helm 4's SplitManifests (helm.sh/helm/v4@v4.3.1 pkg/release/v1/util/manifest.go), which
// differs from Helm 3's: the input trimmed of Unicode white space on the left only, split by `(?m)^---[ \t]*`
// (`---` at the start of any line, then spaces and tabs), pieces of white space only dropped, each piece
// trimmed on the left only (a document keeps its trailing line feed). As a list of the documents in order.
func SplitManifests4(bigFile string) []string {
	s := strings.TrimLeftFunc(bigFile, unicode.IsSpace)
	var docs []string
	add := func(d string) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, strings.TrimLeftFunc(d, unicode.IsSpace))
		}
	}
	beg := 0
	for {
		start, end, ok := nextSep4(s, beg)
		if !ok {
			break
		}
		add(s[beg:start])
		beg = end
	}
	add(s[beg:])
	return docs
}

// nextSep4 is the leftmost match of `(?m)^---[ \t]*` in s at or after pos: RE2's multi-line `^` matches at
// offset 0 and after every line feed (not after a lone carriage return).
func nextSep4(s string, pos int) (start, end int, ok bool) {
	if pos == 0 && strings.HasPrefix(s, "---") {
		start = 0
	} else {
		from := pos
		if from > 0 {
			from-- // the line feed before a match that starts at pos
		}
		k := strings.Index(s[from:], "\n---")
		if k < 0 {
			return 0, 0, false
		}
		start = from + k + 1
	}
	end = start + 3
	for end < len(s) && (s[end] == ' ' || s[end] == '\t') {
		end++
	}
	return start, end, true
}
