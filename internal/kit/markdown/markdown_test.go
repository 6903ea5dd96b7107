package markdown

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want, wantLine string }{
		{"plain text", "plain text", "plain text"},
		{"my_app *prod*", `my\_app \*prod\*`, `my\_app \*prod\*`},
		{"a | b", `a \| b`, `a \| b`},
		{"<script>", "&lt;script&gt;", "&lt;script&gt;"},
		{"[link](x) `code`", "\\[link\\](x) \\`code\\`", "\\[link\\](x) \\`code\\`"},
		{`already \* escaped`, `already \\\* escaped`, `already \\\* escaped`},
		{"two\nlines\r\n", "two\nlines\r\n", "two lines  "},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := EscapeLine(tc.in); got != tc.wantLine {
			t.Errorf("EscapeLine(%q) = %q, want %q", tc.in, got, tc.wantLine)
		}
	}
}
