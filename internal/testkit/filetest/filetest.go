// Package filetest writes the file trees tests read (a repository checkout, a chart, a config directory) from a
// map of path to content. It is imported by tests only.
package filetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tree writes files (slash-separated path → content, as for Write) under a new temporary directory and returns
// the directory.
func Tree(tb testing.TB, files map[string]string) string {
	tb.Helper()
	root := tb.TempDir()
	for rel, content := range files {
		Write(tb, root, rel, content)
	}
	return root
}

// Write writes content to the slash-separated path rel under dir, creating the parent directories; a content
// starting with "->" makes a symbolic link to the rest ("->../other/o.yaml", "->/etc/hostname") instead of a
// file.
func Write(tb testing.TB, dir, rel, content string) {
	tb.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if target, ok := strings.CutPrefix(content, "->"); ok {
		if err := os.Symlink(target, p); err != nil {
			tb.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}
