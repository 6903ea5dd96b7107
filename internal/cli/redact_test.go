package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// No command prints a password given in a URL, or a token, in its errors, logs or output.
func TestCommandsRedactCredentials(t *testing.T) {
	const (
		password = "s3cretpw-7731"
		token    = "tok-9f8e7d6c5b"
		envToken = "envtok-1a2b3c4d"
	)
	argocd := "http://user:" + password + "@127.0.0.1:1"
	repo := previewRepo(t, nil)
	dir := t.TempDir()
	store := filepath.Join(dir, "r.db")
	tests := []struct {
		name string
		args []string
	}{
		{"diff, Argo CD unreachable", []string{"diff", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--argocd", argocd, "--argocd-token", token}},
		{"diff, the token in an error", []string{"diff", "--repo", repo, "--base", token, "--argocd", argocd, "--argocd-token=" + token}},
		{"plan, Argo CD unreachable", []string{"plan", "--repo", repo, "--base", "main", "--head", "change", "--repo-url", previewRepoURL, "--argocd=" + argocd, "--argocd-token", token}},
		{"plan, the URL in an error", []string{"plan", "--repo", argocd, "--base", "main", "--argocd-token", token}},
		{"render, the URL in an error", []string{"render", "--app", argocd + "/app.yaml", "--repo-root", repo, "--revision", token}},
		{"validate, the URL in an error", []string{"validate", argocd + "/policy-" + envToken + ".yaml"}},
		{"rollout, Argo CD unreachable", []string{"rollout", "--argocd", argocd, "--token", token, "--store", store, "--selector", "env=prd", "--revision", "0123456789abcdef0123456789abcdef01234567", "--timeout", "2s"}},
		{"rollout status", []string{"rollout", "status", "--argocd", argocd, "--token", token, "--store", store}},
		{"serve, an invalid configuration", []string{"serve", "--config", filepath.Join(dir, "none.yaml")}},
		{"an unknown flag", []string{"diff", "--argocd", argocd, "--argocd-token", token, "--bogus=" + argocd}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := map[string]string{"FLEETWAVE_ARGOCD_TOKEN": envToken, "FLEETWAVE_ARGOCD_URL": argocd, "FLEETWAVE_STORE": "postgres://fw:" + password + "@127.0.0.1:1/fw"}
			deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code := Main(ctx, tc.args, deps)
			all := out.String() + errOut.String()
			for _, secret := range []string{password, token, envToken} {
				if strings.Contains(all, secret) {
					t.Errorf("exit %d: output shows %q:\n%s", code, secret, all)
				}
			}
			if code == 0 {
				t.Errorf("exit 0, want a failure:\n%s", all)
			}
			if !strings.Contains(all, "xxxxx") && !strings.Contains(all, "[redacted]") {
				t.Logf("nothing needed masking (exit %d):\n%s", code, all)
			} else {
				t.Logf("exit %d:\n%s", code, errOut.String())
			}
		})
	}
}

// Commands still see the terminal behind the redacting streams.
func TestRedactingWriterUnwrapsToTheStream(t *testing.T) {
	var buf bytes.Buffer
	w := &redactingWriter{w: &buf, secrets: []string{"tok-123456"}}
	if w.Unwrap() != &buf {
		t.Fatal("Unwrap does not return the stream")
	}
	if n, err := w.Write([]byte("Bearer tok-123456\n")); err != nil || n != len("Bearer tok-123456\n") || buf.String() != "Bearer [redacted]\n" {
		t.Errorf("Write = %d, %v; wrote %q", n, err, buf.String())
	}
}
