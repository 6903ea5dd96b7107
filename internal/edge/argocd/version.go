package argocd

import (
	"context"
	"fmt"
)

// Version reads the server's release (GET /api/version, server/version/version.proto VersionMessage.Version,
// e.g. "v3.6.1+4d1e5a2"): the Argo CD release fleetwave renders as when it is not configured.
func (c *Client) Version(ctx context.Context) (string, error) {
	var out struct {
		Version string `json:"Version"`
	}
	if err := c.call(ctx, request{method: "GET", path: []string{"api", "version"}}, &out); err != nil {
		return "", fmt.Errorf("getting argo cd version: %w", err)
	}
	if out.Version == "" {
		return "", fmt.Errorf("getting argo cd version: the answer has no Version")
	}
	return out.Version, nil
}
