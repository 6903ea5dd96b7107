package filetest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTree(t *testing.T) {
	root := Tree(t, map[string]string{
		"a.yaml":            "kind: A\n",
		"deep/er/b.txt":     "b",
		"empty":             "",
		"links/to-a":        "->../a.yaml",
		"links/dangling":    "->missing",
		"links/dir-to-deep": "->../deep",
	})
	for _, tc := range []struct {
		rel, want string
		link      string // the link's target when rel is a symbolic link
		missing   bool   // reading through the link fails
	}{
		{rel: "a.yaml", want: "kind: A\n"},
		{rel: "deep/er/b.txt", want: "b"},
		{rel: "empty", want: ""},
		{rel: "links/to-a", want: "kind: A\n", link: "../a.yaml"},
		{rel: "links/dangling", link: "missing", missing: true},
		{rel: "links/dir-to-deep/er/b.txt", want: "b"},
	} {
		p := filepath.Join(root, filepath.FromSlash(tc.rel))
		if tc.link != "" {
			got, err := os.Readlink(p)
			if err != nil || got != tc.link {
				t.Errorf("%s: link to %q (%v), want %q", tc.rel, got, err, tc.link)
			}
		}
		b, err := os.ReadFile(p)
		if tc.missing {
			if err == nil {
				t.Errorf("%s: read %q, want an error", tc.rel, b)
			}
			continue
		}
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.rel, b, err, tc.want)
		}
	}
}

func TestWriteOverwritesInPlace(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ rel, content string }{
		{"a/b.yaml", "first"},
		{"a/b.yaml", "second"}, // a working copy changing between commits
		{"a/c.yaml", "beside"},
	} {
		Write(t, dir, tc.rel, tc.content)
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tc.rel)))
		if err != nil || string(b) != tc.content {
			t.Errorf("%s after writing %q: %q (%v)", tc.rel, tc.content, b, err)
		}
	}
}
