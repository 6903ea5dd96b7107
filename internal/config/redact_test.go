package config

import "testing"

func TestRedact(t *testing.T) {
	tests := []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"password in a URL", "reading http://user:pass@argocd:8080/api: refused", nil, "reading http://user:xxxxx@argocd:8080/api: refused"},
		{"password in a quoted URL", `server URL "https://admin:s3cr%40t@host/x": bad`, nil, `server URL "https://admin:xxxxx@host/x": bad`},
		{"token as the user of a clone URL", "fetching https://ghp_abcdef@github.com/o/r.git", nil, "fetching https://xxxxx@github.com/o/r.git"},
		{"x-access-token", "https://x-access-token:ghs_123456@github.com/o/r", nil, "https://x-access-token:xxxxx@github.com/o/r"},
		{"ssh user is kept", "ssh://git@github.com/o/r and git@github.com:o/r", nil, "ssh://git@github.com/o/r and git@github.com:o/r"},
		{"postgres DSN", "postgres://fw:pw@db:5432/fw?sslmode=disable", nil, "postgres://fw:xxxxx@db:5432/fw?sslmode=disable"},
		{"no URL", "user@example.com wrote", nil, "user@example.com wrote"},
		{"tokens", "Authorization: Bearer tok-123456 (tok-123456)", []string{"tok-123456"}, "Authorization: Bearer [redacted] ([redacted])"},
		{"longest secret first", "abcdef-long", []string{"abcd", "abcdef-long"}, "[redacted]"},
		{"short secrets ignored", "a b c", []string{"a", ""}, "a b c"},
		{"several URLs", "http://a:b@h1 https://c:d@h2", nil, "http://a:xxxxx@h1 https://c:xxxxx@h2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Redact(tc.in, tc.secrets...); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := RedactDSN("postgres://fw:pw@db/fw"); got != "postgres://fw:xxxxx@db/fw" {
		t.Errorf("RedactDSN = %q", got)
	}
}

// redactURLsWhole is what Redact did before it looked for candidate lines: the expression over all of s.
func redactURLsWhole(s string) string { return urlUserinfo.ReplaceAllStringFunc(s, redactUserinfo) }

// TestRedactURLsByLine pins that giving the expression only the lines where a user information may follow a
// "://" masks exactly what the expression masks over the whole text.
func TestRedactURLsByLine(t *testing.T) {
	for _, in := range redactSeeds {
		if got, want := redactURLs(in), redactURLsWhole(in); got != want {
			t.Errorf("redactURLs(%q) = %q, want %q", in, got, want)
		}
	}
}

var redactSeeds = []string{
	"",
	"no url here @ all",
	"http://a:b@h1\nhttps://c:d@h2\n",
	"line one\n  description: see https://example.com/docs\n  url: https://user:pw@host/x\nlast https://tok@github.com",
	"https://example.com/a@b", // "@" after the path: not user information
	"x://y://z:w@h",
	"a://b:c:d@e f://g@h\r\ni://j@k",
	"\"https://u:p@h\"'https://u2:p2@h2'",
	"https://u:p@h\n",
	"\nhttps://u:p@h",
	"http://@h http://:@h",
	"tab\thttps://a:b@c\tand\fhttps://d@e",
	"ssh://git@github.com/o/r\nhttps://x-access-token:ghs_1@github.com/o/r",
	"://@", "a://", "a://b", "HTTPS://TOKEN@HOST",
	"\u00e9https://u:p@h", // a scheme is ASCII: the match starts at "https"
	"https://u\u00a0x:p@h",
}

// FuzzRedactURLs compares redactURLs with the expression over the whole text.
func FuzzRedactURLs(f *testing.F) {
	for _, s := range redactSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := redactURLs(s), redactURLsWhole(s); got != want {
			t.Errorf("redactURLs(%q) = %q, want %q", s, got, want)
		}
	})
}
