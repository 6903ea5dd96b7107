package manifestyaml

// JSONValue is what apimachinery's JSON decoding (integers kept as int64) makes of sigs.k8s.io/yaml's
// YAMLToJSON output for a value go.yaml.in/yaml/v2 decoded (blockyaml.Decode's, say): maps with string keys,
// slices, strings, int64, float64, bool and nil. json.Marshal of it writes YAMLToJSON's bytes. It reports false
// where the shortcut does not cover v (a key that is not a string, a string yaml.v2's reader would refuse once
// JSON-escaped, NaN, deep nesting): the caller then asks the library.
func JSONValue(v interface{}) (interface{}, bool) { return jsonValue(v, 0) }
