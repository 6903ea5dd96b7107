package helm4

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func chartFiles() []File {
	return []File{
		{Name: "Chart.yaml", Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
		{Name: "values.yaml", Data: []byte("x: 1\n")},
		{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n" +
			"  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n  helm: {{ .Capabilities.HelmVersion.Version | quote }}\n" +
			"  apis: {{ len .Capabilities.APIVersions | quote }}\n  x: {{ .Values.x | quote }}\n")},
		{Name: "templates/hook.yaml", Data: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n")},
		{Name: "crds/crd.yaml", Data: []byte("kind: CustomResourceDefinition\n")},
	}
}

func TestTemplate(t *testing.T) {
	cli := CLIs["v4.2.4"]
	for _, tc := range []struct {
		name    string
		o       Options
		vals    map[string]any
		has     []string
		hasNot  []string
		wantErr string
	}{
		{name: "defaults of the released binary", o: Options{ReleaseName: "r", Namespace: "ns"},
			has: []string{`kube: "v1.36.0"`, `helm: "v4.2.4"`, `apis: "55"`, `x: "1"`, "# Source: c/templates/hook.yaml"}, hasNot: []string{"crds/crd.yaml"}},
		{name: "flags", o: Options{ReleaseName: "r", KubeVersion: "1.30.0", APIVersions: []string{"a/v1"}, IncludeCRDs: true, SkipTests: true},
			vals: map[string]any{"x": 2},
			has:  []string{`kube: "v1.30.0"`, `apis: "56"`, `x: "2"`, "# Source: c/crds/crd.yaml"}, hasNot: []string{"hook.yaml"}},
		{name: "no hooks", o: Options{ReleaseName: "r", DisableHooks: true}, hasNot: []string{"hook.yaml"}},
		{name: "bad release name", o: Options{ReleaseName: "Not_Valid"}, wantErr: `release name check failed: release name "Not_Valid"`},
		{name: "bad kube version", o: Options{ReleaseName: "r", KubeVersion: "x"}, wantErr: "invalid kube version 'x'"},
		{name: "validation refuses", o: Options{ReleaseName: "r", ValidateValues: func(v map[string]any) error {
			if v["x"] != nil {
				return errors.New("x is not allowed")
			}
			return nil
		}}, wantErr: "x is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := Load(chartFiles())
			if err != nil {
				t.Fatal(err)
			}
			vals := tc.vals
			if vals == nil {
				vals = map[string]any{}
			}
			raw, err := Template(context.Background(), cli, ch, vals, tc.o)
			out := string(raw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.has {
				if !strings.Contains(out, h) {
					t.Errorf("output lacks %q:\n%s", h, out)
				}
			}
			for _, h := range tc.hasNot {
				if strings.Contains(out, h) {
					t.Errorf("output has %q:\n%s", h, out)
				}
			}
		})
	}
}
