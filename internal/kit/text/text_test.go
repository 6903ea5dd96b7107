package text

import "testing"

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		word string
		want string
	}{
		{0, "app", "0 apps"},
		{1, "app", "1 app"},
		{2, "app", "2 apps"},
		{1, "batch", "1 batch"},
		{3, "batch", "3 batches"},
		{12, "resource", "12 resources"},
	} {
		if got := Plural(tc.n, tc.word); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.word, got, tc.want)
		}
	}
}

func TestShort(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{sha, 7, "0123456"},
		{sha, 12, "0123456789ab"},
		{"abc", 7, "abc"},
		{"0123456", 7, "0123456"},
		{"", 7, ""},
	} {
		if got := Short(tc.s, tc.n); got != tc.want {
			t.Errorf("Short(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestShortRev(t *testing.T) {
	for _, tc := range []struct{ rev, want string }{
		{"0123456789abcdef0123456789abcdef01234567", "0123456789"},                                 // SHA-1
		{"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "0123456789"},         // SHA-256
		{"release-2024-with-a-very-long-branch-name", "release-2024-with-a-very-long-branch-name"}, // 41: a name
		{"0123456789abcdef", "0123456789abcdef"},                                                   // an abbreviation stays
		{"main", "main"},
		{"", ""},
	} {
		if got := ShortRev(tc.rev); got != tc.want {
			t.Errorf("ShortRev(%q) = %q, want %q", tc.rev, got, tc.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"one", "one"},
		{"one\ntwo\nthree", "one"},
		{"\nafter a blank first line", ""},
		{"trailing\n", "trailing"},
		{"", ""},
	} {
		if got := FirstLine(tc.s); got != tc.want {
			t.Errorf("FirstLine(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"one", "one"},
		{"error: a\n  b\tc\r\n", "error: a b c"},
		{"  padded  ", "padded"},
		{"\n\n", ""},
	} {
		if got := OneLine(tc.s); got != tc.want {
			t.Errorf("OneLine(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestFirstOf(t *testing.T) {
	for _, tc := range []struct {
		items []string
		n     int
		want  string
	}{
		{nil, 3, ""},
		{[]string{"a"}, 3, "a"},
		{[]string{"a", "b", "c"}, 3, "a, b, c"},
		{[]string{"a", "b", "c", "d", "e"}, 3, "a, b, c, 2 more"},
	} {
		if got := FirstOf(tc.items, tc.n); got != tc.want {
			t.Errorf("FirstOf(%q, %d) = %q, want %q", tc.items, tc.n, got, tc.want)
		}
	}
}
