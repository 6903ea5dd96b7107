package helm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/render/helm"
	"github.com/fleetwave/fleetwave/internal/render/repofs"
	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

const fixturesDir = "testdata/fixtures"

func refusal(rule repofs.Rule) func(error) bool {
	return func(err error) bool {
		var r *repofs.Refusal
		return errors.As(err, &r) && r.Rule == rule
	}
}

// fixtureErrors lists the fixtures Argo CD (or the bot's confinement) refuses, and why: each must fail for that
// reason, not any other.
var fixtureErrors = map[string]func(error) bool{
	"dependency-remote-refused": func(err error) bool {
		return errors.Is(err, helm.ErrMissingDependency) && errors.Is(err, helm.ErrRemote)
	},
	"remote-valuefile-refused":  func(err error) bool { return errors.Is(err, helm.ErrRemote) },
	"schema-remote-ref-refused": func(err error) bool { return errors.Is(err, helm.ErrRemote) },
	"schema-file-ref-refused":   func(err error) bool { return errors.Is(err, helm.ErrRemote) },
	"valuefile-missing":         func(err error) bool { return errors.Is(err, helm.ErrValuesFileNotFound) },
	"valuefile-escape-refused":  refusal(repofs.RulePathEscape),
	"ref-escape-refused":        refusal(repofs.RulePathEscape),
	"valuefile-symlink-refused": refusal(repofs.RuleSymlinkEscape),
}

// TestFixtures renders the package's own fixtures (what the corpus cannot hold: multi-source $ref values,
// offline dependency builds, refusals, value-file edge cases) and compares with their goldens. The goldens
// have the corpus's format (Argo CD output after tracking) so a tool running Argo CD's GenerateManifests can
// regenerate them; -update rewrites them from this engine.
func TestFixtures(t *testing.T) {
	ents, err := os.ReadDir(fixturesDir)
	if err != nil {
		t.Fatal(err)
	}
	e := helm.New()
	seen := 0
	for _, ent := range ents {
		if !ent.IsDir() {
			continue
		}
		seen++
		name := ent.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(fixturesDir, name)
			tc := readCase(t, dir, renderEnv{})
			in, _ := tc.input(t)
			objs, err := e.Template(context.Background(), in)
			errFile := filepath.Join(dir, "expected-error.txt")
			goldFile := filepath.Join(dir, "expected.yaml")
			if check, ok := fixtureErrors[name]; ok {
				if err == nil {
					t.Fatalf("rendered, want an error")
				}
				if !check(err) {
					t.Errorf("error of the wrong kind: %v", err)
				}
				if strings.ContainsAny(err.Error(), "\n\r") {
					t.Errorf("error is not one line: %q", err)
				}
				if strings.Contains(err.Error(), mustAbs(t, dir)) {
					t.Errorf("error reveals the checkout's location: %v", err)
				}
				if golden.Updating() {
					writeFile(t, errFile, []byte(err.Error()+"\n"))
					return
				}
				if _, rerr := os.Stat(errFile); rerr != nil {
					t.Errorf("no %s (run with -update)", errFile)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			got := finish(t, objs, tc)
			if golden.Updating() {
				writeFile(t, goldFile, got)
				return
			}
			want, err := os.ReadFile(goldFile)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			diffs, orderDiffers, err := compareStreams(want, got)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range diffs {
				t.Error(d)
			}
			if orderDiffers {
				t.Error("objects in a different order than the golden")
			}
		})
	}
	if seen == 0 {
		t.Fatal("no fixtures")
	}
}

// TestFixtureRecordsReads checks that the files the engine reads (chart, value files in ref sources, set-file
// targets) are recorded, and that ignored chart files are not read.
func TestFixtureRecordsReads(t *testing.T) {
	for _, c := range []struct {
		fixture  string
		want     []string
		wantNone []string
	}{
		{
			fixture: "multisource-ref-values",
			want: []string{"src/app/Chart.yaml", "src/app/templates/echo.yaml", "src/app/values.yaml",
				"envs/prod.yaml", "envs/helm-multisource.yaml", "files/config.txt"},
		},
		{
			// Missing value files skipped by ignoreMissingValueFiles are consulted: creating one changes the output.
			fixture: "ignore-missing-valuefiles",
			want:    []string{"src/app/envs/dev.yaml", "src/app/envs/prod.yaml", "src/app/envs/ignore-missing.yaml"},
		},
		{
			fixture:  "subcharts-hooks",
			want:     []string{"src/shop/.helmignore", "src/shop/charts/cache-0.3.0.tgz", "src/shop/crds/widgets.yaml"},
			wantNone: []string{"src/shop/templates/ignored-debug.yaml", "src/shop/docs/README.md", "src/shop/templates/extra.yaml.bak"},
		},
		{
			fixture: "dependency-build-offline",
			want:    []string{"src/platform/common/Chart.yaml", "src/platform/common/templates/common.yaml", "src/platform/app/charts/old-0.1.0.tgz"},
		},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			tc := readCase(t, filepath.Join(fixturesDir, c.fixture), renderEnv{})
			in, rec := tc.input(t)
			if _, err := helm.New().Template(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			files := rec.Files()
			for _, w := range c.want {
				if !slices.Contains(files, w) {
					t.Errorf("%s not recorded; recorded %v", w, files)
				}
			}
			for _, w := range c.wantNone {
				if slices.Contains(files, w) {
					t.Errorf("%s recorded, but helm ignores it", w)
				}
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
