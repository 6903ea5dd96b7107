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
		s = urlUserinfo.ReplaceAllStringFunc(s, func(m string) string {
			sub := urlUserinfo.FindStringSubmatch(m)
			scheme, user, pass := sub[1], sub[2], sub[3]
			switch {
			case pass != "":
				return scheme + user + ":xxxxx@"
			case strings.EqualFold(scheme, "http://") || strings.EqualFold(scheme, "https://"):
				return scheme + "xxxxx@"
			}
			return m
		})
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
