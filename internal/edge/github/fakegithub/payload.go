package fakegithub

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Payload reads a webhook payload file (a fixture of testdata/fixtures/webhooks, in GitHub's shape) and sets the
// given fields, named by dotted paths ("pull_request.head.sha"), keeping everything else as the file has it;
// numbers keep their text. A path to a field the payload does not have fails the test: a test may only set what
// GitHub sends, and the fixtures' shape is checked against GitHub's recorded deliveries.
func Payload(t testing.TB, file string, set map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for path, v := range set {
		keys := strings.Split(path, ".")
		m := doc
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				t.Fatalf("%s: no object at %q of %s", file, k, path)
			}
			m = next
		}
		if _, ok := m[keys[len(keys)-1]]; !ok {
			t.Fatalf("%s: no field %s", file, path)
		}
		m[keys[len(keys)-1]] = v
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
