package target

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Version
		wantErr string
	}{
		{in: "", want: Newest},
		{in: "3.6", want: Version{3, 6}},
		{in: "v3.5", want: Version{3, 5}},
		{in: "3.4.7", want: Version{3, 4}},
		{in: "v3.6.1+4d1e5a2", want: Version{3, 6}}, // /api/version's Version
		{in: "3.2.0-rc1", want: Version{3, 2}},
		{in: "3.1", wantErr: "argocd version 3.1 is not supported: fleetwave renders as Argo CD 3.2 to 3.6"},
		{in: "3.7", wantErr: "argocd version 3.7 is not supported"},
		{in: "2.14.21", wantErr: "argocd version 2.14 is not supported"},
		{in: "4.0", wantErr: "argocd version 4.0 is not supported"},
		{in: "3", wantErr: `argocd version "3": want MAJOR.MINOR, e.g. 3.6`},
		{in: "three.six", wantErr: "want MAJOR.MINOR"},
		{in: "3.6.x", wantErr: "want MAJOR.MINOR"},
		{in: "3.-1", wantErr: "want MAJOR.MINOR"},
	} {
		got, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse(%q) error is not one line: %q", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		v                          Version
		helm4, globs, refsResolved bool
		cli                        string
		helmVersions               string
		clusterV, clusterVSuffix   string
	}{
		{v: Version{3, 2}, cli: "v3.19.4", helmVersions: ",v3", clusterV: "1.30", clusterVSuffix: "1.29"},
		{v: Version{3, 3}, cli: "v3.19.4", helmVersions: ",v3", clusterV: "1.30", clusterVSuffix: "1.29"},
		{v: Version{3, 4}, globs: true, cli: "v3.19.4", helmVersions: ",v3", clusterV: "v1.30.5", clusterVSuffix: "v1.29.3"},
		{v: Version{3, 5}, helm4: true, globs: true, cli: "v4.2.1", helmVersions: ",v3,v4", clusterV: "v1.30.5", clusterVSuffix: "v1.29.3"},
		{v: Version{3, 6}, helm4: true, globs: true, refsResolved: true, cli: "v4.3.1", helmVersions: ",v3,v4", clusterV: "v1.30.5", clusterVSuffix: "v1.29.3"},
		{v: Version{}, helm4: true, globs: true, refsResolved: true, cli: "v4.3.1", helmVersions: ",v3,v4", clusterV: "v1.30.5", clusterVSuffix: "v1.29.3"},
	} {
		t.Run(tc.v.String(), func(t *testing.T) {
			if got := tc.v.Helm4(); got != tc.helm4 {
				t.Errorf("Helm4() = %v", got)
			}
			if got := tc.v.ValueFileGlobs(); got != tc.globs {
				t.Errorf("ValueFileGlobs() = %v", got)
			}
			if got := tc.v.RefRevisionsResolved(); got != tc.refsResolved {
				t.Errorf("RefRevisionsResolved() = %v", got)
			}
			if got := tc.v.HelmCLI(); got != tc.cli {
				t.Errorf("HelmCLI() = %v", got)
			}
			if got := strings.Join(tc.v.HelmVersionValues(), ","); got != tc.helmVersions {
				t.Errorf("HelmVersionValues() = %q", got)
			}
			if got := tc.v.ClusterVersion("v1.30.5"); got != tc.clusterV {
				t.Errorf("ClusterVersion(v1.30.5) = %q", got)
			}
			if got := tc.v.ClusterVersion("v1.29.3-eks-1234"); got != tc.clusterVSuffix {
				t.Errorf("ClusterVersion(v1.29.3-eks-1234) = %q", got)
			}
			if got := tc.v.ClusterVersion(""); got != "" {
				t.Errorf("ClusterVersion(\"\") = %q", got)
			}
			if got := tc.v.ClusterVersion("latest"); got != "latest" {
				t.Errorf("ClusterVersion(latest) = %q, want it passed on", got)
			}
		})
	}
}

func TestHelmVersionError(t *testing.T) {
	if got := (Version{3, 4}).HelmVersionError("v2").Error(); got != "helm chart version 'v2' is not supported" {
		t.Errorf("3.4: %q", got)
	}
	if got := (Version{3, 6}).HelmVersionError("v2").Error(); got != "helm version 'v2' is not supported" {
		t.Errorf("3.6: %q", got)
	}
}
