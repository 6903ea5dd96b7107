package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render"
)

type fakeVersion struct {
	v   string
	err error
}

func (f fakeVersion) Version(context.Context) (string, error) { return f.v, f.err }

func TestDetectArgoCDVersion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    fakeVersion
		want   string
		logHas string
	}{
		{name: "supported release", src: fakeVersion{v: "v3.4.7+f1e2d3c"}, want: "v3.4.7+f1e2d3c", logHas: "rendering as the Argo CD release it runs"},
		{name: "unreachable", src: fakeVersion{err: errors.New("dial tcp: connection refused")}, want: "", logHas: "connection refused"},
		{name: "newer than supported", src: fakeVersion{v: "v3.7.0"}, want: "", logHas: "argocd version 3.7 is not supported"},
		{name: "older than supported", src: fakeVersion{v: "v2.14.21"}, want: "", logHas: "argocd version 2.14 is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			got := detectArgoCDVersion(context.Background(), tc.src, slog.New(slog.NewTextHandler(&buf, nil)))
			if got != tc.want {
				t.Errorf("detectArgoCDVersion = %q, want %q", got, tc.want)
			}
			if !strings.Contains(buf.String(), tc.logHas) {
				t.Errorf("log lacks %q:\n%s", tc.logHas, buf.String())
			}
		})
	}
}

func TestOverlaySettingsArgoCDVersion(t *testing.T) {
	base := overlaySettings(renderSettingsWith("v3.4.7"), renderSettingsWith(""))
	if base.ArgoCDVersion != "v3.4.7" {
		t.Errorf("an unset argocdVersion replaced the detected one: %q", base.ArgoCDVersion)
	}
	if got := overlaySettings(renderSettingsWith("v3.4.7"), renderSettingsWith("3.6")).ArgoCDVersion; got != "3.6" {
		t.Errorf("FLEETWAVE_RENDER_SETTINGS' argocdVersion does not win: %q", got)
	}
}

func renderSettingsWith(argocdVersion string) render.Settings {
	return render.Settings{ArgoCDVersion: argocdVersion}
}
