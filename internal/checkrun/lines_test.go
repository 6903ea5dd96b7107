package checkrun

import "testing"

func TestManifestLine(t *testing.T) {
	const stream = `# comment
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: one
spec:
  source:
    path: a
  syncPolicy:
    automated: {}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: "two"
  labels: {env: prd}
spec:
  sources:
    - path: b
  syncPolicy:
    automated:
      prune: true
`
	const appSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: web
spec:
  template:
    metadata:
      name: 'web-{{.name}}'
    spec:
      source:
        path: charts/web
`
	for _, tt := range []struct {
		name, data, app string
		keys            []string
		want            int
	}{
		{"key in the app's document", stream, "one", []string{"automated"}, 10},
		{"same key, second document", stream, "two", []string{"automated"}, 21},
		{"first of several keys", stream, "two", []string{"source", "sources"}, 18},
		{"labels", stream, "two", []string{"labels"}, 16},
		{"no key: the name line", stream, "two", []string{"nope"}, 15},
		{"no keys at all", stream, "one", nil, 5},
		{"templated name: key anywhere", appSet, "web-prd-eu-1", []string{"source"}, 10},
		{"templated name, no key: the kind line", appSet, "web-prd-eu-1", []string{"nope"}, 2},
		{"unreadable file", "", "one", []string{"source"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := manifestLine([]byte(tt.data), tt.app, tt.keys...); got != tt.want {
				t.Errorf("manifestLine(%s, %v) = %d, want %d", tt.app, tt.keys, got, tt.want)
			}
		})
	}
}

func TestPolicyWaveLine(t *testing.T) {
	policy := []byte("apiVersion: fleetwave/v1\nwaves:\n  - name: canary\n    maxParallel: 1\n  - name: \"prod\" # the last\n")
	for wave, want := range map[string]int{"canary": 3, "prod": 5, "staging": 0, "": 0} {
		if got := policyWaveLine(policy, wave); got != want {
			t.Errorf("policyWaveLine(%q) = %d, want %d", wave, got, want)
		}
	}
}
