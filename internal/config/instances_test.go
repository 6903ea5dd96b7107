package config

import (
	"errors"
	"strings"
	"testing"
)

const instancesYAML = `instances:
  - name: eu
    url: https://argocd-eu.example.com
    token: {env: ARGOCD_EU_TOKEN}
    owns: [{paths: ["clusters/eu/**"]}]
  - name: us
    url: https://argocd-us.example.com
    token: {env: ARGOCD_US_TOKEN}
    maxSyncs: 20
    owns: [{paths: ["clusters/us/**"]}]
`

// TestServeInstancesFile: FLEETWAVE_ARGOCD_INSTANCES_FILE is read and checked with the other settings, its
// tokens from the environment; String shows the instances, never a token.
func TestServeInstancesFile(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM, "/etc/instances.yaml": instancesYAML}
	c, err := LoadServe(env(with(EnvArgoCDInstances, "/etc/instances.yaml", "ARGOCD_EU_TOKEN", argoToken, "ARGOCD_US_TOKEN", argoToken+"-us")...), "", fsys.read)
	if err != nil {
		t.Fatal(err)
	}
	if c.ArgoCDInstancesFile != "/etc/instances.yaml" || c.ArgoCDURL != "" || strings.Join(c.ArgoCDInstances.Names(), ",") != "eu,us" {
		t.Fatalf("%+v", c)
	}
	us, _ := c.ArgoCDInstances.Get("us")
	if tok, _ := us.TokenSource()(); tok != argoToken+"-us" || us.MaxSyncs != 20 {
		t.Errorf("us: token %q, maxSyncs %d", tok, us.MaxSyncs)
	}
	if s := c.String(); !strings.Contains(s, "argocd=/etc/instances.yaml (instances eu,us, tokens [redacted])") || strings.Contains(s, argoToken) {
		t.Errorf("String = %s", s)
	}
}

// TestServeInstancesFileProblems: every problem at once, the file's one per line with its position; the file
// with FLEETWAVE_ARGOCD_URL (or its token or TLS setting) is one line each; a token never shows.
func TestServeInstancesFileProblems(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM, "/etc/instances.yaml": instancesYAML,
		"/etc/bad.yaml": "instances:\n  - name: eu\n    url: https://a\n    token: {env: ARGOCD_EU_TOKEN}\n    owns: [{path: ['**']}]\n"}
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"with the URL", with(EnvArgoCDInstances, "/etc/instances.yaml", EnvArgoCDURL, "https://argocd", EnvArgoCDToken, argoToken, EnvArgoCDInsecure, "false",
			"ARGOCD_EU_TOKEN", argoToken, "ARGOCD_US_TOKEN", argoToken), []string{
			"FLEETWAVE_ARGOCD_URL: set, and so is FLEETWAVE_ARGOCD_INSTANCES_FILE: the instances file gives each instance its URL, token and TLS options; set one of them",
			"FLEETWAVE_ARGOCD_TOKEN: set, and so is FLEETWAVE_ARGOCD_INSTANCES_FILE: the instances file gives each instance its URL, token and TLS options; set one of them",
		}},
		{"missing", with(EnvArgoCDInstances, "/etc/none.yaml"), []string{
			"FLEETWAVE_ARGOCD_INSTANCES_FILE: reading the instances file: open /etc/none.yaml: file does not exist"}},
		{"its problems and another at once", with(EnvArgoCDInstances, "/etc/bad.yaml", EnvAddr, "x"), []string{
			`FLEETWAVE_ADDR: listen address "x": want host:port or :port`,
			"/etc/bad.yaml:4:18: token.env: environment variable ARGOCD_EU_TOKEN is not set",
			`/etc/bad.yaml:5:13: unknown field "path" in a rule of owns (hint: did you mean paths?)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadServe(env(tt.env...), "", fsys.read)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if strings.Join(ce.Problems, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(ce.Problems, "\n"), strings.Join(tt.want, "\n"))
			}
			if strings.Contains(err.Error(), argoToken) {
				t.Errorf("error reveals the token: %v", err)
			}
		})
	}
}

func TestCLIInstancesFile(t *testing.T) {
	c, err := LoadCLI(env(EnvArgoCDInstances, " /etc/instances.yaml "))
	if err != nil || c.ArgoCDInstancesFile != "/etc/instances.yaml" {
		t.Errorf("%+v, %v", c, err)
	}
	_, err = LoadCLI(env(EnvArgoCDInstances, "/etc/instances.yaml", EnvArgoCDURL, "https://argocd"))
	if err == nil || err.Error() != "FLEETWAVE_ARGOCD_URL and FLEETWAVE_ARGOCD_INSTANCES_FILE are both set: the instances file gives each instance its URL; set one of them" {
		t.Errorf("both: %v", err)
	}
}

func TestServeInstancesFileInsecure(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM, "/etc/instances.yaml": instancesYAML}
	_, err := LoadServe(env(with(EnvArgoCDInstances, "/etc/instances.yaml", EnvArgoCDInsecure, "true",
		"ARGOCD_EU_TOKEN", argoToken, "ARGOCD_US_TOKEN", argoToken)...), "", fsys.read)
	if err == nil || !strings.Contains(err.Error(), "FLEETWAVE_ARGOCD_INSECURE: set, and so is FLEETWAVE_ARGOCD_INSTANCES_FILE") {
		t.Errorf("insecure with the file: %v", err)
	}
}
