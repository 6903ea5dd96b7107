package argocd

import (
	"context"
	"fmt"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// ListClusters lists the clusters Argo CD knows, with labels, annotations and info (serverVersion, apiVersions).
// The API has no label selector for clusters: filter the result.
func (c *Client) ListClusters(ctx context.Context) ([]v1alpha1.Cluster, error) {
	var out v1alpha1.ClusterList
	if err := c.call(ctx, request{method: "GET", path: apiPath("clusters")}, &out); err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	return out.Items, nil
}

// Settings is the part of GET /api/v1/settings (server/settings/settings.proto Settings) that rendering and
// rollouts need.
type Settings struct {
	URL                       string                               `json:"url,omitempty"`
	AppLabelKey               string                               `json:"appLabelKey,omitempty"`
	TrackingMethod            string                               `json:"trackingMethod,omitempty"`
	InstallationID            string                               `json:"installationID,omitempty"`
	ControllerNamespace       string                               `json:"controllerNamespace,omitempty"`
	AppsInAnyNamespaceEnabled bool                                 `json:"appsInAnyNamespaceEnabled,omitempty"`
	KustomizeOptions          *v1alpha1.KustomizeOptions           `json:"kustomizeOptions,omitempty"`
	KustomizeVersions         []string                             `json:"kustomizeVersions,omitempty"`
	ResourceOverrides         map[string]v1alpha1.ResourceOverride `json:"resourceOverrides,omitempty"`
	StatusBadgeEnabled        bool                                 `json:"statusBadgeEnabled,omitempty"`
	ExecEnabled               bool                                 `json:"execEnabled,omitempty"`
	HydratorEnabled           bool                                 `json:"hydratorEnabled,omitempty"`
}

// Settings reads the server's public settings (tracking method, label key, kustomize build options).
func (c *Client) Settings(ctx context.Context) (*Settings, error) {
	var out Settings
	if err := c.call(ctx, request{method: "GET", path: apiPath("settings")}, &out); err != nil {
		return nil, fmt.Errorf("getting argo cd settings: %w", err)
	}
	return &out, nil
}
