package chartdir_test

import (
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/helm/chartdir"
	"github.com/fleetwave/fleetwave/internal/render/repofs/repofstest"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
)

func TestRead(t *testing.T) {
	chart := map[string]string{
		"c/Chart.yaml":             "apiVersion: v2\nname: c\nversion: 1.0.0\n",
		"c/values.yaml":            "\xEF\xBB\xBFx: 1\n",
		"c/templates/cm.yaml":      "kind: ConfigMap\n",
		"c/templates/.hidden.yaml": "kind: Secret\n",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range chart {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		lim     chartdir.Limits
		want    string // names read, in order, and the values file's first bytes
		wantErr string
	}{
		{name: "helm's defaults: templates/.* ignored, BOM dropped", files: chart,
			want: "Chart.yaml templates/cm.yaml values.yaml | x: 1"},
		{name: ".helmignore", files: with(map[string]string{"c/.helmignore": "docs/\n*.md\n", "c/docs/a.txt": "a", "c/README.md": "r"}),
			want: ".helmignore Chart.yaml templates/cm.yaml values.yaml | x: 1"},
		{name: "symbolic links followed", files: with(map[string]string{"c/templates/link.yaml": "->cm.yaml", "lib/sub/Chart.yaml": "name: sub\n", "c/charts/sub": "->../../lib/sub"}),
			want: "Chart.yaml charts/sub/Chart.yaml templates/cm.yaml templates/link.yaml values.yaml | x: 1"},
		{name: "a symbolic link out of the checkout", files: with(map[string]string{"c/templates/passwd": "->/etc/passwd"}),
			wantErr: "refused (symlink-escape)"},
		{name: "a symbolic link loop ends at the depth limit", files: with(map[string]string{"c/charts/loop": "->.."}),
			lim: chartdir.Limits{MaxFiles: 100, MaxBytes: 1 << 20, MaxDepth: 5}, wantErr: "directories nested deeper than 5"},
		{name: "too many files", files: chart, lim: chartdir.Limits{MaxFiles: 2, MaxBytes: 1 << 20, MaxDepth: 5},
			wantErr: "chart c has more than 2 files"},
		{name: "too many bytes", files: chart, lim: chartdir.Limits{MaxFiles: 100, MaxBytes: 50, MaxDepth: 5},
			wantErr: "chart c is larger than 50 bytes"},
		{name: "no such directory", files: map[string]string{"other/x": ""}, wantErr: "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := repofstest.Open(t, filetest.Tree(t, tc.files))
			lim := tc.lim
			if lim == (chartdir.Limits{}) {
				lim = chartdir.DefaultLimits
			}
			files, err := chartdir.Read(fsys, "c", lim)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			values := ""
			for _, f := range files {
				names = append(names, f.Name)
				if f.Name == "values.yaml" {
					values = strings.TrimSpace(string(f.Data))
				}
			}
			if got := strings.Join(names, " ") + " | " + values; got != tc.want {
				t.Errorf("read %q, want %q", got, tc.want)
			}
		})
	}
}
