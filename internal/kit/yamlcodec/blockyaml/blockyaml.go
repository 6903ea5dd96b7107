// Package blockyaml decodes the YAML that emitters, templates and people write (block mappings and sequences;
// plain, quoted and literal scalars, folded over lines as emitters fold them; flow collections on one line)
// into exactly the value go.yaml.in/yaml/v2's Unmarshal stores in an interface{}, four to five times faster: no
// token queue, no node tree, no reflection. YAML parsing is a large part of a render's cost on large charts
// (kube-prometheus-stack's 5 MB of CRDs), where Argo CD parses every document of helm's output with yaml.v2
// (gitops-engine's kube.SplitYAML) and fleetwave must too, and of discovery on large repositories.
//
// Anything else (anchors and aliases, tags, directives and document markers, flow collections over several
// lines or with empty entries, folded and indentation-indicated block scalars, escaped line breaks, complex,
// merge and very long keys, tabs outside block scalars, characters yaml.v2's reader refuses, and every syntax
// error) makes Decode report false, and the caller asks yaml.v2: the result is then the library's own, errors
// included. Differential tests hold the two equal on tables, under fuzzing and on the fidelity corpus (99% of
// its YAML bytes are decoded here).
//
// Strings lists a document's scalar values as written, a superset of the strings yaml.v2 and yaml.v3 decode
// from it (held so under fuzzing against both), for callers after the paths and names a file mentions.
//
// Scalar resolution (resolve, parseTimestamp) is ported from go.yaml.in/yaml/v2 v2.4.4 resolve.go
// (Apache-2.0), the decoding rules from its decode.go (quoted and block scalars are strings; a timestamp
// decoded into an interface{} stays a string) and the scanning rules from its scannerc.go.
package blockyaml

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds within which Decode answers; past them yaml.v2 decides (its simple-key limit is 1024 characters,
// its nesting limit 10,000).
const (
	maxKeyBytes = 1000
	maxDepth    = 1000
)

// Decode returns what yaml.v2's Unmarshal(doc, &v) leaves in v (an interface{}: nil, bool, int, int64,
// uint64, float64, string, []interface{} or map[interface{}]interface{}) and true, or false when doc is not
// in the subset this package decodes. doc is one document, as a YAML stream reader splits them.
func Decode(doc []byte) (interface{}, bool) {
	return decode(doc, false)
}

// Strings returns the text of every scalar value of doc (not of its keys), in document order: a plain scalar as
// written (yaml.v2 and yaml.v3 resolve "yes", "on" or "1" differently, a caller after paths or names wants the
// text), a quoted or literal one decoded; or false when doc is outside what Decode decodes. It is a superset of
// the strings either library decodes from doc.
func Strings(doc []byte) ([]string, bool) {
	v, ok := decode(doc, true)
	if !ok {
		return nil, false
	}
	var out []string
	var walk func(v interface{})
	walk = func(v interface{}) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []interface{}:
			for _, e := range x {
				walk(e)
			}
		case *orderedMap:
			for _, e := range x.values {
				walk(e)
			}
		}
	}
	walk(v)
	return out, true
}

// orderedMap is a mapping's values in document order, what Strings walks.
type orderedMap struct{ values []interface{} }

func decode(doc []byte, text bool) (interface{}, bool) {
	if !clean(doc) {
		return nil, false
	}
	p := &parser{src: doc, text: text}
	p.splitLines()
	if p.marker {
		return nil, false
	}
	i := p.skip(0)
	if i == len(p.lines) {
		return nil, true // comments and blank lines only: an empty document
	}
	v, next, ok := p.node(i, p.lines[i].indent, -1, 0)
	if !ok || p.skip(next) != len(p.lines) {
		return nil, false
	}
	return v, true
}

// clean reports that doc holds only what yaml.v2's reader accepts and this decoder handles: no byte order
// mark, no control characters but tab and line feed, no carriage returns, valid UTF-8 of printable characters
// that are not YAML line breaks (U+0085, U+2028, U+2029). readerc.go and scannerc.go (is_printable, is_break).
func clean(doc []byte) bool {
	for i := 0; i < len(doc); {
		c := doc[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7F {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError && n <= 1, r == 0xFEFF, r == 0x85, r == 0x2028, r == 0x2029:
			return false
		case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		i += n
	}
	return true
}

type line struct {
	text   string // without the line feed
	indent int    // leading spaces
	blank  bool   // spaces only, or a comment after spaces
	last   bool   // the final line, with no line feed after it
}

type parser struct {
	src    []byte
	lines  []line
	marker bool // a document marker or directive: left to yaml.v2
	text   bool // plain scalars are kept as written, not resolved (Strings)
}

// marker reports a line yaml.v2 reads as a document start or end marker ("---", "...") or a directive ("%").
func marker(t string) bool {
	if strings.HasPrefix(t, "%") {
		return true
	}
	for _, m := range []string{"---", "..."} {
		if strings.HasPrefix(t, m) && (len(t) == 3 || t[3] == ' ' || t[3] == '\t') {
			return true
		}
	}
	return false
}

func (p *parser) splitLines() {
	s := string(p.src)
	p.lines = make([]line, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		j := strings.IndexByte(s, '\n')
		t, last := s, true
		if j >= 0 {
			t, s, last = s[:j], s[j+1:], false
		} else {
			s = ""
		}
		n := 0
		for n < len(t) && t[n] == ' ' {
			n++
		}
		p.lines = append(p.lines, line{text: t, indent: n, blank: n == len(t) || t[n] == '#', last: last})
		if marker(t) {
			p.marker = true
		}
	}
}

// skip returns the first line at or after i that is not blank.
func (p *parser) skip(i int) int {
	for i < len(p.lines) && p.lines[i].blank {
		i++
	}
	return i
}

// node decodes the node starting at line i, column col (a line's indentation, or the column after "- " of a
// compact node). parent is the indentation of the collection holding it (-1 at the top): block scalars and
// the end of the node are judged against it. It returns the value and the first line after the node.
func (p *parser) node(i, col, parent, depth int) (interface{}, int, bool) {
	if depth > maxDepth {
		return nil, 0, false
	}
	t := p.lines[i].text[col:]
	if strings.ContainsRune(t, '\t') {
		return nil, 0, false
	}
	if t == "-" || strings.HasPrefix(t, "- ") {
		return p.sequence(i, col, depth)
	}
	if _, _, ok := mappingKey(t); ok {
		return p.mapping(i, col, depth)
	}
	return p.value(t, i, parent, depth)
}

// value decodes a scalar or flow collection written after a key or a "- " on line i (t is that text, the
// separating spaces included) or on a line of its own; parent is the indentation of the collection holding it.
func (p *parser) value(t string, i, parent, depth int) (interface{}, int, bool) {
	t = strings.TrimLeft(t, " ")
	if t == "" || t[0] == '#' {
		// The value is on the following lines, more indented than its collection, or it is null. A sequence may
		// sit at the same column as the key of a mapping holding it; the caller handles that.
		j := p.skip(i + 1)
		if j < len(p.lines) && p.lines[j].indent > parent {
			return p.node(j, p.lines[j].indent, parent, depth+1)
		}
		return nil, i + 1, true
	}
	if strings.ContainsRune(t, '\t') {
		return nil, 0, false
	}
	var v interface{}
	switch t[0] {
	case '|':
		return p.literal(t, i, parent)
	case '\'', '"':
		s, rest, last, ok := p.quoted(t, i, parent, true)
		if !ok || !comment(rest) {
			return nil, 0, false
		}
		v, i = s, last
	case '{', '[':
		f, rest, ok := p.flow(t, depth)
		if !ok || !comment(rest) {
			return nil, 0, false
		}
		v = f
	default:
		s, commented, ok := plain(t)
		if !ok {
			return nil, 0, false
		}
		next := i + 1
		if !commented {
			if s, next, ok = p.folded(s, i+1, parent); !ok {
				return nil, 0, false
			}
		}
		v = p.resolve(s)
		i = next - 1
	}
	// Nothing more indented than the collection may follow a scalar (yaml.v2 reports an error there).
	j := p.skip(i + 1)
	if j < len(p.lines) && p.lines[j].indent > parent {
		return nil, 0, false
	}
	return v, i + 1, true
}

// folded continues the plain scalar first over the lines from i that are indented more than parent
// (scannerc.go yaml_parser_scan_plain_scalar): each line trimmed, one line break folded into a space, n > 1
// line breaks into n-1 newlines. It ends at a less indented line, a comment line, or a comment after a line's
// text, and returns the scalar and the line after its last one.
func (p *parser) folded(first string, i, parent int) (string, int, bool) {
	var b strings.Builder
	b.WriteString(first)
	breaks := 0
	for ; i < len(p.lines); i++ {
		ln := p.lines[i]
		if ln.indent == len(ln.text) {
			breaks++
			continue
		}
		if ln.indent <= parent || ln.text[ln.indent] == '#' {
			break
		}
		t := ln.text[ln.indent:]
		if strings.ContainsRune(t, '\t') {
			return "", 0, false
		}
		part, commented, ok := plainText(t)
		if !ok {
			return "", 0, false
		}
		if breaks == 0 {
			b.WriteByte(' ')
		}
		for ; breaks > 0; breaks-- {
			b.WriteByte('\n')
		}
		b.WriteString(part)
		if commented {
			return b.String(), i + 1, true
		}
	}
	// Empty lines after the scalar are not part of it.
	for i > 0 && p.lines[i-1].indent == len(p.lines[i-1].text) {
		i--
	}
	return b.String(), i, true
}

// mapping decodes a block mapping whose keys are at column col, the first on line i.
func (p *parser) mapping(i, col, depth int) (interface{}, int, bool) {
	m := map[interface{}]interface{}{}
	var ordered *orderedMap
	if p.text {
		ordered = &orderedMap{}
	}
	first := true
	for i < len(p.lines) {
		ln := p.lines[i]
		if !first && ln.indent != col {
			if ln.indent > col {
				return nil, 0, false
			}
			break
		}
		t := ln.text[col:]
		key, rest, ok := mappingKey(t)
		if !ok {
			return nil, 0, false
		}
		first = false
		var v interface{}
		var next int
		if strings.TrimLeft(rest, " ") == "" || strings.TrimLeft(rest, " ")[0] == '#' {
			j := p.skip(i + 1)
			switch {
			case j < len(p.lines) && p.lines[j].indent == col && isEntry(p.lines[j].text[col:]):
				v, next, ok = p.sequence(j, col, depth+1)
			case j < len(p.lines) && p.lines[j].indent > col:
				v, next, ok = p.node(j, p.lines[j].indent, col, depth+1)
			default:
				v, next, ok = nil, i+1, true
			}
		} else {
			v, next, ok = p.value(rest, i, col, depth+1)
		}
		if !ok {
			return nil, 0, false
		}
		if ordered != nil {
			ordered.values = append(ordered.values, v)
		} else {
			m[key] = v // yaml.v2 (not strict): a later duplicate wins
		}
		i = p.skip(next)
	}
	if ordered != nil {
		return ordered, i, true
	}
	return m, i, true
}

// isEntry reports a sequence entry: "-" alone or followed by a space.
func isEntry(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// sequence decodes a block sequence whose dashes are at column col, the first on line i.
func (p *parser) sequence(i, col, depth int) (interface{}, int, bool) {
	s := []interface{}{}
	for i < len(p.lines) {
		ln := p.lines[i]
		if ln.indent != col {
			if ln.indent > col {
				return nil, 0, false
			}
			break
		}
		t := ln.text[col:]
		if !isEntry(t) {
			break // the mapping holding a same-column sequence goes on
		}
		rest := t[1:]
		k := 1
		for k < len(t) && t[k] == ' ' {
			k++
		}
		var v interface{}
		var next int
		var ok bool
		inner := t[k:]
		switch {
		case inner == "" || inner[0] == '#':
			v, next, ok = p.value(rest, i, col, depth+1)
		case isEntry(inner):
			return nil, 0, false // "- - x": left to yaml.v2
		default:
			if _, _, isKey := mappingKey(inner); isKey {
				v, next, ok = p.mapping(i, col+k, depth+1)
			} else {
				v, next, ok = p.value(rest, i, col, depth+1)
			}
		}
		if !ok {
			return nil, 0, false
		}
		s = append(s, v)
		i = p.skip(next)
	}
	return s, i, true
}

// literal decodes a literal block scalar ("|", "|-" or "|+" ending line i; t is from the indicator on) whose
// content is indented more than parent, by one space at least. scannerc.go yaml_parser_scan_block_scalar: the
// content's indentation is its first non-empty line's; lines of spaces only are empty lines; the final line
// break is kept once (clip), dropped (strip, "-") or kept with the empty lines after it (keep, "+").
func (p *parser) literal(t string, i, parent int) (interface{}, int, bool) {
	var chomp byte
	switch t {
	case "|":
	case "|-", "|+":
		chomp = t[1]
	default:
		return nil, 0, false // an indentation indicator or a comment after the header: left to yaml.v2
	}
	j := i + 1
	// Leading empty lines: only truly empty ones (spaces there take part in detecting the indentation).
	for j < len(p.lines) && p.lines[j].text == "" {
		j++
	}
	if j == len(p.lines) || p.lines[j].indent <= max(parent, 0) || p.lines[j].indent == len(p.lines[j].text) ||
		p.lines[j].text[p.lines[j].indent] == '\t' {
		return nil, 0, false // empty, its first line spaces only, or a tab where its indentation is detected
	}
	n := p.lines[j].indent
	var b strings.Builder
	for k := i + 1; k < j; k++ {
		b.WriteByte('\n') // leading empty lines are content
	}
	first, pending := true, 0 // pending: empty lines since the last content line
	for ; j < len(p.lines); j++ {
		ln := p.lines[j]
		if ln.indent == len(ln.text) { // spaces only: an empty line, unless longer than the indentation
			if ln.indent > n {
				return nil, 0, false
			}
			pending++
			continue
		}
		if ln.indent < n {
			break
		}
		if !first {
			b.WriteByte('\n')
		}
		for ; pending > 0; pending-- {
			b.WriteByte('\n')
		}
		first = false
		b.WriteString(ln.text[n:])
		if ln.last { // no line feed after the content: none to clip or keep
			if chomp == '+' {
				return nil, 0, false
			}
			return b.String(), j + 1, true
		}
	}
	switch chomp {
	case 0:
		b.WriteByte('\n')
	case '+':
		if j == len(p.lines) {
			return nil, 0, false // kept empty lines at the end of the document: left to yaml.v2
		}
		b.WriteByte('\n')
		for ; pending > 0; pending-- {
			b.WriteByte('\n')
		}
	}
	if j < len(p.lines) && p.lines[j].indent > parent && !p.lines[j].blank {
		return nil, 0, false
	}
	return b.String(), j, true
}

// flow decodes a flow collection starting t ("{" or "[") that ends on its line, and returns what follows it
// (scannerc.go in flow context: a plain scalar ends at ",", "?", "[", "]", "{", "}" or ": "; a ":" followed by
// anything else is an error). Pairs are "key: value" with a plain or quoted key; an empty key or value, a
// single-pair mapping inside a sequence, "?", a trailing comment inside the collection (it goes on on the next
// line) and anything else are left to yaml.v2.
func (p *parser) flow(t string, depth int) (interface{}, string, bool) {
	if depth > maxDepth {
		return nil, "", false
	}
	closer := byte(']')
	var m map[interface{}]interface{}
	var ordered *orderedMap
	var s []interface{}
	if t[0] == '{' {
		closer = '}'
		if p.text {
			ordered = &orderedMap{}
		} else {
			m = map[interface{}]interface{}{}
		}
	} else {
		s = []interface{}{}
	}
	t = strings.TrimLeft(t[1:], " ")
	for first := true; ; first = false {
		if t == "" {
			return nil, "", false // goes on on the next line
		}
		if t[0] == closer {
			break
		}
		if !first {
			if t[0] != ',' {
				return nil, "", false
			}
			t = strings.TrimLeft(t[1:], " ")
			if t == "" || t[0] == closer {
				return nil, "", false // a trailing comma: left to yaml.v2
			}
		}
		var key interface{}
		if closer == '}' {
			k, rest, ok := p.flowScalar(t, true)
			if !ok {
				return nil, "", false
			}
			rest = strings.TrimLeft(rest, " ")
			if len(rest) < 2 || rest[0] != ':' || rest[1] != ' ' {
				return nil, "", false
			}
			key, t = k, strings.TrimLeft(rest[1:], " ")
		}
		var v interface{}
		var ok bool
		if t != "" && (t[0] == '{' || t[0] == '[') {
			v, t, ok = p.flow(t, depth+1)
		} else {
			v, t, ok = p.flowScalar(t, false)
		}
		if !ok {
			return nil, "", false
		}
		t = strings.TrimLeft(t, " ")
		switch {
		case closer == ']' && t != "" && t[0] == ':':
			return nil, "", false // a single-pair mapping in a sequence
		case ordered != nil:
			ordered.values = append(ordered.values, v)
		case m != nil:
			m[key] = v
		default:
			s = append(s, v)
		}
	}
	switch {
	case ordered != nil:
		return ordered, t[1:], true
	case m != nil:
		return m, t[1:], true
	}
	return s, t[1:], true
}

// flowScalar decodes the quoted or plain scalar starting t inside a flow collection, and returns what follows.
func (p *parser) flowScalar(t string, key bool) (interface{}, string, bool) {
	if t == "" {
		return nil, "", false
	}
	if t[0] == '\'' || t[0] == '"' {
		s, rest, _, ok := p.quoted(t, 0, 0, false)
		if !ok || key && len(s) > maxKeyBytes {
			return nil, "", false
		}
		return s, rest, true
	}
	if !plainStart(t) || t[0] == '?' {
		return nil, "", false
	}
	end := len(t)
scan:
	for j := 0; j < len(t); j++ {
		switch t[j] {
		case ',', '[', ']', '{', '}':
			end = j
			break scan
		case '?', '\t':
			return nil, "", false
		case ':':
			if j+1 < len(t) && t[j+1] != ' ' {
				return nil, "", false // "found unexpected ':'", or a value glued to its key
			}
			end = j
			break scan
		case '#':
			if j > 0 && t[j-1] == ' ' {
				return nil, "", false // a comment inside the collection
			}
		}
	}
	text := strings.TrimRight(t[:end], " ")
	if text == "" || key && (len(text) > maxKeyBytes || text == "<<") {
		return nil, "", false
	}
	if key {
		return resolve(text), t[end:], true
	}
	return p.resolve(text), t[end:], true
}

// mappingKey splits "key: rest" (or "key:" at the end of the line) into the decoded key and what follows the
// colon, or reports that t does not start with a simple key this package decodes.
func mappingKey(t string) (key interface{}, rest string, ok bool) {
	if t == "" {
		return nil, "", false
	}
	if t[0] == '\'' || t[0] == '"' {
		s, after, _, ok := (*parser)(nil).quoted(t, 0, 0, false)
		if !ok || len(s) > maxKeyBytes || !strings.HasPrefix(after, ":") || len(after) > 1 && after[1] != ' ' {
			return nil, "", false
		}
		return s, after[1:], true
	}
	if !plainStart(t) {
		return nil, "", false
	}
	for j := 0; j < len(t); j++ {
		switch t[j] {
		case ':':
			if j+1 == len(t) || t[j+1] == ' ' {
				k := strings.TrimRight(t[:j], " ")
				if k == "" || len(k) > maxKeyBytes || k == "<<" {
					return nil, "", false
				}
				return resolve(k), t[j+1:], true
			}
		case '#':
			if j > 0 && t[j-1] == ' ' {
				return nil, "", false // a comment before any ": "
			}
		case '\t':
			return nil, "", false
		}
	}
	return nil, "", false
}

// plainStart reports that t may start a plain scalar in block context (scannerc.go
// yaml_parser_fetch_next_token): not an indicator, except "-", "?" and ":" followed by a non-space.
func plainStart(t string) bool {
	switch t[0] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		return false
	case '-', '?', ':':
		return len(t) > 1 && t[1] != ' '
	}
	return true
}

// plain returns the plain scalar's text on its first line t, whether a comment ends it there, or false when
// t does not start one.
func plain(t string) (s string, commented, ok bool) {
	if !plainStart(t) {
		return "", false, false
	}
	return plainText(t)
}

// plainText is plain's scan of a line of a plain scalar, where the first character may be anything but a
// comment or a space.
func plainText(t string) (s string, commented, ok bool) {
	for j := 0; j < len(t); j++ {
		switch t[j] {
		case ':':
			if j+1 == len(t) || t[j+1] == ' ' {
				return "", false, false // a mapping value where none is allowed: a syntax error for yaml.v2
			}
		case '#':
			if t[j-1] == ' ' {
				return strings.TrimRight(t[:j], " "), true, true
			}
		}
	}
	return strings.TrimRight(t, " "), false, true
}

// comment reports that rest is empty, spaces, or a comment after at least one space (or nothing).
func comment(rest string) bool {
	r := strings.TrimLeft(rest, " ")
	return r == "" || r[0] == '#' && len(r) < len(rest)
}

// quoted decodes a single- or double-quoted scalar starting at t, on line i, and returns what follows it on
// its last line and that line. With multi, it may go on over the following lines indented more than parent
// (scannerc.go yaml_parser_scan_flow_scalar): trailing spaces before a line break dropped, leading spaces of
// the next line too, one line break folded into a space, n > 1 into n-1 newlines. A doubled quote is one
// quote in single quotes; double quotes take the escapes below; an escaped line break, an invalid escape or
// a tab is left to yaml.v2.
func (p *parser) quoted(t string, i, parent int, multi bool) (string, string, int, bool) {
	q := t[0]
	var b []byte
	for ln := t[1:]; ; {
		trail := -1 // length of b before the unescaped spaces ending it
		for j := 0; j < len(ln); j++ {
			c := ln[j]
			switch {
			case c == '\'' && q == '\'' && j+1 < len(ln) && ln[j+1] == '\'':
				b = append(b, '\'')
				j++
				trail = -1
			case c == q:
				return string(b), ln[j+1:], i, true
			case c == '\\' && q == '"':
				if j+1 == len(ln) {
					return "", "", 0, false
				}
				j++
				trail = -1
				if r, ok := simpleEscapes[ln[j]]; ok {
					b = utf8.AppendRune(b, r)
					continue
				}
				var width int
				switch ln[j] {
				case 'x':
					width = 2
				case 'u':
					width = 4
				case 'U':
					width = 8
				default:
					return "", "", 0, false
				}
				if j+width >= len(ln) {
					return "", "", 0, false
				}
				v, err := strconv.ParseUint(ln[j+1:j+1+width], 16, 32)
				if err != nil || v >= 0xD800 && v <= 0xDFFF || v > 0x10FFFF {
					return "", "", 0, false
				}
				b = utf8.AppendRune(b, rune(v))
				j += width
			case c == '\t':
				return "", "", 0, false
			case c == ' ':
				if trail < 0 {
					trail = len(b)
				}
				b = append(b, c)
			default:
				b = append(b, c)
				trail = -1
			}
		}
		if !multi {
			return "", "", 0, false
		}
		if trail >= 0 {
			b = b[:trail]
		}
		breaks := 1
		for i++; i < len(p.lines) && p.lines[i].indent == len(p.lines[i].text); i++ {
			breaks++
		}
		if i == len(p.lines) || p.lines[i].indent <= parent || p.lines[i].indent == 0 {
			return "", "", 0, false
		}
		if breaks == 1 {
			b = append(b, ' ')
		}
		for ; breaks > 1; breaks-- {
			b = append(b, '\n')
		}
		ln = p.lines[i].text[p.lines[i].indent:]
	}
}

// simpleEscapes are the one-character escapes of double-quoted scalars (scannerc.go).
var simpleEscapes = map[byte]rune{
	'0': 0, 'a': '\a', 'b': '\b', 't': '\t', '\t': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r', 'e': 0x1B,
	' ': ' ', '"': '"', '\'': '\'', '\\': '\\', 'N': 0x85, '_': 0xA0, 'L': 0x2028, 'P': 0x2029,
}

// resolve is resolve below, or the scalar as written in text mode.
func (p *parser) resolve(in string) interface{} {
	if p.text {
		return in
	}
	return resolve(in)
}

// resolve is the value Resolve gives.
func resolve(in string) interface{} {
	v, _ := Resolve(in)
	return v
}

// Resolve is go.yaml.in/yaml/v2's resolve (resolve.go) of an untagged plain scalar: the value its Unmarshal
// stores in an interface{} (a timestamp stays the string it is, decode.go scalar), and whether its tag is a
// string's, that is whether a string written plain reads back as itself (encode.go stringv asks this before
// writing a string plain; "<<" and timestamps decode to strings but are not).
func Resolve(in string) (v interface{}, str bool) {
	hint := byte('N')
	if in != "" {
		hint = resolveTable(in[0])
	}
	if hint == 0 {
		return in, true
	}
	if v, ok := resolveMap[in]; ok {
		return v, false
	}
	switch hint {
	case '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return f, false
		}
	case 'D', 'S':
		if parseTimestamp(in) {
			return in, false
		}
		plain := strings.ReplaceAll(in, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			if i == int64(int(i)) {
				return int(i), false
			}
			return i, false
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return u, false
		}
		if yamlStyleFloat.MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f, false
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				if i == int64(int(i)) {
					return int(i), false
				}
				return i, false
			}
			if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return u, false
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if i, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return int(i), false
			}
		}
	}
	return in, true
}

// resolveTable is resolve.go's table of first characters.
func resolveTable(c byte) byte {
	switch {
	case c == '+' || c == '-':
		return 'S'
	case c >= '0' && c <= '9':
		return 'D'
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return 'M'
	case c == '.':
		return '.'
	}
	return 0
}

var resolveMap = func() map[string]interface{} {
	m := map[string]interface{}{}
	for _, item := range []struct {
		v interface{}
		l []string
	}{
		{true, []string{"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}},
		{false, []string{"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}},
		{nil, []string{"", "~", "null", "Null", "NULL"}},
		{math.NaN(), []string{".nan", ".NaN", ".NAN"}},
		{math.Inf(+1), []string{".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"}},
		{math.Inf(-1), []string{"-.inf", "-.Inf", "-.INF"}},
		{"<<", []string{"<<"}}, // the merge key: a string when decoded as a value
	} {
		for _, s := range item.l {
			m[s] = item.v
		}
	}
	return m
}()

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// parseTimestamp is resolve.go's parseTimestamp, reporting only whether s is one.
func parseTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range []string{"2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00", "2006-1-2 15:4:5.999999999", "2006-1-2"} {
		if _, err := time.Parse(format, s); err == nil {
			return true
		}
	}
	return false
}
