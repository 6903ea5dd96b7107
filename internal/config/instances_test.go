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

// TestServeInstancesFile: FLEETWAVE_ARGOCD_INSTANCES_FILE is checked readable with the other settings; its content
// is internal/edge/argocd/instances' to read. String names the file.
func TestServeInstancesFile(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM, "/etc/instances.yaml": instancesYAML}
	c, err := LoadServe(env(with(EnvArgoCDInstances, "/etc/instances.yaml")...), "", fsys.read)
	if err != nil {
		t.Fatal(err)
	}
	if c.ArgoCDInstancesFile != "/etc/instances.yaml" || c.ArgoCDURL != "" {
		t.Fatalf("%+v", c)
	}
	if s := c.String(); !strings.Contains(s, "argocd=instances file /etc/instances.yaml ") {
		t.Errorf("String = %s", s)
	}
}

// TestServeInstancesFileProblems: the file with FLEETWAVE_ARGOCD_URL (or its token or TLS setting) is one line
// each, with every other problem at once; a token never shows.
func TestServeInstancesFileProblems(t *testing.T) {
	fsys := files{"/keys/app.pem": rsaPEM, "/etc/instances.yaml": instancesYAML}
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"with the URL", with(EnvArgoCDInstances, "/etc/instances.yaml", EnvArgoCDURL, "https://argocd", EnvArgoCDToken, argoToken, EnvArgoCDInsecure, "false"), []string{
			"FLEETWAVE_ARGOCD_URL: set, and so is FLEETWAVE_ARGOCD_INSTANCES_FILE: the instances file gives each instance its URL, token and TLS options; set one of them",
			"FLEETWAVE_ARGOCD_TOKEN: set, and so is FLEETWAVE_ARGOCD_INSTANCES_FILE: the instances file gives each instance its URL, token and TLS options; set one of them",
		}},
		{"missing, and another at once", with(EnvArgoCDInstances, "/etc/none.yaml", EnvAddr, "x"), []string{
			`FLEETWAVE_ADDR: listen address "x": want host:port or :port`,
			"FLEETWAVE_ARGOCD_INSTANCES_FILE: reading the instances file: open /etc/none.yaml: file does not exist"}},
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
	_, err := LoadServe(env(with(EnvArgoCDInstances, "/etc/instances.yaml", EnvArgoCDInsecure, "true")...), "", fsys.read)
	if err == nil || !strings.Contains(err.Error(), "FLEETWAVE_ARGOCD_INSECURE: set, and so is FLEETWAVE_ARGOCD_INSTANCES_FILE") {
		t.Errorf("insecure with the file: %v", err)
	}
}
