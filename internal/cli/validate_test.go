package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runValidate(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	deps := &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
	cmd := newValidateCmd(deps)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	if args == nil {
		cmd.SetArgs([]string{})
	}
	t.Chdir(dir)
	err := cmd.ExecuteContext(context.Background())
	code = 0
	if err != nil {
		code = 2
		var ee *ExitError
		if errors.As(err, &ee) {
			code = ee.Code
		}
		errOut.WriteString("fleetwave: " + err.Error() + "\n")
	}
	return code, out.String(), errOut.String()
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".fleetwave.yaml", "apiVersion: fleetwave/v1\nwaves:\n  - {name: canary, selector: {matchLabels: {env: test}}}\n  - {name: rest, selector: {}}\n")
	write("one.yaml", "apiVersion: fleetwave/v1\nwaves:\n  - {name: all-apps, selector: {}}\n  - {name: never, selector: {}}\n")
	write("bad.yaml", "apiVersion: fleetwave/v1\nwaves:\n  - name: a\n    selector: {}\n    maxParallel: 150%\n  - name: a\n    selector: {}\n    soak: soon\n")

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"default file", nil, 0, "ok: .fleetwave.yaml: 2 waves\n", ""},
		{"warnings are not errors", []string{"one.yaml"}, 0,
			`one.yaml:4: warning: wave "never" can never receive an app: wave "all-apps" (line 3) comes first and selects every app it would (hint: reorder the waves or narrow the earlier selector)` + "\n" +
				"ok: one.yaml: 2 waves\n", ""},
		{"every error with its line", []string{"bad.yaml"}, 2,
			`bad.yaml:5:18: wave "a" maxParallel: percentage "150%" is outside 0%..100% (hint: write a count such as 5 or a percentage such as "25%" (0% to 100%))` + "\n" +
				`bad.yaml:6:5: duplicate wave name "a" (hint: first defined at line 3; wave names must be unique)` + "\n" +
				`bad.yaml:8:11: wave "a" soak: "soon" is not a duration (hint: write a Go duration such as 90s, 10m or 1h30m)` + "\n",
			"fleetwave: invalid policy bad.yaml: 3 errors\n"},
		{"missing file", []string{"nope.yaml"}, 2, "", "fleetwave: reading policy: open nope.yaml: no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runValidate(t, dir, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if stdout != tt.wantStdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, tt.wantStdout)
			}
			if !strings.HasPrefix(stderr, tt.wantStderr) || (tt.wantStderr == "" && stderr != "") {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, tt.wantStderr)
			}
		})
	}
}
