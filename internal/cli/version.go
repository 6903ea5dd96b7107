package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time (make build: -X github.com/fleetwave/fleetwave/internal/cli.version=<git describe>);
// a plain go build leaves "dev" and the module version or VCS revision Go records is shown instead.
var version = "dev"

// versionInfo is what `fleetwave version` prints: the build, and the engines whose behaviour it renders with.
type versionInfo struct {
	Version   string            `json:"version"`
	Revision  string            `json:"revision,omitempty"`
	GoVersion string            `json:"goVersion"`
	Platform  string            `json:"platform"`
	Engines   map[string]string `json:"engines"` // module path → version: Argo CD, its gitops-engine, Helm, Kustomize, Jsonnet
}

// engines are the modules whose behaviour fleetwave's rendering and diffing follow.
var engineModules = []string{
	"github.com/argoproj/argo-cd/v3", "github.com/argoproj/argo-cd/gitops-engine/v3", "helm.sh/helm/v3", "helm.sh/helm/v4",
	"sigs.k8s.io/kustomize/api", "github.com/google/go-jsonnet",
}

func readVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi)
}

// versionOf reads the version from the binary's build info (nil: none recorded).
func versionOf(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Engines: map[string]string{}}
	if bi == nil {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v.Revision = s.Value
		}
	}
	for _, d := range bi.Deps {
		for _, m := range engineModules {
			if d.Path == m {
				v.Engines[m] = d.Version
				if d.Replace != nil {
					v.Engines[m] = d.Replace.Version
				}
			}
		}
	}
	return v
}

func newVersionCmd(deps *Deps) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print fleetwave's version and the Argo CD, Helm and Kustomize versions it renders as",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := readVersion()
			switch output {
			case "json":
				enc := json.NewEncoder(deps.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			case "text":
				rev := ""
				if v.Revision != "" {
					rev = " (" + v.Revision + ")"
				}
				fmt.Fprintf(deps.Stdout, "fleetwave %s%s, %s %s\n", v.Version, rev, v.GoVersion, v.Platform)
				for _, m := range engineModules {
					if ver, ok := v.Engines[m]; ok {
						fmt.Fprintf(deps.Stdout, "  %s %s\n", m, ver)
					}
				}
				return nil
			}
			return usageErr(fmt.Errorf("--output %q: want text or json", output))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
