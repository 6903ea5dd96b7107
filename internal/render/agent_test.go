package render_test

import (
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

// TestInstanceNameForAgents: an app an argocd-agent applies is named in tracking ids as the agent's Argo CD sees
// it — in the agent's namespace (namespace-based mapping, argocd-agent's default) or in its own namespace
// (destination-based mapping) — not as it lives on the principal, in a namespace named after the agent.
func TestInstanceNameForAgents(t *testing.T) {
	app := func(ns string) *v1alpha1.Application {
		a := &v1alpha1.Application{}
		a.Name, a.Namespace = "web", ns
		return a
	}
	tests := []struct {
		name string
		s    render.Settings
		ns   string
		want string
	}{
		{"not an agent, control-plane namespace", render.Settings{ControlPlaneNamespace: "argocd"}, "argocd", "web"},
		{"not an agent, another namespace", render.Settings{ControlPlaneNamespace: "argocd"}, "agent-eu", "agent-eu_web"},
		{"agent, namespace-based mapping", render.Settings{ControlPlaneNamespace: "argocd", AgentNamespace: "argocd"}, "agent-eu", "web"},
		{"agent in a namespace of its own, namespace-based mapping", render.Settings{ControlPlaneNamespace: "argocd", AgentNamespace: "gitops"}, "agent-eu", "web"},
		{"agent, destination-based mapping, app in the agent's namespace", render.Settings{ControlPlaneNamespace: "argocd", AgentNamespace: "argocd", AgentDestinationMapping: true}, "argocd", "web"},
		{"agent, destination-based mapping, no namespace", render.Settings{ControlPlaneNamespace: "argocd", AgentNamespace: "argocd", AgentDestinationMapping: true}, "", "web"},
		{"agent, destination-based mapping, a team's namespace kept", render.Settings{ControlPlaneNamespace: "argocd", AgentNamespace: "argocd", AgentDestinationMapping: true}, "team-a", "team-a_web"},
	}
	for _, tt := range tests {
		if got := tt.s.InstanceName(app(tt.ns)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if err := (render.Settings{AgentDestinationMapping: true}).Validate(); err == nil || !strings.Contains(err.Error(), "agentDestinationMapping needs agentNamespace") {
		t.Errorf("Validate: %v", err)
	}
}

// TestRenderForAgentTracksAsTheAgent: the tracking annotation and label of an app in the principal's agent-eu
// namespace carry the bare app name when rendered for the agent.
func TestRenderForAgentTracksAsTheAgent(t *testing.T) {
	root := filetest.Tree(t, map[string]string{"m/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	req := mustApp(t, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: agent-eu}
spec:
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://example.com/fleet.git, path: m}
`)
	req.Repos = func(string) (string, bool) { return root, true }
	for _, tt := range []struct {
		agentNS, annotation, label string
	}{
		{"", "argocd.argoproj.io/tracking-id: agent-eu_web:/ConfigMap:web/c", "app.kubernetes.io/instance: agent-eu_web"},
		{"argocd", "argocd.argoproj.io/tracking-id: web:/ConfigMap:web/c", "app.kubernetes.io/instance: web"},
	} {
		req.Settings = render.Settings{TrackingMethod: "annotation+label", AgentNamespace: tt.agentNS}
		out, _, err := renderYAML(t, render.New(render.Options{}), req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, tt.annotation) || !strings.Contains(out, tt.label) {
			t.Errorf("agentNamespace %q: want %q and %q in:\n%s", tt.agentNS, tt.annotation, tt.label, out)
		}
	}
}
