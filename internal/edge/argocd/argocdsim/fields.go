package argocdsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// fieldFilter is the `fields` query parameter of the application stream, as argoproj/pkg's grpc/http marshaler
// applies it (grpc/http/forwarders.go messageMarshaler.processItem; Argo CD routes Watch through it in
// pkg/apiclient/application/forwarder_overwrite.go): "a.b,c" keeps only those dot-joined paths of object keys
// and what lies under them, "-a.b,c" keeps everything but them. Arrays are transparent (a path names a key of
// every element), and a path is kept on the way down when a listed field merely starts with it (a string
// prefix, as there: "status.sync" is walked into for "status.syncResult"). Paths start at the message
// ("result.application.status.resources").
//
// Argo CD decodes the message into a map and encodes it again, so its filtered messages have their keys
// sorted; this filter keeps the original order. Both are the same JSON value (TestFieldFilterMatchesArgoproj).
type fieldFilter struct {
	fields  map[string]bool
	exclude bool
}

// parseFieldFilter reads the parameter; nil when it is empty (nothing is filtered).
func parseFieldFilter(q string) *fieldFilter {
	if q == "" {
		return nil
	}
	f := &fieldFilter{fields: map[string]bool{}}
	if rest, ok := strings.CutPrefix(q, "-"); ok {
		q, f.exclude = rest, true
	}
	for _, p := range strings.Split(q, ",") {
		f.fields[p] = true
	}
	return f
}

// apply returns msg, one JSON value, filtered. It works on the bytes (a few microseconds for an application)
// instead of a decode and an encode (tens of microseconds) because every message of a filtered stream goes
// through it.
func (f *fieldFilter) apply(msg []byte) ([]byte, error) {
	s := &jsonScanner{b: msg}
	out, err := f.value(s, make([]byte, 0, len(msg)), make([]byte, 0, 128), true)
	if err != nil {
		return nil, err
	}
	if s.ws(); s.i != len(s.b) {
		return nil, errors.New("fields: trailing data after the message")
	}
	return out, nil
}

// value copies the value at s to out, filtering the keys of objects under path (walk false: copied whole).
func (f *fieldFilter) value(s *jsonScanner, out, path []byte, walk bool) ([]byte, error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, errUnexpectedEnd
	}
	switch c := s.b[s.i]; {
	case !walk || (c != '{' && c != '['):
		start := s.i
		if err := s.skip(); err != nil {
			return nil, err
		}
		return append(out, s.b[start:s.i]...), nil
	case c == '[':
		s.i++
		out = append(out, '[')
		for n := 0; ; n++ {
			if s.ws(); s.i < len(s.b) && s.b[s.i] == ']' && n == 0 {
				s.i++
				return append(out, ']'), nil
			}
			if n > 0 {
				out = append(out, ',')
			}
			var err error
			if out, err = f.value(s, out, path, true); err != nil {
				return nil, err
			}
			if done, err := s.next(']'); err != nil || done {
				return append(out, ']'), err
			}
		}
	default: // '{'
		s.i++
		out = append(out, '{')
		kept := 0
		for n := 0; ; n++ {
			if s.ws(); s.i < len(s.b) && s.b[s.i] == '}' && n == 0 {
				s.i++
				return append(out, '}'), nil
			}
			rawKey, key, err := s.key()
			if err != nil {
				return nil, err
			}
			sub := path
			if len(sub) > 0 {
				sub = append(sub, '.')
			}
			sub = append(sub, key...)
			keep, descend := f.decide(sub)
			if keep {
				if kept > 0 {
					out = append(out, ',')
				}
				kept++
				out = append(append(out, rawKey...), ':')
				if out, err = f.value(s, out, sub, descend); err != nil {
					return nil, err
				}
			} else if err := s.skipValue(); err != nil {
				return nil, err
			}
			if done, err := s.next('}'); err != nil || done {
				return append(out, '}'), err
			}
		}
	}
}

// decide is processItem's choice for a key at path: keep it, and if so whether to filter inside it.
func (f *fieldFilter) decide(path []byte) (keep, descend bool) {
	listed := f.fields[string(path)]
	if f.exclude {
		return !listed, true
	}
	if listed {
		return true, false
	}
	for k := range f.fields {
		if strings.HasPrefix(k, string(path)) {
			return true, true
		}
	}
	return false, false
}

var errUnexpectedEnd = errors.New("fields: unexpected end of the message")

// jsonScanner walks one JSON text without decoding it.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next consumes the separator after an element: ',' (done false) or end (done true).
func (s *jsonScanner) next(end byte) (done bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, errUnexpectedEnd
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case end:
		s.i++
		return true, nil
	}
	return false, errors.New("fields: malformed message")
}

// key reads an object key and its colon: the key as written and decoded.
func (s *jsonScanner) key() (raw, key []byte, err error) {
	s.ws()
	start := s.i
	if err := s.skipString(); err != nil {
		return nil, nil, err
	}
	raw = s.b[start:s.i]
	key = raw[1 : len(raw)-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		var k string
		if err := json.Unmarshal(raw, &k); err != nil {
			return nil, nil, err
		}
		key = []byte(k)
	}
	if s.ws(); s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, nil, errors.New("fields: malformed message: no colon after a key")
	}
	s.i++
	return raw, key, nil
}

func (s *jsonScanner) skipValue() error {
	s.ws()
	return s.skip()
}

// skip moves past the value starting at s.i.
func (s *jsonScanner) skip() error {
	if s.i >= len(s.b) {
		return errUnexpectedEnd
	}
	switch s.b[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if err := s.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return nil
				}
			}
			s.i++
		}
		return errUnexpectedEnd
	default: // number, true, false, null
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.i == start {
					return errors.New("fields: malformed message")
				}
				return nil
			}
			s.i++
		}
		return nil
	}
}

func (s *jsonScanner) skipString() error {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return errors.New("fields: malformed message: a string was expected")
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return nil
		}
	}
	return errUnexpectedEnd
}
