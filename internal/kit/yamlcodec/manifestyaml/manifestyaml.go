// Package manifestyaml converts Kubernetes manifests between YAML streams and unstructured objects with the same
// results as the libraries Argo CD uses, byte for byte, at a fraction of their cost on large output:
//
//   - Split is gitops-engine's kube.SplitYAML (pkg/utils/kube/kube.go), which Argo CD applies to the output of
//     helm template and kustomize build. That function converts each document from YAML to JSON
//     (apimachinery's YAMLOrJSONDecoder, go.yaml.in/yaml/v2 underneath), then parses the JSON text a second
//     time as YAML (sigs.k8s.io/yaml.Unmarshal: yaml.v2 again, json.Marshal, json decode). The second YAML pass
//     is an identity on JSON that yaml.v2 produced, so Split decodes that JSON directly.
//   - Marshal is sigs.k8s.io/yaml.Marshal (yaml.go: json.Marshal, then JSONToYAML, which parses the JSON with
//     yaml.v2 and marshals what it got). Marshal writes the bytes yaml.v2's encoder writes for the value it
//     would have parsed from the JSON itself (encode.go), ported from go.yaml.in/yaml/v2 v2.4.4: the style of
//     a string from encode.go (stringv) and resolve.go (blockyaml.Resolve, shared with the decoder), the key
//     order from sorter.go (keyList.Less), the layout, scalar analysis, style selection, line folding at 80
//     columns and escapes from emitterc.go (yaml_emitter_emit_block_*, yaml_emitter_analyze_scalar,
//     yaml_emitter_select_scalar_style, yaml_emitter_write_*), the character classes from yamlprivateh.go.
//     What it does not cover goes to yaml.v2's encoder (also for key sets yaml.v2 itself orders by Go's
//     map iteration, keyList.Less being intransitive on some keys with digits).
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
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/utils/kube"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
)

// Conservative bounds of the shortcut (see the package comment): a key is at most 6 JSON characters a byte
// (\u00XX) plus its quotes, so 160 bytes stay under yaml.v2's 1024-character simple key; 1,000 levels stay well
// under its 10,000.
const (
	maxKeyBytes = 160
	maxDepth    = 1000
)

// Split is kube.SplitYAML: the objects of a YAML (or JSON) stream, empty and null documents dropped. The
// documents are split as YAMLToJSONDecoder splits them (apimachinery's YAMLReader) and converted on all CPUs,
// in order. On any error it returns what kube.SplitYAML returns, by calling it: nil when the stream does not
// split, else the objects before the document that does not decode.
func Split(data []byte) ([]*unstructured.Unstructured, error) {
	if mightBeJSON(data) {
		return kube.SplitYAML(data)
	}
	docs, ok := splitDocuments(data)
	if !ok {
		return kube.SplitYAML(data)
	}
	objs := make([]*unstructured.Unstructured, len(docs))
	failed := atomic.Bool{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(docs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(docs) {
					return
				}
				u, skip, ok := convertDoc(docs[i])
				if !ok {
					failed.Store(true)
					return
				}
				if !skip {
					objs[i] = u
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return kube.SplitYAML(data)
	}
	out := objs[:0]
	for _, u := range objs {
		if u != nil {
			out = append(out, u)
		}
	}
	return out, nil
}

// splitDocuments is the documents apimachinery's YAMLReader reads from data (k8s.io/apimachinery
// pkg/util/yaml/decoder.go YAMLReader.Read over LineReader), as slices of data where it can: each line as
// bufio.Reader.ReadLine returns it plus a line feed; a line that starts with "---" ends a document, unless none
// has begun (then it is the document's first line), and may only be followed by white space or a comment. false
// when YAMLReader refuses a separator, or when data holds a carriage return (ReadLine drops one before a line
// feed, so the lines are not data's): the caller then leaves the stream to kube.SplitYAML. None is empty.
// Read a line at a time, a large chart's megabytes took 16 ms, ahead of their conversion on all CPUs.
func splitDocuments(data []byte) ([][]byte, bool) {
	if bytes.IndexByte(data, '\r') >= 0 {
		return nil, false
	}
	var docs [][]byte
	start, pos := 0, 0 // the current document's first byte, the next line's
	for pos < len(data) {
		next := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		if line := data[pos:next]; bytes.HasPrefix(line, []byte("---")) {
			if rest := bytes.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				return nil, false // YAMLReader: "invalid Yaml document separator"
			}
			if pos > start {
				docs = append(docs, data[start:pos])
				start = next
			}
		}
		pos = next
	}
	if last := data[start:]; len(last) > 0 {
		if last[len(last)-1] != '\n' {
			last = append(last[:len(last):len(last)], '\n') // LineReader ends every line with one
		}
		docs = append(docs, last)
	}
	return docs, true
}

// convertDoc is what kube.SplitYAML does with one document: YAMLToJSONDecoder's sigs.k8s.io/yaml.Unmarshal
// into a RawExtension (yaml.v2, convertToJSONableObject, json.Marshal, the JSON kept as is), the JSON trimmed
// and dropped when empty or null, then sigs.k8s.io/yaml.Unmarshal of that JSON into an Unstructured, whose
// JSON decoding keeps integers as int64 (see the package comment). The JSON in the middle is skipped: the
// value yaml.v2 parsed is converted to the object that JSON decodes to (jsonValue). ok is false on an error:
// the caller asks kube.SplitYAML for it. The block-style YAML charts render is decoded by blockyaml, to the
// value yaml.v2 decodes, several times faster; the rest by yaml.v2.
func convertDoc(doc []byte) (u *unstructured.Unstructured, skip, ok bool) {
	y, decoded := blockyaml.Decode(doc)
	if decoded || yaml.Unmarshal(doc, &y) == nil { // sigs.k8s.io/yaml's unmarshalFn is go.yaml.in/yaml/v2's Unmarshal
		if y == nil {
			return nil, true, true // JSON null: RawExtension keeps nothing
		}
		if v, ok := jsonValue(y, 0); ok {
			if m, ok := v.(map[string]interface{}); ok {
				// Unstructured's decoding refuses an object without a kind (UnstructuredJSONScheme.Decode).
				if kind, _ := m["kind"].(string); kind != "" {
					return &unstructured.Unstructured{Object: m}, false, true
				}
			}
		}
	}
	return convertDocJSON(doc)
}

// jsonValue is the value Unstructured's JSON decoding (k8s.io/apimachinery/pkg/util/json, integers kept as
// int64) makes of json.Marshal(convertToJSONableObject(v)) (sigs.k8s.io/yaml yaml.go) for a value yaml.v2
// decoded, or false when v holds what the shortcut does not cover (see plain): then the libraries decide.
func jsonValue(v interface{}, depth int) (interface{}, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch t := v.(type) {
	case nil, bool:
		return t, true
	case string:
		return t, printable(t)
	case int:
		return int64(t), true
	case int64:
		return t, true
	case uint64:
		if t > math.MaxInt64 {
			return nil, false
		}
		return int64(t), true
	case float64:
		// json.Marshal's text, read as the decoder reads it: an integer (no fraction or exponent) that fits
		// is an int64, anything else a float64.
		b, err := json.Marshal(t)
		if err != nil {
			return nil, false // NaN and infinities: json.Marshal's error, from the library
		}
		if !bytes.ContainsAny(b, ".eE") {
			if i, err := strconv.ParseInt(string(b), 10, 64); err == nil {
				return i, true
			}
		}
		f, err := strconv.ParseFloat(string(b), 64)
		return f, err == nil
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, e := range t {
			ks, ok := k.(string) // other keys (numbers, booleans) are converted by the library
			if !ok || len(ks) > maxKeyBytes || !printable(ks) {
				return nil, false
			}
			ev, ok := jsonValue(e, depth+1)
			if !ok {
				return nil, false
			}
			m[ks] = ev
		}
		return m, true
	case []interface{}:
		s := make([]interface{}, len(t))
		for i, e := range t {
			ev, ok := jsonValue(e, depth+1)
			if !ok {
				return nil, false
			}
			s[i] = ev
		}
		return s, true
	}
	return nil, false
}

// convertDocJSON is convertDoc through the JSON, as the libraries do it.
func convertDocJSON(doc []byte) (u *unstructured.Unstructured, skip, ok bool) {
	var ext k8sruntime.RawExtension
	if err := sigsyaml.Unmarshal(doc, &ext); err != nil {
		return nil, false, false
	}
	raw := bytes.TrimSpace(ext.Raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, true, true
	}
	u = &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err == nil && plain(u.Object, 0) {
		return u, false, true
	}
	u = &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal(raw, u); err != nil {
		return nil, false, false
	}
	return u, false, true
}

// mightBeJSON is apimachinery's GuessJSONStream (util/yaml/decoder.go hasJSONPrefix), widened to the whole
// input: a stream whose first non-space character is '{' may be decoded as JSON, text as is.
func mightBeJSON(data []byte) bool {
	trim := bytes.TrimLeftFunc(data, unicode.IsSpace)
	return len(trim) > 0 && trim[0] == '{'
}

// Marshal is sigsyaml.Marshal(obj) for an object as JSON decoding makes them (maps with string keys, slices,
// strings, int64, float64, bool and nil), as WriteYAML and the diff's YAML use it. The encoder of encode.go
// writes yaml.v2's bytes itself; what it leaves to the libraries goes to yaml.v2's encoder, given obj as it is
// when direct holds, else yamlValue's copy, else to sigsyaml.Marshal.
func Marshal(obj map[string]interface{}) ([]byte, error) {
	if out, ok := encode(obj, nil); ok {
		return out, nil
	}
	if direct(obj, 0) {
		return yaml.Marshal(obj)
	}
	v, ok := yamlValue(obj, 0)
	if !ok {
		return sigsyaml.Marshal(obj)
	}
	return yaml.Marshal(v)
}

// MarshalEach is Marshal of each object, on all CPUs: out[i] and errs[i] are Marshal(objs[i]). Each CPU
// encodes in a buffer of its own and copies each object's bytes out of it: one allocation of the output's
// size per object.
func MarshalEach(objs []map[string]interface{}) (out [][]byte, errs []error) {
	out, errs = make([][]byte, len(objs)), make([]error, len(objs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := int(next.Add(1) - 1); i < len(objs); i = int(next.Add(1) - 1) {
				if b, ok := encode(objs[i], buf); ok {
					out[i], buf = bytes.Clone(b), b
					continue
				}
				out[i], errs[i] = Marshal(objs[i])
			}
		}()
	}
	wg.Wait()
	return out, errs
}

// direct reports whether yaml.v2 encodes v as it encodes yamlValue(v), so that Marshal need not copy it: the
// copy only rewrites what yaml.v2 would write differently from the JSON's reading. Its encoder (encode.go)
// writes int64 and int alike (intv), sorts the keys of a map[string]interface{} as those of the
// map[interface{}]interface{} (keyList unwraps interfaces) and reaches the same strings, booleans and nulls;
// what it writes otherwise is a float64 (rewritten through its JSON text by yamlValue) and a nil map or slice
// (JSON's null, yaml.v2's {} or []), and the strings and keys the shortcut leaves to the library. On the
// corpus this skips copying every object, about 5 MB of maps for kube-prometheus-stack.
func direct(v interface{}, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch t := v.(type) {
	case nil, bool, int64, int:
		return true
	case string:
		return printable(t)
	case map[string]interface{}:
		if t == nil {
			return false
		}
		for k, e := range t {
			if len(k) > maxKeyBytes || !printable(k) || !direct(e, depth+1) {
				return false
			}
		}
		return true
	case []interface{}:
		if t == nil {
			return false
		}
		for _, e := range t {
			if !direct(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
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
