package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/target"
)

// argocdVersionUsage is the help of --argocd-version on every command that renders.
var argocdVersionUsage = "Argo CD release to render as, " + target.Oldest.String() + " to " + target.Newest.String() +
	": Helm 4 from 3.5, Helm 3 before, and the other rules that changed between releases (default: the settings file's argocdVersion, else " +
	render.DefaultArgoCDVersion + ")"

func registerArgoCDVersion(fl *pflag.FlagSet, dst *string) {
	fl.StringVar(dst, "argocd-version", "", argocdVersionUsage)
}

// applyArgoCDVersion puts --argocd-version, when given, into s; a version fleetwave does not render as is a
// one-line error.
func applyArgoCDVersion(fl *pflag.FlagSet, s *render.Settings, v string) error {
	if !fl.Changed("argocd-version") {
		return nil
	}
	if _, err := target.Parse(v); err != nil {
		return fmt.Errorf("--argocd-version: %w", err)
	}
	s.ArgoCDVersion = v
	return nil
}

// versionSource is the part of the Argo CD client that reports the server's release.
type versionSource interface {
	Version(ctx context.Context) (string, error)
}

// detectArgoCDVersion asks Argo CD which release it runs (GET /api/version), for rendering as that release. An
// unreachable server or a release fleetwave does not render as leaves the default (the newest), with a warning.
func detectArgoCDVersion(ctx context.Context, argo versionSource, log *slog.Logger) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := argo.Version(ctx)
	if err == nil {
		_, err = target.Parse(v)
	}
	if err != nil {
		if log != nil {
			log.Warn("rendering as the newest Argo CD release: its version is unknown", slog.String("argocd_version", render.DefaultArgoCDVersion), slog.Any("error", err))
		}
		return ""
	}
	if log != nil {
		log.Info("rendering as the Argo CD release it runs", slog.String("argocd_version", v))
	}
	return v
}
