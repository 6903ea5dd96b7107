package outputcap

import (
	"errors"
	"testing"
)

func TestCountDocuments(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
	}{
		{"empty", "", 0},
		{"one without separator", "a: 1\n", 1},
		{"leading separator", "---\na: 1\n", 1},
		{"two", "a: 1\n---\nb: 2\n", 2},
		{"empty documents are not counted", "---\n---\n\n---\n# only a comment\n---\na: 1\n---\n", 1},
		{"separator with a comment", "a: 1\n--- # next\nb: 2", 2},
		{"separator with trailing space and CRLF", "a: 1\r\n--- \r\nb: 2\r\n", 2},
		{"--- inside a line is content", "a: '---'\n  ---x\n", 1},
		{"---x is not a separator", "a: 1\n---x\nb: 2\n", 1},
		{"indented content", "---\n  a: 1\n---\n\t\n", 1},
		{"helm's source comments", "---\n# Source: c/templates/a.yaml\napiVersion: v1\n---\n# Source: c/templates/b.yaml\n", 1},
	} {
		if got := CountDocuments(tc.in); got != tc.want {
			t.Errorf("%s: CountDocuments(%q) = %d, want %d", tc.name, tc.in, got, tc.want)
		}
		if got := CountDocuments([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: CountDocuments([]byte) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestLimits(t *testing.T) {
	l := Limits{MaxBytes: 10, MaxDocuments: 2}
	for _, tc := range []struct {
		name  string
		texts map[string]string
		want  string // "" passes
	}{
		{"at both caps", map[string]string{"a": "a: 1\n", "b": "b: 2\n"}, ""},
		{"one byte over", map[string]string{"a": "a: 1\n", "b": "b: 22\n"}, "refused (output-size): manifests exceed 10 bytes"},
		{"one document over", map[string]string{"a": "a\n---\nb\n", "b": "c"}, "refused (document-count): more than 2 objects"},
		{"none", nil, ""},
	} {
		err := l.Texts(tc.texts)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		case tc.want != "":
			var ex *Exceeded
			if !errors.As(err, &ex) {
				t.Errorf("%s: %T is no *Exceeded", tc.name, err)
			}
		}
	}
	// Zero limits: no cap.
	if err := (Limits{}).Texts(map[string]string{"a": "x\n---\ny\n"}); err != nil {
		t.Errorf("zero limits refused: %v", err)
	}
	m := Meter{Limits: Limits{MaxDocuments: 3}}
	for i, want := range []bool{false, false, true} {
		if err := m.Add(0, 1+i%2); (err != nil) != want {
			t.Errorf("Meter.Add #%d: %v, want refused=%v", i, err, want)
		}
	}
}
