package cli

import (
	"io"
	"net/url"
	"strings"

	"github.com/fleetwave/fleetwave/internal/config"
)

// redactingWriter masks credentials (config.Redact: URL passwords, the secrets given) in everything a command
// writes. Each Write is redacted as a whole, so a credential cut across two writes could pass; the CLI's
// writers emit whole lines or documents.
type redactingWriter struct {
	w       io.Writer
	secrets []string
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	s := config.Redact(string(p), r.secrets...)
	if len(s) == len(p) && s == string(p) {
		return r.w.Write(p)
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap is the stream underneath, for commands that ask whether it is a terminal (isTerminal); they write
// through the redactingWriter.
func (r *redactingWriter) Unwrap() io.Writer { return r.w }

// secretEnv are the environment variables holding credentials that commands read.
var secretEnv = config.SecretNames()

// secretsOf collects the credentials a run may print by mistake: the values of flags whose name says token,
// password or secret, the passwords of URLs given as arguments, and the credentials in the environment.
func secretsOf(args []string, getenv func(string) string) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	secretFlag := func(name string) bool {
		name = strings.ToLower(strings.TrimLeft(name, "-"))
		return strings.Contains(name, "token") || strings.Contains(name, "password") || strings.Contains(name, "secret")
	}
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			name, val, hasVal := strings.Cut(a, "=")
			if secretFlag(name) {
				if hasVal {
					add(val)
				} else if i+1 < len(args) {
					add(args[i+1])
				}
			}
		}
		// A URL's password, also as written after "=" in --flag=URL.
		if _, v, ok := strings.Cut(a, "="); ok && strings.Contains(v, "://") {
			a = v
		}
		if strings.Contains(a, "://") && strings.Contains(a, "@") {
			if u, err := url.Parse(a); err == nil && u.User != nil {
				if p, ok := u.User.Password(); ok {
					add(p)
					if raw := rawPassword(a); raw != "" && raw != p {
						add(raw)
					}
				} else if u.Scheme == "http" || u.Scheme == "https" {
					add(u.User.Username())
				}
			}
		}
	}
	if getenv != nil {
		for _, k := range secretEnv {
			add(getenv(k))
		}
	}
	return out
}

// rawPassword is the password of a URL as written (percent-encoded), "" when there is none.
func rawPassword(s string) string {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return ""
	}
	userinfo, _, ok := strings.Cut(rest, "@")
	if !ok {
		return ""
	}
	_, pass, ok := strings.Cut(userinfo, ":")
	if !ok {
		return ""
	}
	return pass
}
