package instances

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const secretToken = "eu-token-do-not-print-me"

func getenv(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseValid(t *testing.T) {
	dir := t.TempDir()
	tokFile := writeFile(t, dir, "us-token", "us-token-from-file\n")
	data := `instances:
  - name: eu
    url: https://argocd-eu.example.com/
    token: {env: ARGOCD_EU_TOKEN}
    maxSyncs: 25
    owns:
      - paths: ["clusters/eu/**"]
      - labels: {fleetwave.io/instance: eu}
  - name: us
    url: http://127.0.0.1:8080/argo-cd
    token: {file: ` + tokFile + `}
    tls: {insecure: true}
    agent: true
    owns:
      - projects: [us-*]
        destinations: [prd-us-*]
`
	s, err := ParseWith("instances.yaml", []byte(data), Options{Getenv: getenv("ARGOCD_EU_TOKEN", secretToken)})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); !cmp.Equal(got, []string{"eu", "us"}) || s.Len() != 2 || s.IsSingle() || s.File() != "instances.yaml" {
		t.Fatalf("Names %v Len %d", got, s.Len())
	}
	eu, ok := s.Get("eu")
	if !ok || eu.URL != "https://argocd-eu.example.com" || eu.MaxSyncs != 25 || eu.Agent || eu.Line != 2 || len(eu.Owns) != 2 || eu.Owns[1].Line != 8 {
		t.Errorf("eu = %+v", eu)
	}
	if tok, err := eu.TokenSource()(); err != nil || tok != secretToken {
		t.Errorf("eu token %q, %v", tok, err)
	}
	us, _ := s.Get("us")
	if eu.AgentNamespace != "" || us.AgentNamespace != DefaultAgentNamespace || us.AgentDestinationMapping {
		t.Errorf("agent namespaces: eu %q, us %q (mapping %v), want none and the default", eu.AgentNamespace, us.AgentNamespace, us.AgentDestinationMapping)
	}
	if us.URL != "http://127.0.0.1:8080/argo-cd" || us.MaxSyncs != DefaultMaxSyncs || !us.Agent || !us.Insecure ||
		!cmp.Equal(us.Owns[0].Projects, []string{"us-*"}) || !cmp.Equal(us.Owns[0].Destinations, []string{"prd-us-*"}) {
		t.Errorf("us = %+v", us)
	}
	if tok, err := us.TokenSource()(); err != nil || tok != "us-token-from-file" {
		t.Errorf("us token %q, %v", tok, err)
	}
	if _, ok := s.Get("ap"); ok {
		t.Error("Get(ap) found an instance")
	}
	if got, want := s.URLs(), map[string]string{"eu": "https://argocd-eu.example.com", "us": "http://127.0.0.1:8080/argo-cd"}; !cmp.Equal(got, want) {
		t.Errorf("URLs = %v, want %v", got, want)
	}
	for _, in := range s.Instances() {
		if strings.Contains(in.String(), "token-") && !strings.Contains(in.String(), "file ") || strings.Contains(in.String(), secretToken) {
			t.Errorf("String %q shows a token", in.String())
		}
	}
	if got := eu.String(); got != "eu https://argocd-eu.example.com (token env ARGOCD_EU_TOKEN)" {
		t.Errorf("String = %q", got)
	}
}

// TestParseProblems: every problem of a file, one line each with its position, in file order; never a token.
func TestParseProblems(t *testing.T) {
	dir := t.TempDir()
	notPEM := writeFile(t, dir, "ca.pem", "not a certificate")
	empty := writeFile(t, dir, "empty-token", "\n")
	missing := filepath.Join(dir, "no-such-token")
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"syntax", "instances: [\n", []string{"f.yaml:1: invalid YAML: did not find expected node content (hint: check the indentation, and quote values that contain ': ' or start with special characters)"}},
		{"empty", "", []string{"f.yaml:1: empty: want `instances:` and a list of Argo CD instances"}},
		{"not a mapping", "- eu\n", []string{"f.yaml:1:1: the instances file must be a mapping, not a list"}},
		{"unknown top key", "instance: []\n", []string{
			`f.yaml:1:1: unknown field "instance" in the instances file (hint: did you mean instances?)`,
			"f.yaml:1:1: `instances` is required: the list of Argo CD instances"}},
		{"empty list", "instances: []\n", []string{"f.yaml:1:12: instances must be a list of one or more Argo CD instances, not a list"}},
		{"everything wrong", `instances:
  - name: EU
    url: ftp://argocd
    token: {env: ARGOCD_EU_TOKEN, file: /x}
    maxSyncs: 0
    agent: yes please
    tls: {caFile: ` + notPEM + `, insecure: maybe}
    owns:
      - {}
      - paths: ["/clusters/**"]
        projects: ["[a-"]
        labels: {}
      - path: ["clusters/**"]
  - name: us
    url: https://user:pw@argocd-us
    token: {env: ARGOCD_US_TOKEN}
    owns: []
  - name: ap
    token: {file: ` + empty + `}
    owns: [{paths: ["**"]}]
  - name: us
    url: https://argocd-us2
    token: {file: ` + missing + `}
    extra: 1
    owns: [{paths: ["**"]}]
`, []string{
			`f.yaml:2:11: name "EU" is not an instance name (hint: lowercase letters, digits and '-', at most 40, such as eu-prod)`,
			`f.yaml:3:10: url: "ftp://argocd": want http(s)://host[/path]`,
			`f.yaml:4:12: token: give exactly one of env and file (hint: {env: ARGOCD_EU_TOKEN} or {file: /var/run/secrets/argocd-eu/token})`,
			`f.yaml:5:15: maxSyncs must be a number of sync operations from 1 to 10000, not "0" (hint: Argo CD's controller runs 10 at once per shard by default (--operation-processors))`,
			`f.yaml:6:12: agent must be true or false, not "yes please"`,
			`f.yaml:7:19: tls.caFile: ` + notPEM + ` holds no PEM certificate`,
			`f.yaml:7:` + strconv.Itoa(19+len(notPEM)+12) + `: tls.insecure must be true or false, not "maybe"`,
			`f.yaml:9:9: a rule with no field would match every app (hint: write paths: ["**"] to own every app)`,
			`f.yaml:10:17: paths: "/clusters/**": paths are relative to the repository's top level: drop the leading /`,
			`f.yaml:11:20: projects: "[a-": not a valid glob: ` + globErr("[a-"),
			`f.yaml:12:17: labels: give one or more labels`,
			`f.yaml:13:9: unknown field "path" in a rule of owns (hint: did you mean paths?)`,
			`f.yaml:15:10: url: "https://user:xxxxx@argocd-us": credentials do not belong in the URL (use token)`,
			`f.yaml:16:18: token.env: environment variable ARGOCD_US_TOKEN is not set`,
			`f.yaml:17:11: owns must be a list of one or more rules, not a list (hint: such as - paths: ["clusters/eu/**"])`,
			`f.yaml:18:5: instance: url is required: its API URL, such as https://argocd-eu.example.com`,
			`f.yaml:19:19: token.file: token file ` + empty + ` is empty`,
			`f.yaml:21:5: instance "us" is named twice (hint: first at line 14)`,
			`f.yaml:23:19: token.file: token file ` + missing + `: no such file or directory`,
			`f.yaml:24:5: unknown field "extra" in an instance (hint: known: name, url, token, tls, maxSyncs, agent, agentNamespace, agentDestinationMapping, owns)`,
		}},
		{"agent fields without agent", "instances:\n  - name: eu\n    url: https://a\n    token: {env: T}\n    agentNamespace: argocd\n    owns: [{paths: ['**']}]\n", []string{
			"f.yaml:2:5: instance eu: agentNamespace is for an argocd-agent principal: add agent: true, or remove it",
		}},
		{"bad agent namespace", "instances:\n  - name: eu\n    url: https://a\n    token: {env: T}\n    agent: true\n    agentNamespace: Argo_CD\n    agentDestinationMapping: sometimes\n    owns: [{paths: ['**']}]\n", []string{
			`f.yaml:6:21: agentNamespace "Argo_CD" is not a namespace name (hint: the namespace the agents' Argo CD runs in (argocd-agent's agent.namespace))`,
			`f.yaml:7:30: agentDestinationMapping must be true or false, not "sometimes"`,
		}},
		{"missing fields", "instances:\n  - name: eu\n", []string{
			"f.yaml:2:5: instance: url is required: its API URL, such as https://argocd-eu.example.com",
			"f.yaml:2:5: instance: token is required: {env: VARIABLE} or {file: /path/to/token}",
			`f.yaml:2:5: instance: owns is required: the rules of the apps it holds, such as - paths: ["clusters/eu/**"]`,
		}},
		{"duplicate key", "instances:\n  - name: eu\n    name: us\n", []string{
			`f.yaml:2:5: instance: url is required: its API URL, such as https://argocd-eu.example.com`,
			"f.yaml:2:5: instance: token is required: {env: VARIABLE} or {file: /path/to/token}",
			`f.yaml:2:5: instance: owns is required: the rules of the apps it holds, such as - paths: ["clusters/eu/**"]`,
			`f.yaml:3:5: duplicate key "name" in an instance (hint: first set at line 2)`,
		}},
		{"long name", "instances:\n  - name: " + strings.Repeat("a", 41) + "\n    url: https://a\n    token: {env: T}\n    owns: [{paths: ['**']}]\n", []string{
			`f.yaml:2:11: name "` + strings.Repeat("a", 41) + `" is not an instance name (hint: lowercase letters, digits and '-', at most 40, such as eu-prod)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWith("f.yaml", []byte(tt.data), Options{Getenv: getenv("T", secretToken)})
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *Error", err)
			}
			var got []string
			for _, p := range fe.Problems {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(strings.Join(got, "\n"), secretToken) {
				t.Errorf("error not one line, or shows a token: %v", err)
			}
			if len(got) > 1 && !strings.HasSuffix(err.Error(), "more; run fleetwave validate --argocd-instances f.yaml]") {
				t.Errorf("Error() = %q", err)
			}
		})
	}
}

func globErr(p string) string {
	_, err := nameGlob(p)
	s := err.Error()
	return strings.TrimPrefix(s, "not a valid glob: ")
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "instances.yaml", "instances:\n  - {name: eu, url: https://a, token: {env: ARGOCD_EU_TOKEN}, owns: [{paths: ['**']}]}\n")
	t.Setenv("ARGOCD_EU_TOKEN", secretToken)
	s, err := Load(p)
	if err != nil || s.Len() != 1 {
		t.Fatalf("Load: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "none.yaml")); err == nil || err.Error() != "instances file "+filepath.Join(dir, "none.yaml")+": no such file or directory" {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestSingle(t *testing.T) {
	s := Single("https://argocd.example.com/", secretToken, true, "")
	if !s.IsSingle() || s.Len() != 1 || !cmp.Equal(s.Names(), []string{""}) || s.File() != "" {
		t.Fatalf("Single = %+v", s)
	}
	in, ok := s.Get("")
	if !ok || in.URL != "https://argocd.example.com" || !in.Insecure || in.MaxSyncs != 0 {
		t.Errorf("instance %+v", in)
	}
	if in.String() != "https://argocd.example.com (token [redacted]) (TLS not verified)" {
		t.Errorf("String = %q", in.String())
	}
	if tok, _ := in.TokenSource()(); tok != secretToken {
		t.Errorf("token %q", tok)
	}
	var none *Set
	if s.URLs() != nil || none.URLs() != nil {
		t.Error("URLs of a fleet of one (or none) name an instance")
	}
	if none.Len() != 0 || none.Names() != nil || none.IsSingle() {
		t.Error("a nil Set has instances")
	}
	if o := in.Options(nil); o.Token != secretToken || o.TokenSource != nil || o.BaseURL != "https://argocd.example.com" || !o.Insecure {
		t.Errorf("Options = %+v", o)
	}
}
