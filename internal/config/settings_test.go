package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/golden"
)

// notSettings are the FLEETWAVE_* names in the code that are not settings of a deployment or a command, each
// with where it belongs.
var notSettings = map[string]string{
	"FLEETWAVE_RENDER_WORKER":     "internal/render/isolate: marks a render worker process, set by the pool itself",
	"FLEETWAVE_SHARED_DIR":        "tests: the shared reference material (internal/testkit/sharedtest)",
	"FLEETWAVE_REQUIRE_SHARED":    "tests: the shared material must be there (CI)",
	"FLEETWAVE_FIDELITY_DIR":      "tests and hack/benchrender: the render-fidelity corpus",
	"FLEETWAVE_MEMCEILING_CHILD":  "tests: internal/testkit/memceiling's child process",
	"FLEETWAVE_TEST_POSTGRES_DSN": "tests: a PostgreSQL server for the store's suite",
	"FLEETWAVE_E2E_ENV":           "test/e2e: the end-to-end environment",
	"FLEETWAVE_HELM_BIN":          "hack/bench*: the helm binary the benchmarks compare with",
	"FLEETWAVE_KUSTOMIZE_BIN":     "hack/bench*: the kustomize binary the benchmarks compare with",
}

var settingName = regexp.MustCompile(`FLEETWAVE_[A-Z0-9_]*[A-Z0-9]`)

// readsEnv is a read of a FLEETWAVE_* variable by its literal name, which only this package may do.
var readsEnv = regexp.MustCompile(`(?i)(getenv|env|lookupenv)\(\s*"FLEETWAVE_`)

// TestNoSettingOutsideConfig: every FLEETWAVE_* name in the module's code (comments and help text included) is
// a setting of Settings, or one of notSettings; and no package but this one reads one by its literal name.
func TestNoSettingOutsideConfig(t *testing.T) {
	known := map[string]bool{}
	for _, s := range Settings {
		if known[s.Name] {
			t.Errorf("%s is listed twice in Settings", s.Name)
		}
		known[s.Name] = true
	}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, name := range settingName.FindAllString(string(data), -1) {
			if !known[name] && notSettings[name] == "" {
				t.Errorf("%s: %s is neither in config.Settings (and docs/configuration.md) nor a known non-setting", rel, name)
			}
		}
		if filepath.Dir(rel) != filepath.Join("internal", "config") && strings.HasPrefix(rel, "internal") {
			if loc := readsEnv.FindIndex(data); loc != nil {
				if name := settingName.FindString(string(data[loc[0]:])); known[name] {
					t.Errorf("%s reads %s itself: read it through internal/config", rel, name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

const (
	tableStart = "<!-- settings table: generated from internal/config.Settings by `go test ./internal/config -update` -->"
	tableEnd   = "<!-- end of settings table -->"
)

// table is docs/configuration.md's table of Settings.
func table() string {
	var b strings.Builder
	b.WriteString("| variable | read by | default | meaning |\n|---|---|---|---|\n")
	for _, s := range Settings {
		var by []string
		if s.For&ForServe != 0 {
			by = append(by, "serve")
		}
		if s.For&ForCLI != 0 {
			by = append(by, "commands")
		}
		def := s.Default
		if def != "" {
			def = "`" + def + "`"
		}
		doc := s.Doc
		if s.Secret {
			doc = "**secret** (never printed): " + doc
		}
		b.WriteString("| `" + s.Name + "` | " + strings.Join(by, ", ") + " | " + def + " | " + doc + " |\n")
	}
	return b.String()
}

// TestConfigurationTable: docs/configuration.md's table is Settings' (-update rewrites it), so a setting in the
// code and not in the table, or in the table and not in the code, fails.
func TestConfigurationTable(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, tableStart, tableEnd)
	}
	got, want := doc[i+len(tableStart)+1:j], table()
	if got == want {
		return
	}
	if golden.Updating() {
		if err := os.WriteFile(path, []byte(doc[:i+len(tableStart)+1]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table is not config.Settings' (run go test ./internal/config -update); first difference at %s", path, golden.FirstDiff(got, want))
}

// TestFileKeys: a config file may set every setting of serve but the file's own name, and only those.
func TestFileKeys(t *testing.T) {
	keys := fileKeys()
	if slices.Contains(keys, EnvConfigFile) || !slices.Contains(keys, EnvRenderBudget) || !slices.Contains(keys, EnvStore) {
		t.Errorf("fileKeys() = %v", keys)
	}
	if got := SecretNames(); strings.Join(got, ",") != strings.Join([]string{EnvPrivateKey, EnvWebhookSecret, EnvArgoCDToken, EnvFleetViewToken}, ",") {
		t.Errorf("SecretNames() = %v", got)
	}
}
