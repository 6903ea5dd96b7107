package cli

import (
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/config"
	"github.com/fleetwave/fleetwave/internal/render"
)

// TestServeRendererSettings: serve's render pool from the environment, as its log line says it, and each bad
// value refused in one line naming the variable.
func TestServeRendererSettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		mode string // the log line's start, or
		err  string // the error's start
	}{
		{"workers and their share", map[string]string{"FLEETWAVE_RENDER_WORKERS": "3"},
			"3 worker processes, 1 GiB of memory each, at most 2 per installation, 1 GiB of manifests per change", ""},
		{"one worker is shared by order", map[string]string{"FLEETWAVE_RENDER_WORKERS": "1"},
			"1 worker processes, 1 GiB of memory each, at most 1 per installation", ""},
		{"every setting", map[string]string{"FLEETWAVE_RENDER_WORKERS": "4", "FLEETWAVE_RENDER_SHARE": "4", "FLEETWAVE_RENDER_MEMORY": "256MiB",
			"FLEETWAVE_RENDER_CHANGE_OUTPUT": "300M"}, "4 worker processes, 256 MiB of memory each, at most 4 per installation, 300 MiB of manifests per change", ""},
		{"a share over the workers is all of them", map[string]string{"FLEETWAVE_RENDER_WORKERS": "2", "FLEETWAVE_RENDER_SHARE": "9"},
			"2 worker processes, 1 GiB of memory each, at most 2 per installation", ""},
		{"share 0", map[string]string{"FLEETWAVE_RENDER_SHARE": "0"}, "", `FLEETWAVE_RENDER_SHARE="0": want`},
		{"share not a number", map[string]string{"FLEETWAVE_RENDER_SHARE": "half"}, "", `FLEETWAVE_RENDER_SHARE="half": want`},
		{"change output not a size", map[string]string{"FLEETWAVE_RENDER_CHANGE_OUTPUT": "lots"}, "", `FLEETWAVE_RENDER_CHANGE_OUTPUT: "lots" is not a size`},
		{"in-process", map[string]string{"FLEETWAVE_RENDER_WORKERS": "0"}, "in-process (FLEETWAVE_RENDER_WORKERS=0)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.LoadRender(func(k string) string { return tc.env[k] }, config.ForServe)
			var closeRenderer func()
			var mode string
			if err == nil {
				_, closeRenderer, mode, err = newServeRenderer(cfg, nil, render.Options{})
			}
			if err != nil {
				if tc.err == "" || !strings.HasPrefix(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v; want one line starting %q", err, tc.err)
				}
				return
			}
			defer closeRenderer()
			if tc.err != "" || !strings.HasPrefix(mode, tc.mode) {
				t.Errorf("mode = %q, err = %v; want %q / %q", mode, err, tc.mode, tc.err)
			}
		})
	}
}
