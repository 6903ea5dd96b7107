package isolate

import (
	"bytes"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// decodeObject is apimachinery's json.Unmarshal of one manifest into a map[string]any (k8s.io/apimachinery
// pkg/util/json: sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts, a fork of the old encoding/json
// decoder) read with encoding/json/jsontext's tokenizer, two to three times faster on the megabytes a large
// chart sends across the pipe. The same value: a number without a "." that fits in an int64 is an int64, any
// other a float64 (sigs.k8s.io/json internal/golang/encoding/json/decode.go convertNumber); a later duplicate
// name wins; invalid UTF-8 reads as U+FFFD; an empty array is an empty, non-nil []any.
func decodeObject(raw []byte) (map[string]any, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	v, err := readValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err == nil {
		return nil, errors.New("data after the manifest")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a manifest is a JSON object, not %T", v)
	}
	return m, nil
}

func readValue(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String() // a token is valid until the next read
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			m[name] = v
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		s := []any{}
		for dec.PeekKind() != ']' {
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		_, err := dec.ReadToken()
		return s, err
	case '"':
		return tok.String(), nil
	case '0':
		text := tok.String()
		if !strings.Contains(text, ".") {
			if i, err := strconv.ParseInt(text, 10, 64); err == nil {
				return i, nil
			}
		}
		return strconv.ParseFloat(text, 64)
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok.Kind())
}
