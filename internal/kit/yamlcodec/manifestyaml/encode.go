package manifestyaml

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
)

// This file is a direct YAML encoder for the values JSON decoding makes, writing the bytes go.yaml.in/yaml/v2
// (v2.4.4) writes for sigsyaml.Marshal of them, without its reflection, event queue and per-event copies. Its
// parts are ports of yaml.v2's, each naming the function it follows (go.yaml.in/yaml/v2, Apache-2.0 and MIT):
// the choice of style is encode.go's stringv with resolve.go's resolve, the key order is sorter.go's
// keyList.Less, and the layout is emitterc.go's block emitter, its scalar analysis and its writers, with
// yaml.v2's settings (best_indent 2, best_width 80, unicode, LF breaks). Only what an object can reach is
// ported: block mappings and sequences, "{}" and "[]" for empty ones, and plain, single-quoted, double-quoted
// and literal scalars (stringv never asks for folded ones, nor anchors, tags or flow content).
//
// Whatever it does not cover makes it give up on the whole object (ok false), and Marshal takes the libraries'
// path: a string or key the shortcut leaves to the libraries (printable, maxKeyBytes), nesting beyond maxDepth,
// a float64 that is not finite, a type JSON decoding does not make, and a mapping whose keys keyList.Less does
// not order consistently (it is not transitive on some keys with digits, and then yaml.v2's order depends on
// Go's map iteration order).

// yaml.v2's emitter settings (emitterc.go yaml_emitter_emit_stream_start: best_indent 2, best_width 80).
const (
	bestIndent = 2
	bestWidth  = 80
)

// Scalar styles, as encode.go asks for them and emitterc.go settles them.
type scalarStyle uint8

const (
	plainStyle scalarStyle = iota
	singleQuotedStyle
	doubleQuotedStyle
	literalStyle
)

// encoder is the state of yaml.v2's emitter (yamlh.go yaml_emitter_t) that a block document reaches: the
// output, the column, the current indentation and the whitespace/indention flags. The indentation stack is
// the Go call stack: each level restores what it saved.
type encoder struct {
	out        []byte
	column     int
	indent     int
	whitespace bool    // the last character written is whitespace
	indention  bool    // the line holds only indentation so far
	entries    []entry // the entries of the mappings being written, a stack
}

// entry is a mapping's key and value, sorted together.
type entry struct {
	key   string
	value interface{}
}

// encode returns what sigsyaml.Marshal(v) returns for v (yaml.v2's bytes for the value json.Marshal(v) reads
// back as), or false when v holds anything the encoder leaves to the libraries (see the comment above). It
// writes over buf's storage, grown as needed.
func encode(v interface{}, buf []byte) ([]byte, bool) {
	e := encoder{out: buf[:0], indent: -1, whitespace: true, indention: true}
	// emitterc.go: the first document's start is implicit (nothing written), its end writes an indent
	// (the final line break) and no "...".
	if !e.node(v, false, 0) {
		return nil, false
	}
	e.writeIndent()
	return e.out, true
}

// node is yaml_emitter_emit_node (emitterc.go) for the value v, with the mapping context it sets (a key is
// written by blockMapping, not here: node is never in a simple key's context).
func (e *encoder) node(v interface{}, mapping bool, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch t := v.(type) {
	case nil:
		e.plainWord("null")
	case bool:
		if t {
			e.plainWord("true")
		} else {
			e.plainWord("false")
		}
	case int64:
		e.plainWord(strconv.FormatInt(t, 10))
	case int:
		e.plainWord(strconv.Itoa(t))
	case float64:
		// What yamlValue makes of it (json.Marshal's text as yaml.v2 resolves it), written as encode.go's
		// intv, uintv or floatv writes it. An integer below 2^53, as JSON decoding into interface{} makes
		// every number, is json.Marshal's digits (no exponent below 1e21), which yaml.v2 reads as an int.
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			e.plainWord(strconv.FormatInt(int64(t), 10))
			return true
		}
		y, ok := yamlValue(t, depth)
		if !ok {
			return false
		}
		switch n := y.(type) {
		case int:
			e.plainWord(strconv.Itoa(n))
		case uint64:
			e.plainWord(strconv.FormatUint(n, 10))
		case float64:
			s := strconv.FormatFloat(n, 'g', -1, 64)
			switch s {
			case "+Inf", "-Inf", "NaN": // json.Marshal refuses these; not reached
				return false
			}
			e.plainWord(s)
		default:
			return false
		}
	case string:
		if !printableText(t) {
			return false
		}
		e.scalar(t, analyzeScalar(t), requestedStyle(t), false)
	case map[string]interface{}:
		if t == nil {
			e.plainWord("null") // json.Marshal writes null
			return true
		}
		if len(t) == 0 {
			e.emptyFlow('{', '}')
			return true
		}
		return e.blockMapping(t, depth)
	case []interface{}:
		if t == nil {
			e.plainWord("null")
			return true
		}
		if len(t) == 0 {
			e.emptyFlow('[', ']')
			return true
		}
		return e.blockSequence(t, mapping, depth)
	default:
		return false
	}
	return true
}

// plainWord writes a scalar that yaml.v2 writes plain as it is: a number, a boolean or null (no space, break
// or indicator in it, so yaml_emitter_write_plain_scalar has nothing to fold).
func (e *encoder) plainWord(s string) {
	if !e.whitespace {
		e.put(' ')
	}
	e.reserve(len(s) + 1)
	e.out = append(e.out, s...)
	e.column += len(s)
	e.whitespace = false
	e.indention = false
}

// emptyFlow writes an empty mapping or sequence as yaml.v2 does: yaml_emitter_emit_mapping_start sees
// yaml_emitter_check_empty_mapping (or _sequence) and takes the flow style, whose first key state writes the
// opening indicator and whose end writes the closing one (emitterc.go yaml_emitter_emit_flow_mapping_key).
func (e *encoder) emptyFlow(open, closing byte) {
	e.writeIndicator(open, true, true, false)
	e.writeIndicator(closing, false, false, false)
}

// blockMapping is emitterc.go's yaml_emitter_emit_block_mapping_key and _value for a mapping's keys in
// keyList order (encode.go mapv).
func (e *encoder) blockMapping(m map[string]interface{}, depth int) bool {
	start := len(e.entries)
	for k, v := range m {
		if len(k) > maxKeyBytes || !printableText(k) {
			e.entries = e.entries[:start]
			return false
		}
		e.entries = append(e.entries, entry{k, v})
	}
	end := len(e.entries)
	if !sortEntries(e.entries[start:end]) {
		e.entries = e.entries[:start]
		return false
	}
	saved := e.indent
	e.increaseIndent(false, false)
	for i := start; i < end; i++ {
		k, v := e.entries[i].key, e.entries[i].value
		e.writeIndent()
		a := analyzeScalar(k)
		// yaml_emitter_check_simple_key: a scalar key is simple unless it is multi-line or longer than 128
		// bytes (no anchor or tag here).
		if !a.multiline && len(k) <= 128 {
			e.scalar(k, a, requestedStyle(k), true)
			e.writeIndicator(':', false, false, false)
		} else {
			e.writeIndicator('?', true, false, true)
			e.scalar(k, a, requestedStyle(k), false)
			e.writeIndent()
			e.writeIndicator(':', true, false, true)
		}
		if !e.node(v, true, depth+1) {
			e.entries = e.entries[:start]
			return false
		}
	}
	e.entries = e.entries[:start]
	e.indent = saved
	return true
}

// blockSequence is emitterc.go's yaml_emitter_emit_block_sequence_item: not indented under a mapping's key
// when the key's line holds more than indentation (mapping context and !indention).
func (e *encoder) blockSequence(s []interface{}, mapping bool, depth int) bool {
	saved := e.indent
	e.increaseIndent(false, mapping && !e.indention)
	for _, item := range s {
		e.writeIndent()
		e.writeIndicator('-', true, false, true)
		if !e.node(item, false, depth+1) {
			return false
		}
	}
	e.indent = saved
	return true
}

// increaseIndent is yaml_emitter_increase_indent (emitterc.go); the caller saves and restores the indent.
func (e *encoder) increaseIndent(flow, indentless bool) {
	if e.indent < 0 {
		if flow {
			e.indent = bestIndent
		} else {
			e.indent = 0
		}
	} else if !indentless {
		e.indent += bestIndent
	}
}

// scalar is yaml_emitter_emit_scalar (emitterc.go): the style settled, the indent increased as for a flow
// node, the scalar written.
func (e *encoder) scalar(s string, a scalarAnalysis, style scalarStyle, simpleKey bool) {
	style = selectScalarStyle(s, a, style, simpleKey)
	saved := e.indent
	e.increaseIndent(true, false)
	switch style {
	case plainStyle:
		e.writePlain(s, !simpleKey)
	case singleQuotedStyle:
		e.writeSingleQuoted(s, !simpleKey)
	case doubleQuotedStyle:
		e.writeDoubleQuoted(s, !simpleKey)
	case literalStyle:
		e.writeLiteral(s)
	}
	e.indent = saved
}

// requestedStyle is the style encode.go's stringv asks for (no tag, valid UTF-8: the encoder's strings are
// printable): literal for a string with a line feed, plain when it reads back as a string, else double-quoted.
func requestedStyle(s string) scalarStyle {
	switch {
	case strings.IndexByte(s, '\n') >= 0:
		return literalStyle
	case resolvesToString(s) && !isBase60Float(s):
		return plainStyle
	default:
		return doubleQuotedStyle
	}
}

// selectScalarStyle is yaml_emitter_select_scalar_style (emitterc.go) outside flow context, for an implicit
// scalar without a tag.
func selectScalarStyle(s string, a scalarAnalysis, style scalarStyle, simpleKey bool) scalarStyle {
	if simpleKey && a.multiline {
		style = doubleQuotedStyle
	}
	if style == plainStyle {
		if !a.blockPlainAllowed {
			style = singleQuotedStyle
		}
		if len(s) == 0 && simpleKey {
			style = singleQuotedStyle
		}
	}
	if style == singleQuotedStyle && !a.singleQuotedAllowed {
		style = doubleQuotedStyle
	}
	if style == literalStyle && (!a.blockAllowed || simpleKey) {
		style = doubleQuotedStyle
	}
	return style
}

// scalarAnalysis is the part of yaml_emitter_t's scalar_data that block output reads.
type scalarAnalysis struct {
	multiline           bool
	blockPlainAllowed   bool
	singleQuotedAllowed bool
	blockAllowed        bool
}

// analyzeScalar is yaml_emitter_analyze_scalar (emitterc.go) for a valid UTF-8 string, less what only flow
// context reads (flow_plain_allowed).
func analyzeScalar(value string) scalarAnalysis {
	if len(value) == 0 {
		return scalarAnalysis{blockPlainAllowed: true, singleQuotedAllowed: true}
	}
	var (
		blockIndicators, lineBreaks, specialCharacters                     bool
		leadingSpace, leadingBreak, trailingSpace, trailingBreak           bool
		breakSpace, spaceBreak, previousSpace, previousBreak, precededByWS bool
	)
	if strings.HasPrefix(value, "---") || strings.HasPrefix(value, "...") {
		blockIndicators = true
	}
	precededByWS = true
	for i, w := 0, 0; i < len(value); i += w {
		if i > 0 && ordinary(value[i]) {
			// A run of characters that only reset the previous-character flags: ordinary ones, and single
			// spaces between them (a space followed by an ordinary character is neither leading nor
			// trailing, follows no break and precedes no break, '#' or ':').
			j := i + 1
			for j < len(value) {
				if ordinary(value[j]) {
					j++
				} else if value[j] == ' ' && j+1 < len(value) && ordinary(value[j+1]) {
					j += 2
				} else {
					break
				}
			}
			w = j - i
			previousSpace, previousBreak, precededByWS = false, false, false
			continue
		}
		w = width(value[i])
		followedByWS := i+w >= len(value) || isBlank(value, i+w)
		if i == 0 {
			switch value[i] {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				blockIndicators = true
			case '?', ':':
				if followedByWS {
					blockIndicators = true
				}
			case '-':
				if followedByWS {
					blockIndicators = true
				}
			}
		} else {
			switch value[i] {
			case ':':
				if followedByWS {
					blockIndicators = true
				}
			case '#':
				if precededByWS {
					blockIndicators = true
				}
			}
		}
		if !isPrintable(value, i) { // the emitter is unicode: non-ASCII is not special
			specialCharacters = true
		}
		if value[i] == ' ' {
			if i == 0 {
				leadingSpace = true
			}
			if i+w == len(value) {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		} else if isBreak(value, i) {
			lineBreaks = true
			if i == 0 {
				leadingBreak = true
			}
			if i+w == len(value) {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		} else {
			previousSpace, previousBreak = false, false
		}
		precededByWS = isBlankz(value, i)
	}
	a := scalarAnalysis{multiline: lineBreaks, blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak {
		a.blockPlainAllowed = false
	}
	if trailingSpace {
		a.blockAllowed = false
	}
	if breakSpace {
		a.blockPlainAllowed = false
		a.singleQuotedAllowed = false
	}
	if spaceBreak || specialCharacters {
		a.blockPlainAllowed = false
		a.singleQuotedAllowed = false
		a.blockAllowed = false
	}
	if lineBreaks || blockIndicators {
		a.blockPlainAllowed = false
	}
	return a
}

// ordinary reports whether yaml_emitter_analyze_scalar, past a value's first character, does no more with c than
// clear its previous-space, previous-break and preceded-by-whitespace flags: printable ASCII that is neither
// blank nor a break, and neither ':' nor '#' (indicators after a space or before one; the other indicators
// only set flow_indicators, which block output does not read).
func ordinary(c byte) bool {
	return c > ' ' && c < 0x7F && c != ':' && c != '#'
}

// printableText is printable, eight bytes at a time over the ASCII (but DEL) that starts most strings.
func printableText(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte from 0x7F up has its high bit set, or gets it when one is added (no carry below it: a byte
		// that carries is 0xFF, caught itself).
		if (w|(w+0x0101010101010101))&0x8080808080808080 != 0 {
			break
		}
	}
	return printable(s[i:])
}

// Character classes of yamlprivateh.go, on a valid UTF-8 string.

func width(b byte) int {
	switch {
	case b&0x80 == 0x00:
		return 1
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 0
}

func isPrintable(b string, i int) bool {
	return b[i] == 0x0A ||
		b[i] >= 0x20 && b[i] <= 0x7E ||
		b[i] == 0xC2 && b[i+1] >= 0xA0 ||
		b[i] > 0xC2 && b[i] < 0xED ||
		b[i] == 0xED && b[i+1] < 0xA0 ||
		b[i] == 0xEE ||
		b[i] == 0xEF && !(b[i+1] == 0xBB && b[i+2] == 0xBF) && !(b[i+1] == 0xBF && (b[i+2] == 0xBE || b[i+2] == 0xBF))
}

func isBlank(b string, i int) bool { return b[i] == ' ' || b[i] == '\t' }

func isBreak(b string, i int) bool {
	return b[i] == '\r' || b[i] == '\n' ||
		b[i] == 0xC2 && b[i+1] == 0x85 ||
		b[i] == 0xE2 && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9)
}

func isBlankz(b string, i int) bool { return isBlank(b, i) || isBreak(b, i) || b[i] == 0 }

// startsWithBOM is yamlprivateh.go's is_bom, which looks at the start of the value whatever the position it
// is given: yaml_emitter_write_double_quoted_scalar then escapes every character of a value starting with a BOM.
func startsWithBOM(b string) bool {
	return len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF
}

// Writers of emitterc.go: put, put_break, write, write_break.

// reserve makes room for n more bytes, doubling the output (append grows large slices by a quarter, which
// allocates about five times the output of a large object in all).
func (e *encoder) reserve(n int) {
	if cap(e.out)-len(e.out) < n {
		e.out = slices.Grow(e.out, max(n, cap(e.out), 512))
	}
}

func (e *encoder) put(c byte) {
	e.reserve(1)
	e.out = append(e.out, c)
	e.column++
}

func (e *encoder) putBreak() {
	e.reserve(1)
	e.out = append(e.out, '\n')
	e.column = 0
}

// writeRun copies the characters of s from *i up to the first that stop tells apart, for a stop that holds
// for every byte from utf8.RuneSelf up, so that each byte copied is a character and counts one column, as
// write counts them.
func (e *encoder) writeRun(s string, i *int, stop asciiSet) {
	j := *i
	for j < len(s) && !stop.stops(s[j]) {
		j++
	}
	e.reserve(j - *i)
	e.out = append(e.out, s[*i:j]...)
	e.column += j - *i
	*i = j
}

// writeWords is writeRun for the flow scalar writers (plain, single- and double-quoted), across the single
// spaces between runs that they write as they are: a space is folded (yaml_emitter_write_plain_scalar and
// the quoted writers) only where breaks are allowed, the previous character is not a space, the next one
// neither, and the column is past best_width; between two characters of a run only the column decides.
func (e *encoder) writeWords(s string, i *int, stop asciiSet, allowBreaks bool) {
	j := *i
	for {
		for j < len(s) && !stop.stops(s[j]) {
			j++
		}
		if j+1 < len(s) && s[j] == ' ' && !stop.stops(s[j+1]) && (!allowBreaks || e.column+j-*i <= bestWidth) {
			j++
			continue
		}
		break
	}
	e.reserve(j - *i)
	e.out = append(e.out, s[*i:j]...)
	e.column += j - *i
	*i = j
}

// write copies the character at s[*i] and counts one column for it.
func (e *encoder) write(s string, i *int) {
	w := width(s[*i])
	e.reserve(w)
	e.out = append(e.out, s[*i:*i+w]...)
	e.column++
	*i += w
}

func (e *encoder) writeBreak(s string, i *int) {
	if s[*i] == '\n' {
		e.putBreak()
		*i++
		return
	}
	e.write(s, i)
	e.column = 0
}

// writeIndent is yaml_emitter_write_indent (emitterc.go).
func (e *encoder) writeIndent() {
	indent := max(e.indent, 0)
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.putBreak()
	}
	for e.column < indent {
		n := min(indent-e.column, len(spaces))
		e.reserve(n)
		e.out = append(e.out, spaces[:n]...)
		e.column += n
	}
	e.whitespace = true
	e.indention = true
}

// spaces are what writeIndent writes at most at once.
const spaces = "                                                                "

// writeIndicator is yaml_emitter_write_indicator (emitterc.go) for a one-character indicator.
func (e *encoder) writeIndicator(c byte, needWhitespace, isWhitespace, isIndention bool) {
	if needWhitespace && !e.whitespace {
		e.put(' ')
	}
	e.put(c)
	e.whitespace = isWhitespace
	e.indention = e.indention && isIndention
}

// writePlain is yaml_emitter_write_plain_scalar (emitterc.go).
func (e *encoder) writePlain(value string, allowBreaks bool) {
	if !e.whitespace {
		e.put(' ')
	}
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			// A plain scalar has no trailing space (analyzeScalar), so value[i+1] exists.
			if allowBreaks && !spaces && e.column > bestWidth && value[i+1] != ' ' {
				e.writeIndent()
				i++
			} else {
				e.write(value, &i)
			}
			spaces = true
		case isBreak(value, i):
			if !breaks && value[i] == '\n' {
				e.putBreak()
			}
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			if value[i] < utf8.RuneSelf && value[i] != '\r' {
				e.writeWords(value, &i, asciiSet{lo: plainStopsLo}, allowBreaks)
			} else {
				e.write(value, &i)
			}
			e.indention = false
			spaces, breaks = false, false
		}
	}
	e.whitespace = false
	e.indention = false
}

// asciiSet is a set of ASCII characters, a bit each: lo for 0x00-0x3F, hi for 0x40-0x7F.
type asciiSet struct{ lo, hi uint64 }

// stops reports whether c ends a run: c is in the set, or not ASCII.
func (a asciiSet) stops(c byte) bool {
	if c < 0x40 {
		return a.lo&(1<<c) != 0
	}
	return c >= utf8.RuneSelf || a.hi&(1<<(c-0x40)) != 0
}

// The characters that end a run each writer copies as it is (besides non-ASCII): for writePlain a space or
// a break, for writeSingleQuoted those and a quote, for writeDoubleQuoted a control character, a space, a
// quote, a backslash or DEL (what it escapes or may fold), for writeLiteral a break.
const (
	plainStopsLo        = 1<<' ' | 1<<'\n' | 1<<'\r'
	singleQuotedStopsLo = plainStopsLo | 1<<'\''
	doubleQuotedStopsLo = 1<<(' '+1) - 1 | 1<<'"'
	doubleQuotedStopsHi = 1<<('\\'-0x40) | 1<<(0x7F-0x40)
	literalStopsLo      = 1<<'\n' | 1<<'\r'
)

// writeSingleQuoted is yaml_emitter_write_single_quoted_scalar (emitterc.go).
func (e *encoder) writeSingleQuoted(value string, allowBreaks bool) {
	e.writeIndicator('\'', true, false, false)
	spaces, breaks := false, false
	for i := 0; i < len(value); {
		switch {
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 && value[i+1] != ' ' {
				e.writeIndent()
				i++
			} else {
				e.write(value, &i)
			}
			spaces = true
		case isBreak(value, i):
			if !breaks && value[i] == '\n' {
				e.putBreak()
			}
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			if value[i] == '\'' {
				e.put('\'')
				e.write(value, &i)
			} else if value[i] < utf8.RuneSelf && value[i] != '\r' {
				e.writeWords(value, &i, asciiSet{lo: singleQuotedStopsLo}, allowBreaks)
			} else {
				e.write(value, &i)
			}
			e.indention = false
			spaces, breaks = false, false
		}
	}
	e.writeIndicator('\'', false, false, false)
	e.whitespace = false
	e.indention = false
}

// writeDoubleQuoted is yaml_emitter_write_double_quoted_scalar (emitterc.go).
func (e *encoder) writeDoubleQuoted(value string, allowBreaks bool) {
	spaces := false
	e.writeIndicator('"', true, false, false)
	bom := startsWithBOM(value)
	for i := 0; i < len(value); {
		switch {
		case !isPrintable(value, i) || bom || isBreak(value, i) || value[i] == '"' || value[i] == '\\':
			r, w := utf8.DecodeRuneInString(value[i:])
			i += w
			e.put('\\')
			switch r {
			case 0x00:
				e.put('0')
			case 0x07:
				e.put('a')
			case 0x08:
				e.put('b')
			case 0x09:
				e.put('t')
			case 0x0A:
				e.put('n')
			case 0x0B:
				e.put('v')
			case 0x0C:
				e.put('f')
			case 0x0D:
				e.put('r')
			case 0x1B:
				e.put('e')
			case 0x22:
				e.put('"')
			case 0x5C:
				e.put('\\')
			case 0x85:
				e.put('N')
			case 0xA0:
				e.put('_')
			case 0x2028:
				e.put('L')
			case 0x2029:
				e.put('P')
			default:
				digits := 8
				switch {
				case r <= 0xFF:
					e.put('x')
					digits = 2
				case r <= 0xFFFF:
					e.put('u')
					digits = 4
				default:
					e.put('U')
				}
				for k := (digits - 1) * 4; k >= 0; k -= 4 {
					e.put("0123456789ABCDEF"[(r>>uint(k))&0x0F])
				}
			}
			spaces = false
		case value[i] == ' ':
			if allowBreaks && !spaces && e.column > bestWidth && i > 0 && i < len(value)-1 {
				e.writeIndent()
				if value[i+1] == ' ' {
					e.put('\\')
				}
				i++
			} else {
				e.write(value, &i)
			}
			spaces = true
		default:
			if value[i] < utf8.RuneSelf {
				e.writeWords(value, &i, asciiSet{lo: doubleQuotedStopsLo, hi: doubleQuotedStopsHi}, allowBreaks)
			} else {
				e.write(value, &i)
			}
			spaces = false
		}
	}
	e.writeIndicator('"', false, false, false)
	e.whitespace = false
	e.indention = false
}

// writeLiteral is yaml_emitter_write_literal_scalar with yaml_emitter_write_block_scalar_hints (emitterc.go).
func (e *encoder) writeLiteral(value string) {
	e.writeIndicator('|', true, false, false)
	if value[0] == ' ' || isBreak(value, 0) {
		e.writeIndicator('0'+bestIndent, false, false, false)
	}
	// The chomping indicator: "-" without a final break, "+" with more than one (or a lone break).
	i := len(value) - 1
	for value[i]&0xC0 == 0x80 {
		i--
	}
	switch {
	case !isBreak(value, i):
		e.writeIndicator('-', false, false, false)
	case i == 0:
		e.writeIndicator('+', false, false, false)
	default:
		i--
		for value[i]&0xC0 == 0x80 {
			i--
		}
		if isBreak(value, i) {
			e.writeIndicator('+', false, false, false)
		}
	}
	e.putBreak()
	e.indention = true
	e.whitespace = true
	breaks := true
	for i := 0; i < len(value); {
		if isBreak(value, i) {
			e.writeBreak(value, &i)
			e.indention = true
			breaks = true
			continue
		}
		if breaks {
			e.writeIndent()
		}
		if value[i] < utf8.RuneSelf && value[i] != '\r' {
			e.writeRun(value, &i, asciiSet{lo: literalStopsLo})
		} else {
			e.write(value, &i)
		}
		e.indention = false
		breaks = false
	}
}

// resolvesToString reports whether yaml.v2's resolve("", s) (resolve.go) gives a string's tag, that is whether
// s written plain reads back as the same string.
func resolvesToString(s string) bool {
	_, str := blockyaml.Resolve(s)
	return str
}

// base60float is encode.go's.
var base60float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// isBase60Float is encode.go's isBase60Float: YAML 1.1 sexagesimal floats are quoted for other parsers.
func isBase60Float(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if !(c == '+' || c == '-' || c >= '0' && c <= '9') || strings.IndexByte(s, ':') < 0 {
		return false
	}
	return base60float.MatchString(s)
}

// sortEntries sorts a mapping's entries as yaml.v2 sorts a map's keys (encode.go mapv: sort.Sort(keyList)), and reports false
// when keyList.Less does not order them consistently: it compares runs of digits as numbers from the first
// difference on, which is not transitive (for "0001", "000a" and "001" it holds a cycle), and on such keys
// yaml.v2's order depends on the order Go's map iteration gave it. Keys without a digit are ordered
// lexicographically by (is a letter, code point), a total order; others are checked pairwise.
func sortEntries(entries []entry) bool {
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.key == b.key:
			return 0
		case keyLess(a.key, b.key):
			return -1
		}
		return 1
	})
	digits := false
	for _, en := range entries {
		if mayHoldDigit(en.key) {
			digits = true
			break
		}
	}
	if !digits {
		return true
	}
	for i := range entries {
		for j := i + 1; j < len(entries); j++ {
			if !keyLess(entries[i].key, entries[j].key) {
				return false
			}
		}
	}
	return true
}

// mayHoldDigit reports whether s may hold a character unicode.IsDigit accepts: an ASCII digit, or any
// non-ASCII character (checked no further).
func mayHoldDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// keyLess is sorter.go's keyList.Less for two string keys, on bytes when both are ASCII (where a rune is a
// byte, unicode.IsLetter is [A-Za-z] and unicode.IsDigit [0-9]), on runes otherwise.
func keyLess(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return keyLessASCII(a, b)
	}
	return keyLessRunes([]rune(a), []rune(b))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isASCIIDigit(c byte) bool  { return c >= '0' && c <= '9' }

func keyLessASCII(ar, br string) bool {
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := isASCIILetter(ar[i]), isASCIILetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && isASCIIDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && isASCIIDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && isASCIIDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

func keyLessRunes(ar, br []rune) bool {
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al, bl := unicode.IsLetter(ar[i]), unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}
