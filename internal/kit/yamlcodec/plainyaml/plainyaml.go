// Package plainyaml parses the plain subset of YAML most GitOps files are written in — block mappings and
// sequences of unquoted (or simply double-quoted) scalars, one-line flow collections, comments — an order of
// magnitude faster than the YAML libraries, to the same value they decode, and refuses everything else so that
// the caller asks the library.
//
// Parse(doc) returns ok only for a document both go.yaml.in/yaml/v2 (what sigs.k8s.io/yaml's YAMLToJSON runs)
// and gopkg.in/yaml.v3 decode without error into the same value, and returns that value: the library's decoding
// into an interface{} with mappings as map[string]any (yaml.v2's map[interface{}]interface{} has only string keys
// here), sequences as []any, integers as int64, strings, and nil. Where a construct's meaning takes more than a
// line of reasoning to prove equal in both libraries it is outside the subset: single quotes, escapes, anchors,
// aliases, tags, block scalars (| and >), multi-line scalars, multi-line flow collections, quoted keys, explicit
// keys, document markers and directives, tabs, carriage returns, anything not printable ASCII, duplicate keys,
// and every plain scalar the libraries may resolve to something other than a string or a small decimal integer
// (the first characters of resolve.go's resolveTable: signs, digits, '.', and the words of yaml.v2's resolveMap —
// yes, no, on, off, true, null, ~…, a superset of yaml.v3's). A double-quoted value on one line without a
// backslash is a string, its content as it is. The tests compare Parse with both libraries on a table, on
// generated documents and under fuzzing.
package plainyaml

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Limits well inside both libraries' own (a simple key is at most 1024 characters in libyaml's scanner; nesting
// is bounded there too), so that no limit of theirs is met by a document Parse accepts.
const (
	maxKeyLen = 128
	maxDepth  = 64
)

// Parse returns the value of one YAML document (as split by a YAML stream reader: no "---" inside), ok false when
// the document is outside the subset (see the package comment) — then nothing is known of it, not even that it
// is invalid. A document whose root is not a mapping is outside the subset.
func Parse(doc []byte) (v map[string]any, ok bool) {
	p := parser{}
	if !p.split(doc) || len(p.lines) == 0 {
		return nil, false
	}
	if isSeqEntry(p.lines[0].text) {
		return nil, false
	}
	m, ok := p.mapping(p.lines[0].indent, 0)
	if !ok || p.i != len(p.lines) {
		return nil, false
	}
	return m, true
}

type line struct {
	indent int
	text   string // without indentation, comment and trailing spaces; never empty
}

type parser struct {
	lines []line
	i     int // next line
}

// split cuts doc into its non-blank lines, comments removed: false for a byte outside the subset's alphabet.
func (p *parser) split(doc []byte) bool {
	for _, c := range doc {
		// Printable ASCII without the characters that start single-quoted scalars, escapes, anchors, aliases,
		// tags, block scalars, directives and reserved indicators: none of them means anything in the subset.
		// Double quotes do: a one-line string without escapes (quoted).
		if c < 0x20 && c != '\n' || c > 0x7e {
			return false
		}
		switch c {
		case '\'', '\\', '&', '*', '!', '|', '>', '%', '@', '`', '?':
			return false
		}
	}
	s := string(doc) // one string: lines, keys and values are parts of it
	p.lines = make([]line, 0, strings.Count(s, "\n")+1)
	for len(s) > 0 {
		var ln string
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			ln, s = s[:i], s[i+1:]
		} else {
			ln, s = s, ""
		}
		indent := 0
		for indent < len(ln) && ln[indent] == ' ' {
			indent++
		}
		text := ln[indent:]
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		// A comment starts at a '#' after a space outside double quotes (without backslashes, every '"' opens or
		// closes one).
		if i := commentAt(text); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimRight(text, " ")
		if strings.HasPrefix(text, "---") || strings.HasPrefix(text, "...") {
			return false // document markers: the caller's reader splits documents
		}
		p.lines = append(p.lines, line{indent: indent, text: text})
	}
	return true
}

// commentAt is the index of the " #" that starts a comment in t, or -1.
func commentAt(t string) int {
	inQuotes := false
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '"':
			inQuotes = !inQuotes
		case t[i] == '#' && i > 0 && t[i-1] == ' ' && !inQuotes:
			return i - 1
		}
	}
	return -1
}

// quoted is the content of a double-quoted scalar that is all of t ("..." on one line), false for any other t or
// a content the subset does not take: a '"' (t is two scalars, or more), a '<' (json.Marshal escapes it; AppendJSON
// does not). Backslashes, hence escapes, are refused before. Both libraries take such a content as it is, a string.
func quoted(t string) (string, bool) {
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return "", false
	}
	c := t[1 : len(t)-1]
	if strings.ContainsAny(c, "\"<") {
		return "", false
	}
	return c, true
}

func isSeqEntry(t string) bool { return t == "-" || len(t) > 1 && t[0] == '-' && t[1] == ' ' }

// block parses the node starting at the current line, whose indentation is n.
func (p *parser) block(n, depth int) (any, bool) {
	if isSeqEntry(p.lines[p.i].text) {
		return p.sequence(n, depth)
	}
	return p.mapping(n, depth)
}

// mapping parses a block mapping whose keys are indented by n, the first one on the current line.
func (p *parser) mapping(n, depth int) (map[string]any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	m := map[string]any{}
	for p.i < len(p.lines) {
		ln := p.lines[p.i]
		if ln.indent < n {
			break
		}
		if ln.indent > n || isSeqEntry(ln.text) {
			return nil, false
		}
		key, rest, isKey := cutKey(ln.text)
		if !isKey || !plainKey(key) {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		p.i++
		var v any
		if rest == "" {
			// The value is the block below, a sequence at the key's own indentation, or null.
			if p.i < len(p.lines) {
				next := p.lines[p.i]
				switch {
				case next.indent > n:
					var ok bool
					if v, ok = p.block(next.indent, depth+1); !ok {
						return nil, false
					}
				case next.indent == n && isSeqEntry(next.text):
					var ok bool
					if v, ok = p.sequence(n, depth+1); !ok {
						return nil, false
					}
				}
			}
		} else {
			var ok bool
			if v, ok = inline(rest, depth+1); !ok {
				return nil, false
			}
			if p.i < len(p.lines) && p.lines[p.i].indent > n {
				return nil, false // a continuation line: a multi-line scalar
			}
		}
		m[key] = v
	}
	return m, true
}

// sequence parses a block sequence whose "- " entries are indented by n, the first one on the current line.
func (p *parser) sequence(n, depth int) ([]any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	s := []any{}
	for p.i < len(p.lines) {
		ln := p.lines[p.i]
		if ln.indent < n || ln.indent == n && !isSeqEntry(ln.text) {
			break
		}
		if ln.indent > n {
			return nil, false
		}
		if ln.text == "-" {
			p.i++
			var v any
			if p.i < len(p.lines) && p.lines[p.i].indent > n {
				var ok bool
				if v, ok = p.block(p.lines[p.i].indent, depth+1); !ok {
					return nil, false
				}
			}
			s = append(s, v)
			continue
		}
		rest := ln.text[1:]
		col := n + 1
		for len(rest) > 0 && rest[0] == ' ' {
			rest, col = rest[1:], col+1
		}
		if rest[0] == '-' {
			return nil, false // "- - x" and "- -x": nested compact sequences and signed scalars
		}
		if _, _, isKey := cutKey(rest); isKey && rest[0] != '[' && rest[0] != '{' {
			// "- key: value": a mapping whose keys are indented as this first one.
			p.lines[p.i] = line{indent: col, text: rest}
			v, ok := p.mapping(col, depth+1)
			if !ok {
				return nil, false
			}
			s = append(s, v)
			continue
		}
		p.i++
		v, ok := inline(rest, depth+1)
		if !ok {
			return nil, false
		}
		if p.i < len(p.lines) && p.lines[p.i].indent > n {
			return nil, false
		}
		s = append(s, v)
	}
	return s, true
}

// cutKey splits "key: value" and "key:" at the first ": " or the final ':'.
func cutKey(t string) (key, rest string, ok bool) {
	for i := 0; i < len(t); i++ {
		if t[i] != ':' {
			continue
		}
		if i == len(t)-1 {
			return t[:i], "", true
		}
		if t[i+1] == ' ' {
			j := i + 1
			for j < len(t) && t[j] == ' ' {
				j++
			}
			return t[:i], t[j:], true
		}
	}
	return "", "", false
}

// inline parses a value written on its key's (or entry's) line: a flow collection or a plain scalar.
func inline(t string, depth int) (any, bool) {
	if t[0] == '[' || t[0] == '{' {
		f := flow{s: t}
		v, ok := f.value(depth)
		if !ok || f.pos != len(f.s) {
			return nil, false
		}
		return v, true
	}
	if t[0] == '"' {
		if c, ok := quoted(t); ok {
			return c, true
		}
		return nil, false
	}
	if !blockScalar(t) {
		return nil, false
	}
	return resolve(t)
}

// blockScalar reports a plain scalar of block context the subset takes: its characters, and no ": " or final ':'
// that would make it a mapping.
func blockScalar(t string) bool {
	if t == "" || !startChar(t[0]) {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == ':' && (i == len(t)-1 || t[i+1] == ' '):
			return false
		case c == '[' || c == ']' || c == '{' || c == '}' || c == '#':
			return false
		case !midChar(c) && c != ' ' && c != ',':
			return false
		}
	}
	return true
}

// plainKey reports a mapping key of the subset: one plain word that resolves to a string in both libraries.
func plainKey(k string) bool {
	if k == "" || len(k) > maxKeyLen || !startChar(k[0]) {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !midChar(c) || c == ':' {
			return false
		}
	}
	v, ok := resolve(k)
	_, isString := v.(string)
	return ok && isString
}

// startChar: what a plain scalar of the subset may start with. Indicators and the signs that make the libraries
// try other types first are not among them; digits and '.' are (resolve decides).
func startChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '/' || c == '$' || c == '.'
}

// midChar: what a plain scalar of the subset may hold after its first character (spaces aside).
func midChar(c byte) bool {
	if startChar(c) {
		return true
	}
	switch c {
	case '.', '-', '/', '=', '+', ':', '~', '(', ')', ';', '^':
		return true
	}
	return false
}

// resolveMapV2 are the words yaml.v2's resolve.go (go.yaml.in/yaml/v2 v2.4.4, resolveMapList) resolves to a
// boolean or null; yaml.v3's list (gopkg.in/yaml.v3 v3.0.1 resolve.go) is a subset of it. Only those of them that
// start with a letter or '~' can reach resolve here.
var resolveMapV2 = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"true": true, "True": true, "TRUE": true,
	"on": true, "On": true, "ON": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"false": true, "False": true, "FALSE": true,
	"off": true, "Off": true, "OFF": true,
	"null": true, "Null": true, "NULL": true,
}

// resolve types a plain scalar as both libraries do (resolve.go in each): a string when its first character is
// no resolve hint, or is a letter hint ("yYnNtTfFoO~") and the word is none of resolveMapV2's, or is '.' and
// the scalar is no float; an int64 for a
// decimal integer of at most 18 digits without a leading zero (strconv.ParseInt in both, no timestamp, float or
// sign); anything else is outside the subset.
func resolve(s string) (any, bool) {
	switch c := s[0]; {
	case '0' <= c && c <= '9':
		if len(s) > 18 || len(s) > 1 && c == '0' {
			return nil, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false
		}
		return n, true
	case c == '.':
		// A float (".5") or one of the map's (".inf", ".nan") for both libraries, unless strconv.ParseFloat
		// cannot read it, which is certain for "." and what starts with "./" or "..": relative paths.
		if s != "." && s[1] != '.' && s[1] != '/' {
			return nil, false
		}
	case resolveMapV2[s]:
		return nil, false
	}
	return s, true
}

// flow parses a one-line flow collection.
type flow struct {
	s   string
	pos int
}

func (f *flow) spaces() {
	for f.pos < len(f.s) && f.s[f.pos] == ' ' {
		f.pos++
	}
}

func (f *flow) value(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	f.spaces()
	if f.pos >= len(f.s) {
		return nil, false
	}
	switch f.s[f.pos] {
	case '[':
		return f.sequence(depth)
	case '{':
		return f.mapping(depth)
	case '"':
		end := strings.IndexByte(f.s[f.pos+1:], '"')
		if end < 0 {
			return nil, false
		}
		c, ok := quoted(f.s[f.pos : f.pos+end+2])
		f.pos += end + 2
		return c, ok
	}
	w, ok := f.word()
	if !ok {
		return nil, false
	}
	return resolve(w)
}

// word reads a plain scalar of flow context: up to ',', ']', '}' or ':' (a ':' inside one is refused: the
// libraries differ on it), its inner spaces kept, the trailing ones dropped.
func (f *flow) word() (string, bool) {
	start := f.pos
	for f.pos < len(f.s) {
		c := f.s[f.pos]
		if c == ',' || c == ']' || c == '}' || c == ':' {
			break
		}
		if c == '[' || c == '{' || c == '#' || c != ' ' && !midChar(c) {
			return "", false
		}
		f.pos++
	}
	w := f.s[start:f.pos]
	for len(w) > 0 && w[len(w)-1] == ' ' {
		w = w[:len(w)-1]
	}
	if w == "" || !startChar(w[0]) {
		return "", false
	}
	return w, true
}

func (f *flow) sequence(depth int) (any, bool) {
	f.pos++ // '['
	s := []any{}
	f.spaces()
	if f.pos < len(f.s) && f.s[f.pos] == ']' {
		f.pos++
		return s, true
	}
	for {
		v, ok := f.value(depth + 1)
		if !ok {
			return nil, false
		}
		s = append(s, v)
		f.spaces()
		if f.pos >= len(f.s) {
			return nil, false
		}
		switch f.s[f.pos] {
		case ',':
			f.pos++
			f.spaces()
			if f.pos < len(f.s) && (f.s[f.pos] == ']' || f.s[f.pos] == ',') {
				return nil, false // "[a, ]" and "[a,,b]"
			}
		case ']':
			f.pos++
			return s, true
		default:
			return nil, false
		}
	}
}

func (f *flow) mapping(depth int) (any, bool) {
	f.pos++ // '{'
	m := map[string]any{}
	f.spaces()
	if f.pos < len(f.s) && f.s[f.pos] == '}' {
		f.pos++
		return m, true
	}
	for {
		f.spaces()
		k, ok := f.word()
		if !ok || !plainKey(k) {
			return nil, false
		}
		if f.pos+1 >= len(f.s) || f.s[f.pos] != ':' || f.s[f.pos+1] != ' ' {
			return nil, false // "{a}", "{a:b}"
		}
		f.pos += 2
		if _, dup := m[k]; dup {
			return nil, false
		}
		v, ok := f.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v
		f.spaces()
		if f.pos >= len(f.s) {
			return nil, false
		}
		switch f.s[f.pos] {
		case ',':
			f.pos++
			f.spaces()
			if f.pos < len(f.s) && (f.s[f.pos] == '}' || f.s[f.pos] == ',') {
				return nil, false
			}
		case '}':
			f.pos++
			return m, true
		default:
			return nil, false
		}
	}
}

// AppendJSON appends to dst the JSON encoding/json's Marshal writes for a value Parse returned (map keys sorted,
// no spaces): the subset's strings hold no character Marshal escapes (quotes, backslashes, control characters,
// '<', '>', '&', U+2028, U+2029), so each is written as it is.
func AppendJSON(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case string:
		dst = append(dst, '"')
		dst = append(dst, x...)
		return append(dst, '"')
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, k...)
			dst = append(dst, '"', ':')
			dst = AppendJSON(dst, x[k])
		}
		return append(dst, '}')
	}
	panic(fmt.Sprintf("plainyaml: AppendJSON of a %T, which Parse does not return", v))
}
