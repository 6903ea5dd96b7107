package config

import (
	"regexp"
	"sort"
	"strings"
)

// Redacted is what Redact puts in place of a secret.
const Redacted = "[redacted]"

// urlUserinfo matches the user information of a URL written in text: scheme, user, and password if any.
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)([^\s/?#@:"'<>\x60]*)(:[^\s/?#@"'<>\x60]*)?@`)

// Redact returns s with every credential it can recognise masked: the password of each URL written in it
// (scheme://user:xxxxx@host, as url.URL.Redacted prints it), a bare user of an http(s) URL (which is how a
// token is put in a clone URL: https://xxxxx@host), and each of secrets (tokens, passwords) wherever it
// appears. Secrets shorter than 4 bytes are ignored (masking them would garble text, not protect anything).
// It is the one redaction of every error, log line and output of the CLI and the App.
func Redact(s string, secrets ...string) string {
	if strings.Contains(s, "@") && strings.Contains(s, "://") {
		s = redactURLs(s)
	}
	if len(secrets) == 0 {
		return s
	}
	// Longest first, so a secret that contains another is masked whole.
	sorted := append([]string(nil), secrets...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, sec := range sorted {
		if len(sec) >= 4 && strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	return s
}

// redactURLs masks the user information of the URLs in s (Redact). The expression has no literal prefix, so Go's
// regexp would walk all of s, which for `render`'s YAML stream (megabytes, thousands of "://" in CRD
// descriptions, rarely a user) cost more than the render's own YAML encoding. A match never spans a line (neither
// the scheme nor the user information holds a line break), so only the lines where some "://" is followed by
// an "@" before any character that ends the user information (userinfoAt) are given to the expression, and
// each gives the same matches as it would in s.
func redactURLs(s string) string {
	var b strings.Builder
	changed := false
	done := 0 // s[:done] is in b once something changed
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			break
		}
		i += from
		stop, ok := userinfoEnd(s, i+3)
		if !ok {
			from = i + 3 // the next "://" ends the scan at its first "/": the scans do not overlap, s is read once
			continue
		}
		start := strings.LastIndexByte(s[:i], '\n') + 1
		end := len(s)
		if j := strings.IndexByte(s[stop:], '\n'); j >= 0 {
			end = stop + j
		}
		line := s[start:end]
		if red := urlUserinfo.ReplaceAllStringFunc(line, redactUserinfo); red != line {
			if !changed {
				changed = true
				b.Grow(len(s))
			}
			b.WriteString(s[done:start])
			b.WriteString(red)
			done = end
		}
		from = end
	}
	if !changed {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// userinfoEnd scans s from i (just past a "://") over the characters urlUserinfo's user and password allow:
// ok when the first other character is "@" (a URL's user information may be there), at index stop.
func userinfoEnd(s string, i int) (stop int, ok bool) {
	for ; i < len(s); i++ {
		switch s[i] {
		case '@':
			return i, true
		case '\t', '\n', '\f', '\r', ' ', '/', '?', '#', '"', '\'', '<', '>', '`': // \s is [\t\n\f\r ] in RE2
			return i, false
		}
	}
	return i, false
}

// redactUserinfo is the replacement of one urlUserinfo match: the password masked, or the user of an http(s)
// URL (a token put in a clone URL); other users (ssh://git@) are kept.
func redactUserinfo(m string) string {
	sub := urlUserinfo.FindStringSubmatch(m)
	scheme, user, pass := sub[1], sub[2], sub[3]
	switch {
	case pass != "":
		return scheme + user + ":xxxxx@"
	case strings.EqualFold(scheme, "http://") || strings.EqualFold(scheme, "https://"):
		return scheme + "xxxxx@"
	}
	return m
}
