package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/instances"
)

// simPlan is a plan's JSON as `fleetwave plan --output json` writes it, reduced to what seeding reads: the
// example fleet's shape, two app-of-apps roots (one per instance), a child of each and an app of a set.
const simPlan = `{"base": "b", "head": "h",
 "apps": [
  {"name": "platform", "namespace": "argocd", "project": "platform", "file": "bootstrap/platform.yaml"},
  {"name": "ingress-nginx", "namespace": "argocd", "project": "platform", "file": "platform/ingress-nginx.yaml", "parent": "argocd/platform"},
  {"name": "web-test-eu-1", "namespace": "argocd", "project": "storefront", "file": "apps/web.yaml", "appSet": "argocd/web", "parent": "argocd/root"},
  {"name": "payments", "namespace": "argocd", "project": "payments", "file": "apps/payments.yaml", "parent": "argocd/root"},
  {"name": "root", "namespace": "argocd", "project": "platform", "file": "bootstrap/root.yaml"}
 ],
 "waves": [
  {"batches": [{"apps": [
    {"name": "platform", "namespace": "argocd", "cluster": "in-cluster", "server": "https://kubernetes.default.svc"},
    {"name": "ingress-nginx", "namespace": "argocd", "cluster": "in-cluster", "server": "https://kubernetes.default.svc"}]}]},
  {"batches": [{"apps": [
    {"name": "web-test-eu-1", "namespace": "argocd", "cluster": "test-eu-1", "server": "https://test-eu-1.example.com"},
    {"name": "payments", "namespace": "argocd", "cluster": "prd-eu-1", "server": "https://prd-eu-1.example.com"}]}]}
 ]}`

// TestArgocdSimSeedsOneInstance: argocd-sim --instance seeds the plan's apps its instance holds, by the instances
// file's rules when the plan has no instances (an app takes its app-of-apps parent's instance, as discovery places
// it), by the plan's own instance field when it has; an app the rules place nowhere is an error naming it.
func TestArgocdSimSeedsOneInstance(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(simPlan), 0o600); err != nil {
		t.Fatal(err)
	}
	rules := func(owns string) *instances.Set {
		t.Helper()
		set, err := instances.ParseWith("instances.yaml", []byte(`instances:
  - {name: mgmt, url: "https://mgmt.example.com", token: {env: T}, owns: [{paths: ["bootstrap/platform.yaml"]}]}
  - {name: workloads, url: "https://workloads.example.com", token: {env: T}, owns: [`+owns+`]}
`), instances.Options{Getenv: func(string) string { return "t" }})
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	seeded := func(instance string, set *instances.Set, path string) ([]string, error) {
		fleet := &argocdsim.Fleet{}
		err := seedFromPlan(fleet, path, "https://git.example.com/fleet.git", heldBy(instance, set))
		var names []string
		for _, a := range fleet.Apps {
			names = append(names, a.Name)
		}
		slices.Sort(names)
		return names, err
	}
	for _, tc := range []struct {
		name, instance, owns, want, err string
	}{
		{"the management instance", "mgmt", `{paths: ["bootstrap/root.yaml"]}`, "ingress-nginx platform", ""},
		{"the workload instance", "workloads", `{paths: ["bootstrap/root.yaml"]}`, "payments web-test-eu-1", ""},
		{"a root no rule names", "workloads", `{paths: ["elsewhere/**"]}`, "",
			"app argocd/web-test-eu-1 maps to no Argo CD instance (instances.yaml: no rule of any instance matches path bootstrap/root.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := seeded(tc.instance, rules(tc.owns), plan)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tc.want {
				t.Fatalf("seeded %q (%v), want %q", got, err, tc.want)
			}
		})
	}

	// A plan made with --argocd-instances says each app's instance itself: no rules needed.
	placed := filepath.Join(dir, "placed.json")
	withInstances := strings.NewReplacer(`"cluster": "in-cluster"`, `"instance": "mgmt", "cluster": "in-cluster"`,
		`"cluster": "test-eu-1"`, `"instance": "workloads", "cluster": "test-eu-1"`,
		`"cluster": "prd-eu-1"`, `"instance": "workloads", "cluster": "prd-eu-1"`).Replace(simPlan)
	if err := os.WriteFile(placed, []byte(withInstances), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := seeded("mgmt", nil, placed); err != nil || strings.Join(got, " ") != "ingress-nginx platform" {
		t.Errorf("by the plan's instances: %q (%v)", got, err)
	}
	if _, err := seeded("mgmt", nil, plan); err == nil || !strings.Contains(err.Error(), "has no instance in the plan: give --argocd-instances") {
		t.Errorf("a plan without instances and no rules: %v", err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"argocd-sim", "--from-plan", plan, "--argocd-instances", "x.yaml"}, "--argocd-instances needs --instance"},
		{[]string{"argocd-sim", "--fleet", "f.yaml", "--instance", "mgmt"}, "--instance needs --from-plan"},
	} {
		if code, _, stderr := runEnv(t, nil, tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	file := writeInstances(t, "instances:\n  - {name: mgmt, url: \"https://mgmt.example.com\", token: {env: T}, owns: [{paths: [\"**\"]}]}\n")
	if code, _, stderr := runEnv(t, map[string]string{"T": "t"}, "argocd-sim", "--from-plan", plan, "--argocd-instances", file, "--instance", "eu"); code != 2 ||
		!strings.Contains(stderr, "--instance eu: not an instance of "+file+" (mgmt)") {
		t.Errorf("an unknown instance: exit %d %q", code, stderr)
	}
}
