package isolate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestResponseFraming: a response's objects travel after its line as they are, and come back the same, the
// next response after them; a worker claiming more than the output cap is not believed.
func TestResponseFraming(t *testing.T) {
	objs := []json.RawMessage{[]byte(`{"kind":"A","s":"line\nbreak"}`), []byte(`{}`), []byte(`{"kind":"B","n":1}`)}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	enc := json.NewEncoder(w)
	if err := writeResponse(w, enc, &response{ID: 1, Objects: objs, ReadFiles: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := writeResponse(w, enc, &response{ID: 2, Err: &wireError{Msg: "x"}}); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(buf.Bytes()))
	got, err := readResponse(r, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 1 || !reflect.DeepEqual(got.Objects, objs) || !reflect.DeepEqual(got.ReadFiles, []string{"a"}) {
		t.Fatalf("first response: %+v", got)
	}
	if got, err = readResponse(r, 1<<20); err != nil || got.ID != 2 || got.Err == nil || got.Objects != nil {
		t.Fatalf("second response: %+v, %v", got, err)
	}

	r = bufio.NewReader(bytes.NewReader(buf.Bytes()))
	if _, err := readResponse(r, 40); err == nil || !strings.Contains(err.Error(), "output cap") {
		t.Fatalf("objects of %d bytes under a cap of 40: err = %v", buf.Len(), err)
	}
	r = bufio.NewReader(strings.NewReader(`{"id":3,"objectSizes":[-1]}` + "\n"))
	if _, err := readResponse(r, 1<<20); err == nil {
		t.Fatal("a negative size was believed")
	}
}

// TestResponseFramingYAML: a response's YAML travels after its line, the next response after it, and its
// output counts its JSON's size; YAML past the bound for the output cap, or beside objects, is not believed.
func TestResponseFramingYAML(t *testing.T) {
	yml := []byte("kind: A\ns: |-\n  line\n  break\n---\n{}\n")
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	enc := json.NewEncoder(w)
	if err := writeResponse(w, enc, &response{ID: 1, YAML: yml, OutputBytes: 30}); err != nil {
		t.Fatal(err)
	}
	if err := writeResponse(w, enc, &response{ID: 2, Objects: []json.RawMessage{[]byte(`{"kind":"B"}`)}}); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(buf.Bytes()))
	got, err := readResponse(r, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 1 || !bytes.Equal(got.YAML, yml) || got.Objects != nil || got.outputBytes() != 30 {
		t.Fatalf("first response: %+v", got)
	}
	if got, err = readResponse(r, 1<<20); err != nil || got.ID != 2 || got.YAML != nil || got.outputBytes() != 12 {
		t.Fatalf("second response: %+v, %v", got, err)
	}

	for _, line := range []string{
		`{"id":3,"yamlSize":41}`,                  // past 4 × a cap of 10
		`{"id":3,"yamlSize":-1}`,                  // negative
		`{"id":3,"yamlSize":4,"objectSizes":[2]}`, // both
	} {
		r = bufio.NewReader(strings.NewReader(line + "\n" + strings.Repeat("x", 64)))
		if _, err := readResponse(r, 10); err == nil {
			t.Errorf("%s: believed", line)
		}
	}
}
