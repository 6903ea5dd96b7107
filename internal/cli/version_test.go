package cli

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, 0, "fleetwave dev, " + runtime.Version()},
		{[]string{"version", "-o", "json"}, 0, `"goVersion": "` + runtime.Version() + `"`},
		{[]string{"version", "-o", "yaml"}, 2, ""},
		{[]string{"version", "extra"}, 2, ""},
	} {
		var out, errOut bytes.Buffer
		code := Main(t.Context(), tc.args, &Deps{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
		if code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: code %d, out %q, err %q; want %d and %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.want)
		}
		if tc.code != 0 && strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
			t.Errorf("%v: the error is not one line: %q", tc.args, errOut.String())
		}
	}
	// The engines fleetwave renders as are read from the binary's module list (a replaced module by its
	// replacement's version); a test binary records none, so the build info is made here.
	v := versionOf(&debug.BuildInfo{Main: debug.Module{Path: "github.com/fleetwave/fleetwave", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}},
		Deps: []*debug.Module{{Path: "github.com/argoproj/argo-cd/v3", Version: "v3.6.1"}, {Path: "k8s.io/api", Version: "v0.37.0"},
			{Path: "github.com/argoproj/argo-cd/gitops-engine/v3", Version: "v3.6.1"},
			{Path: "github.com/argoproj/gitops-engine", Version: "v0.7.0"}, // the engine's module before Argo CD 3.6: not linked any more
			{Path: "helm.sh/helm/v3", Version: "v3.19.0", Replace: &debug.Module{Path: "helm.sh/helm/v3", Version: "v3.19.4"}}}})
	if v.Version != "v1.2.3" || v.Revision != "abc123" || len(v.Engines) != 3 || v.Engines["github.com/argoproj/argo-cd/v3"] != "v3.6.1" ||
		v.Engines["github.com/argoproj/argo-cd/gitops-engine/v3"] != "v3.6.1" || v.Engines["helm.sh/helm/v3"] != "v3.19.4" {
		t.Errorf("versionOf = %+v", v)
	}
}
