package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cliInstancesYAML = `instances:
  - name: eu
    url: https://argocd-eu.example.com
    token: {env: ARGOCD_EU_TOKEN}
    owns: [{paths: ["clusters/eu/**"]}]
  - name: us
    url: https://argocd-us.example.com
    token: {env: ARGOCD_US_TOKEN}
    owns: [{paths: ["clusters/us/**"]}]
`

const cliInstanceToken = "eu-token-never-printed"

// runEnv is run with an environment.
func runEnv(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }}
	code = Main(context.Background(), args, deps)
	return code, out.String(), errOut.String()
}

func writeInstances(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "instances.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestValidateInstances: validate --argocd-instances checks the file as it checks a policy: every error on its
// own line with its position, exit 2; "ok" and the instances otherwise; the policy too when one is named.
func TestValidateInstances(t *testing.T) {
	good := writeInstances(t, cliInstancesYAML)
	bad := writeInstances(t, "instances:\n  - name: eu\n    url: https://a\n    token: {env: ARGOCD_EU_TOKEN}\n    owns: [{path: ['**']}]\n  - name: Us\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte("apiVersion: fleetwave/v1\nwaves:\n  - {name: everything, selector: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{"ARGOCD_EU_TOKEN": cliInstanceToken, "ARGOCD_US_TOKEN": cliInstanceToken}
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"valid", tokens, []string{"validate", "--argocd-instances", good}, 0, "ok: " + good + ": 2 instances: eu, us\n", ""},
		{"valid, and the policy named", tokens, []string{"validate", "--argocd-instances", good, filepath.Join(dir, "policy.yaml")}, 0,
			"ok: " + good + ": 2 instances: eu, us\nok: " + filepath.Join(dir, "policy.yaml") + ": 1 wave\n", ""},
		{"a token variable unset", map[string]string{"ARGOCD_EU_TOKEN": cliInstanceToken}, []string{"validate", "--argocd-instances", good}, 2,
			good + ":8:18: token.env: environment variable ARGOCD_US_TOKEN is not set\n",
			"fleetwave: invalid instances file " + good + ": 1 error\n"},
		{"errors", tokens, []string{"validate", "--argocd-instances", bad}, 2,
			bad + `:5:13: unknown field "path" in a rule of owns (hint: did you mean paths?)` + "\n" +
				bad + ":6:5: instance: url is required: its API URL, such as https://argocd-eu.example.com\n" +
				bad + ":6:5: instance: token is required: {env: VARIABLE} or {file: /path/to/token}\n" +
				bad + `:6:5: instance: owns is required: the rules of the apps it holds, such as - paths: ["clusters/eu/**"]` + "\n" +
				bad + `:6:11: name "Us" is not an instance name (hint: lowercase letters, digits and '-', at most 40, such as eu-prod)` + "\n",
			"fleetwave: invalid instances file " + bad + ": 5 errors\n"},
		{"missing", tokens, []string{"validate", "--argocd-instances", filepath.Join(dir, "none.yaml")}, 2, "",
			"fleetwave: validating " + filepath.Join(dir, "none.yaml") + ": instances file " + filepath.Join(dir, "none.yaml") + ": no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runEnv(t, tt.env, tt.args...)
			if code != tt.wantCode || stdout != tt.wantStdout || stderr != tt.wantStderr {
				t.Errorf("code %d, stdout:\n%s\nstderr:\n%s\nwant code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if strings.Contains(stdout+stderr, cliInstanceToken) {
				t.Error("a token was printed")
			}
		})
	}
}

// TestArgoCDInstancesFlag: diff, plan and rollout read --argocd-instances (rollout: or its variable), never
// with --argocd, and report the file's errors as usage errors.
func TestArgoCDInstancesFlag(t *testing.T) {
	good := writeInstances(t, cliInstancesYAML)
	bad := writeInstances(t, "instances:\n  - name: eu\n")
	tokens := map[string]string{"ARGOCD_EU_TOKEN": cliInstanceToken, "ARGOCD_US_TOKEN": cliInstanceToken}
	repo := t.TempDir()
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantStderr string // the last line
	}{
		{"diff with --argocd", tokens, []string{"diff", "--repo", repo, "--base", "main", "--argocd", "https://argocd", "--argocd-instances", good},
			"fleetwave: diff: give --argocd (one Argo CD) or --argocd-instances (several), not both"},
		{"plan, the file's error", tokens, []string{"plan", "--repo", repo, "--base", "main", "--argocd-instances", bad},
			"fleetwave: plan: --argocd-instances: " + bad + ":2:5: instance: url is required: its API URL, such as https://argocd-eu.example.com [and 2 more; run fleetwave validate --argocd-instances " + bad + "]"},
		{"rollout with --argocd", tokens, []string{"rollout", "--argocd", "https://argocd", "--argocd-instances", good, "--selector", "a=b", "--revision", strings.Repeat("a", 40)},
			"give --argocd (one Argo CD) or --argocd-instances (several), not both"},
		{"rollout, the variable's error", map[string]string{"FLEETWAVE_ARGOCD_INSTANCES_FILE": good},
			[]string{"rollout", "--selector", "a=b", "--revision", strings.Repeat("a", 40)},
			"--argocd-instances: " + good + ":4:18: token.env: environment variable ARGOCD_EU_TOKEN is not set [and 1 more; run fleetwave validate --argocd-instances " + good + "]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runEnv(t, tt.env, tt.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || !strings.HasSuffix(lines[len(lines)-1], tt.wantStderr) {
				t.Errorf("code %d, stderr:\n%s\nwant code 2 and the last line ending in:\n%s", code, stderr, tt.wantStderr)
			}
			if strings.Contains(stdout+stderr, cliInstanceToken) {
				t.Error("a token was printed")
			}
		})
	}
}
