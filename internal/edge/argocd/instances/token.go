package instances

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// maxTokenBytes bounds a token file (a service-account JWT is a few KiB).
const maxTokenBytes = 64 << 10

// credential is where an instance's token comes from: a variable (read once, at parse), a file (re-read when
// it changes) or a value given as is (Single).
type credential struct {
	env   string     // the variable's name
	file  *fileToken // the file
	value string     // the token of a variable or of Single; never printed
	given bool       // Single was given a token
}

func (c credential) describe() string {
	switch {
	case c.env != "":
		return "env " + c.env
	case c.file != nil:
		return "file " + c.file.path
	case c.given:
		return "[redacted]"
	}
	return ""
}

func (c credential) source() func() (string, error) {
	if c.file != nil {
		return c.file.token
	}
	v := c.value
	return func() (string, error) { return v, nil }
}

// fileToken reads a token from a file and reads it again when the file changes: one stat per call, the file
// read only when its identity (device and inode: an atomic rename, Kubernetes' symlink swap of projected
// volumes), size or modification time differs from the last read. A file that vanishes or turns empty is an
// error, never the old token.
type fileToken struct {
	path string

	mu   sync.Mutex
	info os.FileInfo // of the last read
	tok  string
}

func newFileToken(path string) *fileToken { return &fileToken{path: path} }

func (f *fileToken) token() (string, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return "", fmt.Errorf("token file %s: %s", f.path, pathErr(err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.info != nil && os.SameFile(f.info, fi) && f.info.Size() == fi.Size() && f.info.ModTime().Equal(fi.ModTime()) {
		return f.tok, nil
	}
	tok, err := readToken(f.path)
	if err != nil {
		f.info, f.tok = nil, ""
		return "", err
	}
	f.info, f.tok = fi, tok
	return tok, nil
}

// readToken reads a token file: its content without surrounding blanks (a Secret's file often ends in a
// newline). Errors name the file, never its content.
func readToken(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file %s: %s", path, pathErr(err))
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %s", path, pathErr(err))
	}
	if len(data) > maxTokenBytes {
		return "", fmt.Errorf("token file %s: larger than %d bytes, not a token", path, maxTokenBytes)
	}
	tok := strings.TrimSpace(string(data))
	switch {
	case tok == "":
		return "", fmt.Errorf("token file %s is empty", path)
	case strings.ContainsAny(tok, "\r\n"):
		return "", fmt.Errorf("token file %s holds several lines: want the token alone", path)
	}
	return tok, nil
}

// pathErr is err without the path a *fs.PathError repeats.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
