package helmtemplate

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/fleetwave/fleetwave/internal/kit/yamlcodec/blockyaml"
)

// SimpleHead is both SDKs' SimpleHead (helm.sh/helm/v3@v3.19.4 pkg/releaseutil/manifest.go, helm.sh/helm/v4@v4.3.1
// pkg/release/v1/util/manifest.go) field for field and tag for tag, so that each converts to and from it.
type SimpleHead struct {
	Version  string `json:"apiVersion"`
	Kind     string `json:"kind,omitempty"`
	Metadata *struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata,omitempty"`
}

// maxFastDepth bounds the nesting the fast path answers for: encoding/json's encoder starts looking for pointer
// cycles past 1,000 nested maps and slices (encode.go startDetectingCyclesAfter), where empty slices could
// look like one.
const maxFastDepth = 500

// fastHead is what sigs.k8s.io/yaml@v1.6.0's Unmarshal(doc, &head) stores in a SimpleHead, read from
// blockyaml.Decode's value (exactly yaml.v2's), and true; or false whenever the result or the error could differ
// in any way, and then the caller asks sigs.k8s.io/yaml. Unmarshal (yaml.go) decodes doc with yaml.v2 into an
// interface{}, converts it with convertToJSONableObject (map keys to strings; a number or bool to a string where
// the target field is a string), json.Marshal's the whole value and json-decodes it into the head, matching
// field names case-insensitively. So this answers only for: an empty document or a mapping with string keys;
// apiVersion, kind, metadata.name strings (or null) of valid UTF-8; metadata a mapping (or null) with string keys;
// annotations a mapping (or null) of valid UTF-8 strings to strings; no other key at those three levels that
// folds to a field name (any non-ASCII key counts as one: encoding/json folds K and ſ too); and anywhere in the
// document only map keys convertToJSONableObject converts (string, int, int64, float64, bool), no NaN or
// infinity (json.Marshal's errors) and no deep nesting.
func fastHead(doc string) (SimpleHead, bool) {
	var h SimpleHead
	v, ok := blockyaml.Decode([]byte(doc))
	if !ok {
		return h, false
	}
	if v == nil {
		return h, true // json "null": the head stays zero
	}
	top, ok := v.(map[interface{}]interface{})
	if !ok {
		return h, false
	}
	for k, val := range top {
		key, ok := k.(string)
		if !ok {
			return h, false
		}
		switch key {
		case "apiVersion":
			if h.Version, ok = headString(val); !ok {
				return h, false
			}
		case "kind":
			if h.Kind, ok = headString(val); !ok {
				return h, false
			}
		case "metadata":
			if val == nil {
				continue // json null leaves the pointer nil
			}
			m, ok := val.(map[interface{}]interface{})
			if !ok || !fastMetadata(m, &h) {
				return h, false
			}
		default:
			if folds(key, "apiVersion", "kind", "metadata") || !jsonable(val, 1) {
				return h, false
			}
		}
	}
	return h, true
}

// fastMetadata reads metadata's name and annotations into h.Metadata, as fastHead does the head.
func fastMetadata(m map[interface{}]interface{}, h *SimpleHead) bool {
	h.Metadata = &struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	}{}
	for k, val := range m {
		key, ok := k.(string)
		if !ok {
			return false
		}
		switch key {
		case "name":
			if h.Metadata.Name, ok = headString(val); !ok {
				return false
			}
		case "annotations":
			if val == nil {
				continue
			}
			a, ok := val.(map[interface{}]interface{})
			if !ok {
				return false
			}
			annotations := make(map[string]string, len(a))
			for ak, av := range a {
				ks, ok := ak.(string)
				if !ok || !utf8.ValidString(ks) {
					return false
				}
				vs, ok := av.(string) // a null value is a doubt too
				if !ok || !utf8.ValidString(vs) {
					return false
				}
				annotations[ks] = vs
			}
			h.Metadata.Annotations = annotations
		default:
			if folds(key, "name", "annotations") || !jsonable(val, 2) {
				return false
			}
		}
	}
	return true
}

// headString is a string field's value: a string of valid UTF-8 (json.Marshal would replace invalid bytes), or
// "" for null. Numbers and bools, which convertToJSONableObject formats into strings, are left to it.
func headString(v interface{}) (string, bool) {
	switch s := v.(type) {
	case nil:
		return "", true
	case string:
		return s, utf8.ValidString(s)
	}
	return "", false
}

// folds reports that encoding/json could match key (not exactly one of names) to one of names: it matches
// field names case-insensitively, with Unicode folds for non-ASCII keys.
func folds(key string, names ...string) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return true
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// jsonable reports that convertToJSONableObject and json.Marshal take v (a value yaml.v2 decodes) without an
// error: map keys of the types it converts to strings, no NaN or infinity, nesting within maxFastDepth.
func jsonable(v interface{}, depth int) bool {
	switch x := v.(type) {
	case nil, bool, int, int64, uint64, string:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case []interface{}:
		if depth >= maxFastDepth {
			return false
		}
		for _, e := range x {
			if !jsonable(e, depth+1) {
				return false
			}
		}
		return true
	case map[interface{}]interface{}:
		if depth >= maxFastDepth {
			return false
		}
		for k, e := range x {
			switch k.(type) {
			case string, int, int64, float64, bool:
			default:
				return false
			}
			if !jsonable(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
