// Package manifestyaml converts Kubernetes manifests between YAML streams and unstructured objects with the same
// results as the libraries Argo CD uses, byte for byte, at a fraction of their cost on large output:
//
//   - Split is gitops-engine's kube.SplitYAML (pkg/utils/kube/kube.go), which Argo CD applies to the output of
//     helm template and kustomize build. That function converts each document from YAML to JSON
//     (apimachinery's YAMLOrJSONDecoder, go.yaml.in/yaml/v2 underneath), then parses the JSON text a second
//     time as YAML (sigs.k8s.io/yaml.Unmarshal: yaml.v2 again, json.Marshal, json decode). The second YAML pass
//     is an identity on JSON that yaml.v2 produced, so Split decodes that JSON directly.
//   - Marshal is sigs.k8s.io/yaml.Marshal (yaml.go: json.Marshal, then JSONToYAML, which parses the JSON with
//     yaml.v2 and marshals what it got). Marshal builds the value yaml.v2 would have parsed from the JSON
//     directly and hands it to yaml.v2's encoder.
//
// Where the shortcut is not an identity, both fall back to the library call itself, so errors and edge cases
// stay the libraries' own: a stream that might be JSON (the decoder then keeps the input text), a string with a
// character YAML does not allow unescaped (json.Marshal writes U+007F-U+009F, U+FFFE and U+FFFF as they are,
// and yaml.v2's reader refuses them: readerc.go, "control characters are not allowed") or reads as a line
// break (U+0085, folded into a space), a key long enough to
// meet yaml.v2's 1024-character limit on a simple key (scannerc.go), nesting deep enough to meet its depth
// limit (max_flow_level), invalid UTF-8 (json.Marshal replaces it), and any Go type that JSON decoding does not
// produce.
package manifestyaml

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/argoproj/gitops-engine/pkg/utils/kube"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// Conservative bounds of the shortcut (see the package comment): a key is at most 6 JSON characters a byte
// (\u00XX) plus its quotes, so 160 bytes stay under yaml.v2's 1024-character simple key; 1,000 levels stay well
// under its 10,000.
const (
	maxKeyBytes = 160
	maxDepth    = 1000
)

// Split is kube.SplitYAML: the objects of a YAML (or JSON) stream, empty and null documents dropped. On an error
// it returns what kube.SplitYAML returns: nil when the stream does not split, else the objects before the
// document that does not decode.
func Split(data []byte) ([]*unstructured.Unstructured, error) {
	if mightBeJSON(data) {
		return kube.SplitYAML(data)
	}
	docs, err := kube.SplitYAMLToString(data)
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for _, doc := range docs {
		u, err := unmarshalDoc(doc)
		if err != nil {
			return objs, fmt.Errorf("failed to unmarshal manifest: %w", err)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// unmarshalDoc is kube.SplitYAML's sigs.k8s.io/yaml.Unmarshal of one document, which YAMLToJSONDecoder has
// turned into JSON with yaml.v2 and json.Marshal.
func unmarshalDoc(doc string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(doc)); err == nil && plain(u.Object, 0) {
		return u, nil
	}
	u = &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(doc), u); err != nil {
		return nil, err
	}
	return u, nil
}

// mightBeJSON is apimachinery's GuessJSONStream (util/yaml/decoder.go hasJSONPrefix), widened to the whole
// input: a stream whose first non-space character is '{' may be decoded as JSON, text as is.
func mightBeJSON(data []byte) bool {
	trim := bytes.TrimLeftFunc(data, unicode.IsSpace)
	return len(trim) > 0 && trim[0] == '{'
}

// Marshal is sigsyaml.Marshal(obj) for an object as JSON decoding makes them (maps with string keys, slices,
// strings, int64, float64, bool and nil), as WriteYAML and the diff's YAML use it.
func Marshal(obj map[string]interface{}) ([]byte, error) {
	v, ok := yamlValue(obj, 0)
	if !ok {
		return sigsyaml.Marshal(obj)
	}
	return yaml.Marshal(v)
}

// yamlValue is the value yaml.v2 decodes from json.Marshal(v) into an interface{} (what sigsyaml.JSONToYAML
// marshals), or false when v holds something the shortcut does not cover.
func yamlValue(v interface{}, depth int) (interface{}, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch t := v.(type) {
	case nil:
		return nil, true
	case string:
		return t, printable(t)
	case bool:
		return t, true
	case int64:
		return int(t), true // yaml.v2 resolve.go: an integer that fits in int is an int
	case int:
		return t, true
	case float64:
		// json.Marshal's text, resolved by yaml.v2 (an integral float is written without a fraction and comes
		// back as an int): rare in manifests, so done as the libraries do it.
		b, err := json.Marshal(t)
		if err != nil {
			return nil, false
		}
		var out interface{}
		if yaml.Unmarshal(b, &out) != nil {
			return nil, false
		}
		return out, true
	case map[string]interface{}:
		if t == nil {
			return nil, true // json.Marshal writes null
		}
		m := make(map[interface{}]interface{}, len(t))
		for k, e := range t {
			if len(k) > maxKeyBytes || !printable(k) {
				return nil, false
			}
			ev, ok := yamlValue(e, depth+1)
			if !ok {
				return nil, false
			}
			m[k] = ev
		}
		return m, true
	case []interface{}:
		if t == nil {
			return nil, true
		}
		s := make([]interface{}, len(t))
		for i, e := range t {
			ev, ok := yamlValue(e, depth+1)
			if !ok {
				return nil, false
			}
			s[i] = ev
		}
		return s, true
	}
	return nil, false
}

// plain reports whether the decoded object holds only what the shortcut in Split covers: keys within the
// simple-key limit, strings yaml.v2's reader accepts once json.Marshal wrote them, bounded nesting.
func plain(v interface{}, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch t := v.(type) {
	case string:
		return printable(t)
	case map[string]interface{}:
		for k, e := range t {
			if len(k) > maxKeyBytes || !printable(k) || !plain(e, depth+1) {
				return false
			}
		}
	case []interface{}:
		for _, e := range t {
			if !plain(e, depth+1) {
				return false
			}
		}
	}
	return true
}

// printable reports whether json.Marshal writes s in characters yaml.v2's reader accepts (readerc.go
// yaml_parser_update_buffer) and without replacing any of it: valid UTF-8 whose characters are either escaped
// by json.Marshal (below U+0020, U+2028, U+2029) or YAML-printable, and not a line break to YAML: U+0085 (NEL)
// is printable, but yaml.v2 folds it into a space inside a quoted scalar.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < utf8.RuneSelf && s[i] != 0x7F {
			continue
		}
		// Slow path from the first byte that needs a look.
		for _, r := range s[i:] {
			switch {
			case r < 0x7F, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD && r != utf8.RuneError, r >= 0x10000 && r <= 0x10FFFF:
			case r == utf8.RuneError:
				return false // invalid UTF-8 (json.Marshal writes U+FFFD) or a literal U+FFFD: either way, the library
			default:
				return false
			}
		}
		return true
	}
	return true
}
