package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

type cluster struct {
	name   string
	labels map[string]string
}

// exampleClusters is a small fleet: a test cluster, two staging and five production clusters in three regions.
func exampleClusters() []cluster {
	return []cluster{
		{"test-1", map[string]string{"env": "test", "region": "eu-1"}},
		{"stg-eu-1", map[string]string{"env": "stg", "region": "eu-1"}},
		{"stg-us-1", map[string]string{"env": "stg", "region": "us-1"}},
		{"prd-eu-1", map[string]string{"env": "prd", "region": "eu-1", "zone": "a"}},
		{"prd-eu-2", map[string]string{"env": "prd", "region": "eu-1", "zone": "b"}},
		{"prd-us-1", map[string]string{"env": "prd", "region": "us-1", "zone": "a"}},
		{"prd-us-2", map[string]string{"env": "prd", "region": "us-1", "zone": "b"}},
		{"prd-ap-1", map[string]string{"env": "prd", "region": "ap-1", "zone": "a"}},
	}
}

// exampleApps: guestbook on every cluster, billing on staging and production, and an unlabelled app on
// in-cluster that no env selector picks.
func exampleApps() []App {
	var apps []App
	for _, c := range exampleClusters() {
		apps = append(apps, App{Name: "guestbook-" + c.name, Namespace: "argocd", Project: "default", Cluster: c.name,
			Server: "https://" + c.name + ".example.com", ClusterLabels: c.labels, Labels: map[string]string{"team": "web"},
			Source: "appset:guestbook"})
		if c.labels["env"] != "test" {
			apps = append(apps, App{Name: "billing-" + c.name, Namespace: "argocd", Project: "payments", Cluster: c.name,
				Server: "https://" + c.name + ".example.com", ClusterLabels: c.labels,
				Labels: map[string]string{"app.kubernetes.io/name": "billing"}, Source: "apps/billing.yaml"})
		}
	}
	apps = append(apps, App{Name: "legacy", Namespace: "argocd", Project: "default", Cluster: "in-cluster",
		Server: "https://kubernetes.default.svc", AutomatedSync: true, Source: "apps/legacy.yaml"})
	return apps
}

func mustPolicy(t testing.TB, file string) *Policy {
	t.Helper()
	path := filepath.Join("testdata", "policies", file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func rollingSyncApps() []App {
	steps := []RollingSyncStep{
		{MatchExpressions: []Requirement{{Key: "envLabel", Operator: OpIn, Values: []string{"env-dev"}}}},
		{MatchExpressions: []Requirement{{Key: "envLabel", Operator: OpIn, Values: []string{"env-qa"}}}, MaxUpdate: "0"},
		{MatchExpressions: []Requirement{{Key: "envLabel", Operator: OpIn, Values: []string{"env-prod"}}}, MaxUpdate: "50%"},
	}
	var apps []App
	for _, c := range []struct{ name, env string }{{"dev-1", "env-dev"}, {"qa-1", "env-qa"}, {"prod-1", "env-prod"},
		{"prod-2", "env-prod"}, {"prod-3", "env-prod"}, {"prod-4", "env-prod"}, {"prod-5", "env-prod"}, {"sandbox", "env-sandbox"}} {
		apps = append(apps, App{Name: c.name + "-guestbook", Namespace: "argocd", Cluster: c.name, AutomatedSync: true,
			Labels: map[string]string{"envLabel": c.env}, Source: "appset:guestbook", RollingSyncSteps: steps})
	}
	// A plain Application alongside, planned by the default canary and rollout waves.
	apps = append(apps, App{Name: "ingress", Namespace: "argocd", Cluster: "prod-1", Source: "apps/ingress.yaml"},
		App{Name: "ingress", Namespace: "argocd", Cluster: "dev-1", Source: "apps/ingress.yaml",
			ClusterLabels: map[string]string{"env": "dev"}})
	return apps
}

// instanceApps are exampleApps over two Argo CD instances: eu holds the eu-1 and test clusters, us the others,
// and each has an in-cluster of its own with a legacy app on it.
func instanceApps() []App {
	apps := exampleApps()
	for i := range apps {
		apps[i].Instance = "us"
		if r := apps[i].ClusterLabels["region"]; r == "eu-1" || apps[i].Cluster == "in-cluster" {
			apps[i].Instance = "eu"
		}
	}
	us := apps[len(apps)-1]
	us.Instance, us.AutomatedSync = "us", false
	return append(apps, us)
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name     string
		policy   func(t testing.TB) *Policy
		apps     []App
		unplaced []Unplaced // apps the preview could not render
	}{
		{"sketch", func(t testing.TB) *Policy { return mustPolicy(t, "sketch.yaml") }, exampleApps(), nil},
		{"full", func(t testing.TB) *Policy { return mustPolicy(t, "full.yaml") }, exampleApps(), nil},
		{"default", func(testing.TB) *Policy { return DefaultPolicy() }, exampleApps(), nil},
		{"rollingsync", func(testing.TB) *Policy { return DefaultPolicy() }, rollingSyncApps(), nil},
		{"empty", func(t testing.TB) *Policy { return mustPolicy(t, "sketch.yaml") }, nil, nil},
		// A plan without violations that lacks apps which failed to render is incomplete, not "follows the policy".
		{"incomplete", func(t testing.TB) *Policy { return mustPolicy(t, "sketch.yaml") }, exampleApps()[:len(exampleApps())-1], []Unplaced{
			{App: "api-prd-eu-1", Namespace: "argocd", Cluster: "prd-eu-1", Reason: "kustomize build: missing.yaml: no such file or directory"},
			{App: "web", Namespace: "argocd", Cluster: "in-cluster", Reason: "helm template: parse error"}}},
		// One plan over two instances: clusters named with their instance, an app that maps to no instance unplaced.
		{"instances", func(t testing.TB) *Policy { return mustPolicy(t, "sketch.yaml") }, instanceApps(), []Unplaced{
			{App: "web", Namespace: "argocd", Instance: "us", Cluster: "in-cluster", Reason: "helm template: parse error"},
			{App: "stray", Namespace: "argocd", Cluster: "in-cluster", Reason: `app "stray" (stray): no Argo CD instance: apps/stray.yaml matches no instance's paths`}}},
		{"incomplete-with-violations", func(t testing.TB) *Policy { return mustPolicy(t, "sketch.yaml") }, exampleApps(), []Unplaced{
			{App: "web", Namespace: "argocd", Cluster: "in-cluster", Reason: "helm template: parse error"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Build(tt.policy(t), tt.apps)
			plan.SetUnplaced(tt.unplaced)
			var text, md bytes.Buffer
			if err := plan.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := plan.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(plan, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "golden/"+tt.name+".txt", text.String())
			golden.Assert(t, "golden/"+tt.name+".md", md.String())
			golden.Assert(t, "golden/"+tt.name+".json", string(js)+"\n")
		})
	}
}
