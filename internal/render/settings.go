package render

import (
	"errors"
	"fmt"
	"os"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/render/target"
)

// Settings are the facts Argo CD takes from the destination cluster and from argocd-cm when it renders an
// application. Their YAML keys are those of the fidelity corpus's render-env.yaml files and of `render --settings`.
type Settings struct {
	// KubeVersion is the destination cluster's version as the application controller passes it ("v1.30.0").
	KubeVersion string `json:"kubeVersion,omitempty"`
	// APIVersions are the cluster's "group/version" and "group/version/Kind" strings
	// (util/argo/argo.go APIResourcesToStrings with kinds), as Helm's .Capabilities.APIVersions.
	APIVersions []string `json:"apiVersions,omitempty"`
	// AppLabelKey is argocd-cm application.instanceLabelKey.
	AppLabelKey string `json:"appLabelKey,omitempty"`
	// TrackingMethod is argocd-cm application.resourceTrackingMethod: annotation, label or annotation+label.
	TrackingMethod string `json:"trackingMethod,omitempty"`
	// InstallationID is argocd-cm installationID; when set it is stamped on every tracked object.
	InstallationID string `json:"installationID,omitempty"`
	// KustomizeBuildOptions is argocd-cm kustomize.buildOptions.
	KustomizeBuildOptions string `json:"kustomizeBuildOptions,omitempty"`
	// Revision is the commit being rendered ($ARGOCD_APP_REVISION).
	Revision string `json:"revision,omitempty"`
	// ControlPlaneNamespace is the namespace Argo CD runs in; Applications elsewhere get "<ns>_<name>" instance names.
	ControlPlaneNamespace string `json:"controlPlaneNamespace,omitempty"`
	// AgentNamespace is set when an argocd-agent applies the app (an instance marked agent): the namespace the
	// agent keeps its Applications in on its workload cluster (argocd-agent's agent.namespace, "argocd" in its
	// install manifests), where the agent's own Argo CD runs and computes the tracking id. The Application lives
	// on the principal in a namespace named after the agent ("agent-eu"), but the agent writes it into its own
	// namespace (argocd-agent internal/manager/application/application.go, SetNamespace(m.namespace) when
	// destination-based mapping is off), so its instance name — in the tracking annotation
	// "<instance>:<group>/<kind>:<ns>/<name>", the instance label and $ARGOCD_APP_NAME — is the bare app name,
	// not "agent-eu_<name>". "": not an agent (the app's own namespace, against ControlPlaneNamespace).
	AgentNamespace string `json:"agentNamespace,omitempty"`
	// AgentDestinationMapping: the principal and the agent run with --destination-based-mapping, under which the
	// agent keeps the Application's namespace from the principal: its instance name is then computed from that
	// namespace against AgentNamespace. Needs AgentNamespace.
	AgentDestinationMapping bool `json:"agentDestinationMapping,omitempty"`
	// ArgoCDVersion is the Argo CD release to render as ("3.6", "v3.4.7"; default DefaultArgoCDVersion, the
	// newest supported): Helm 4 from 3.5, Helm 3 before, and every other rule that changed between releases
	// (internal/render/target).
	ArgoCDVersion string `json:"argocdVersion,omitempty"`
}

// Defaults of a current Argo CD install (3.x): annotation tracking, the app.kubernetes.io/instance label key, the
// argocd control-plane namespace, and a cluster version recent enough for today's charts.
const (
	DefaultAppLabelKey           = "app.kubernetes.io/instance"
	DefaultTrackingMethod        = "annotation"
	DefaultControlPlaneNamespace = "argocd"
	DefaultKubeVersion           = "v1.30.0"
)

// DefaultArgoCDVersion is the newest Argo CD release line fleetwave renders as.
var DefaultArgoCDVersion = target.Newest.String()

// DefaultSettings returns the settings of a current Argo CD install rendering for a Kubernetes 1.30 cluster.
// APIVersions is empty: Helm then offers its built-in list, as when Argo CD has not discovered the cluster.
func DefaultSettings() Settings {
	return Settings{
		KubeVersion:           DefaultKubeVersion,
		AppLabelKey:           DefaultAppLabelKey,
		TrackingMethod:        DefaultTrackingMethod,
		ControlPlaneNamespace: DefaultControlPlaneNamespace,
		ArgoCDVersion:         DefaultArgoCDVersion,
	}
}

// LoadSettings reads a settings file and fills unset keys with DefaultSettings. Unknown keys, and an argocdVersion
// fleetwave does not render as, are an error.
func LoadSettings(path string) (Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, fmt.Errorf("reading settings: %w", err)
	}
	var s Settings
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return Settings{}, fmt.Errorf("settings %s: %w", path, err)
	}
	if _, err := target.Parse(s.ArgoCDVersion); err != nil {
		return Settings{}, fmt.Errorf("settings %s: %w", path, err)
	}
	return s.WithDefaults(), nil
}

// WithDefaults returns s with empty fields set to their defaults.
func (s Settings) WithDefaults() Settings {
	d := DefaultSettings()
	if s.KubeVersion == "" {
		s.KubeVersion = d.KubeVersion
	}
	if s.AppLabelKey == "" {
		s.AppLabelKey = d.AppLabelKey
	}
	if s.TrackingMethod == "" {
		s.TrackingMethod = d.TrackingMethod
	}
	if s.ControlPlaneNamespace == "" {
		s.ControlPlaneNamespace = d.ControlPlaneNamespace
	}
	if s.ArgoCDVersion == "" {
		s.ArgoCDVersion = d.ArgoCDVersion
	}
	return s
}

// Validate reports settings Argo CD would not accept.
func (s Settings) Validate() error {
	switch s.TrackingMethod {
	case "", "annotation", "label", "annotation+label":
	default:
		return fmt.Errorf("tracking method %q: must be annotation, label or annotation+label", s.TrackingMethod)
	}
	if _, err := target.Parse(s.ArgoCDVersion); err != nil {
		return err
	}
	if s.AgentDestinationMapping && s.AgentNamespace == "" {
		return errors.New("agentDestinationMapping needs agentNamespace, the namespace of the agent's Argo CD")
	}
	return nil
}

// InstanceName is the app's name in its resources' tracking metadata, as the application controller that applies
// it computes it (v1alpha1 Application.InstanceName: the name, prefixed with "<namespace>_" when the app is not in
// the controller's namespace). For an app an argocd-agent applies (AgentNamespace), that controller is the agent's
// and the app lives in the agent's namespace, or keeps its own under destination-based mapping.
func (s Settings) InstanceName(app *v1alpha1.Application) string {
	if s.AgentNamespace == "" {
		return app.InstanceName(s.ControlPlaneNamespace)
	}
	if !s.AgentDestinationMapping {
		return app.Name
	}
	ns := app.Namespace
	if ns == "" {
		ns = s.ControlPlaneNamespace // where the principal keeps an app that names no namespace
	}
	if ns == "" || ns == s.AgentNamespace {
		return app.Name
	}
	return ns + "_" + app.Name
}

// Target is the parsed ArgoCDVersion (target.Newest when empty or invalid: Validate reports the latter).
func (s Settings) Target() target.Version {
	v, err := target.Parse(s.ArgoCDVersion)
	if err != nil {
		return target.Newest
	}
	return v
}
