package argocd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// GenerateApplicationSet asks Argo CD to run set's generators and templates without creating anything
// (POST /api/v1/applicationsets/generate, server/applicationset/applicationset.go Generate): the Applications
// Argo CD's ApplicationSet controller would make of set now. It is how the generators fleetwave cannot evaluate
// offline (scmProvider, pullRequest, plugin, clusterDecisionResource) are evaluated. Argo CD checks that the
// caller may create set in its project; a git generator reads the repository at the revision set names, not at
// a pull request's head.
func (c *Client) GenerateApplicationSet(ctx context.Context, set *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
	if set == nil {
		return nil, errors.New("generating applications: no applicationset")
	}
	// applicationset.proto ApplicationSetGenerateRequest {applicationSet}; the response's applications.
	body := struct {
		ApplicationSet *v1alpha1.ApplicationSet `json:"applicationSet"`
	}{set}
	var out struct {
		Applications []v1alpha1.Application `json:"applications"`
	}
	if err := c.call(ctx, request{method: "POST", path: apiPath("applicationsets", "generate"), body: body}, &out); err != nil {
		return nil, fmt.Errorf("generating the applications of applicationset %q: %w", set.Name, err)
	}
	return out.Applications, nil
}

// SourcesManifests renders a multi-source app with one revision per source through Argo CD's repo-server
// (GET /api/v1/applications/{name}/manifests?revisions=…&sourcePositions=…): revisions[i] replaces the
// targetRevision of source i+1, as server/application/application.go GetManifests applies the pairs
// (appSpec.Sources[pos-1].TargetRevision = q.Revisions[i]).
func (c *Client) SourcesManifests(ctx context.Context, name string, revisions []string) (*ManifestResponse, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	v := url.Values{}
	setNonEmpty(v, "appNamespace", ns)
	for i, r := range revisions {
		v.Add("revisions", r)
		v.Add("sourcePositions", strconv.Itoa(i+1))
	}
	var out ManifestResponse
	if err := c.call(ctx, request{method: "GET", path: apiPath("applications", n, "manifests"), query: v}, &out); err != nil {
		return nil, fmt.Errorf("getting manifests of application %q at revisions %v: %w", name, revisions, err)
	}
	return &out, nil
}
