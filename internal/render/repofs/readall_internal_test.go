package repofs

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadAll: whatever size the stat said (right, too small: the file grew, too large: it shrank, zero: a
// special file), readAll returns what io.ReadAll does, and the reader's error.
func TestReadAll(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	for _, tc := range []struct {
		name string
		size int64
	}{{"exact", 10000}, {"grew", 100}, {"shrank", 50000}, {"zero", 0}, {"negative", -1}} {
		for _, r := range []struct {
			name string
			r    func() io.Reader
		}{
			{"whole", func() io.Reader { return bytes.NewReader(data) }},
			{"one byte at a time", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }},
			{"data then EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }},
			{"limited", func() io.Reader { return io.LimitReader(bytes.NewReader(data), 4001) }},
		} {
			want, wantErr := io.ReadAll(r.r())
			got, err := readAll(r.r(), tc.size)
			if !bytes.Equal(got, want) || err != wantErr {
				t.Errorf("%s, %s: %d bytes, %v; want %d, %v", tc.name, r.name, len(got), err, len(want), wantErr)
			}
		}
	}
	boom := errors.New("boom")
	if _, err := readAll(iotest.ErrReader(boom), 10); err != boom {
		t.Errorf("error %v, want %v", err, boom)
	}
}
