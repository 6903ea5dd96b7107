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
