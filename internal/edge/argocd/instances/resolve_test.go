package instances

import (
	"testing"
)

func TestResolve(t *testing.T) {
	data := `instances:
  - name: eu
    url: https://argocd-eu.example.com
    token: {env: T}
    owns:
      - paths: ["clusters/eu/**"]
      - labels: {fleetwave.io/instance: eu}
  - name: us
    url: https://argocd-us.example.com
    token: {env: T}
    owns:
      - projects: [us-*]
        destinations: [prd-us-*, "https://us-*"]
  - name: ap
    url: https://argocd-ap.example.com
    token: {env: T}
    owns:
      - paths: ["clusters/ap/*.yaml"]
        labels: {tier: web, region: ap}
`
	s, err := ParseWith("instances.yaml", []byte(data), Options{Getenv: getenv("T", "x")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		app     App
		want    string
		wantErr string
	}{
		{"path, ** crosses directories", App{Path: "clusters/eu/team-a/web.yaml"}, "eu", ""},
		{"path with ./", App{Path: "./clusters/eu/web.yaml"}, "eu", ""},
		{"label", App{Path: "apps/web.yaml", Labels: map[string]string{"fleetwave.io/instance": "eu"}}, "eu", ""},
		{"label value differs", App{Path: "apps/web.yaml", Labels: map[string]string{"fleetwave.io/instance": "us"}}, "",
			"maps to no Argo CD instance (instances.yaml: no rule of any instance matches path apps/web.yaml, labels fleetwave.io/instance=us, project (none), destination (none))"},
		{"project and destination name (AND)", App{Path: "x.yaml", Project: "us-web", DestinationName: "prd-us-1"}, "us", ""},
		{"destination server: * crosses /, as Argo CD's project globs", App{Project: "us-web", DestinationServer: "https://us-1.example.com:6443/k8s"}, "us", ""},
		{"project alone is not enough", App{Path: "x.yaml", Project: "us-web", DestinationName: "stg-us-1", DestinationServer: "https://kubernetes.default.svc"}, "",
			"maps to no Argo CD instance (instances.yaml: no rule of any instance matches path x.yaml, no labels, project us-web, destination stg-us-1 (https://kubernetes.default.svc))"},
		{"path and labels (AND): * stays in its directory", App{Path: "clusters/ap/web/app.yaml", Labels: map[string]string{"tier": "web", "region": "ap"}}, "",
			"maps to no Argo CD instance (instances.yaml: no rule of any instance matches path clusters/ap/web/app.yaml, labels region=ap,tier=web, project (none), destination (none))"},
		{"path and labels", App{Path: "clusters/ap/web.yaml", Labels: map[string]string{"tier": "web", "region": "ap", "x": "y"}}, "ap", ""},
		{"two instances", App{Path: "clusters/eu/web.yaml", Project: "us-web", DestinationName: "prd-us-1"}, "",
			"maps to two instances: eu and us (eu by instances.yaml:6, us by instances.yaml:12)"},
		{"three instances", App{Path: "clusters/ap/web.yaml", Project: "us-web", DestinationName: "prd-us-1",
			Labels: map[string]string{"tier": "web", "region": "ap", "fleetwave.io/instance": "eu"}}, "",
			"maps to 3 instances: eu, us and ap (eu by instances.yaml:7, us by instances.yaml:12, ap by instances.yaml:18)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Resolve(tt.app)
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			if got != tt.want || errText != tt.wantErr {
				t.Errorf("Resolve = %q, %q\nwant %q, %q", got, errText, tt.want, tt.wantErr)
			}
		})
	}
}

func TestResolveSingle(t *testing.T) {
	s := Single("https://argocd.example.com", "", false, "")
	for _, a := range []App{{}, {Path: "clusters/eu/web.yaml", Project: "x", Labels: map[string]string{"a": "b"}}} {
		if got, err := s.Resolve(a); got != "" || err != nil {
			t.Errorf("Resolve(%+v) = %q, %v; want \"\", nil", a, got, err)
		}
	}
	in, _ := s.Get("")
	if ok, r := in.Holds(App{Path: "anything"}); !ok || r != nil {
		t.Errorf("Holds = %v, %v", ok, r)
	}
}
