package sharedtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeCorpus writes a complete corpus of n cases under a temporary folder; case 0 vendors a subchart.
func fakeCorpus(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		c := filepath.Join(dir, "cases", fmt.Sprintf("case-%02d", i))
		files := map[string]string{"app.yaml": "kind: Application\n", "render-env.yaml": "{}\n",
			"expected.yaml": "---\n", "expected-helm3.yaml": "---\n", "SOURCE": "src/chart <= https://example.com/chart\n"}
		if i == 0 {
			files["SOURCE"] += "src/chart/charts/sub <= https://example.com/sub\n"
			files["src/chart/charts/sub/Chart.yaml"] = "name: sub\n"
		}
		files["src/chart/Chart.yaml"] = "name: chart\n"
		for name, content := range files {
			p := filepath.Join(c, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestCheckFidelity(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cases int
		spoil func(dir string) error
		want  string // a problem CheckFidelity must report; empty: complete
	}{
		{name: "complete", cases: FidelityCases},
		{name: "more cases than the corpus had", cases: FidelityCases + 1},
		{name: "too few cases", cases: FidelityCases - 1, want: "43 cases with an app.yaml, want at least 44"},
		{name: "no cases folder", cases: 0, spoil: func(dir string) error { return os.RemoveAll(filepath.Join(dir, "cases")) },
			want: "no cases folder"},
		{name: "vendored subchart missing", cases: FidelityCases,
			spoil: func(dir string) error {
				return os.RemoveAll(filepath.Join(dir, "cases", "case-00", "src", "chart", "charts"))
			},
			want: "case-00: SOURCE lists vendored src/chart/charts/sub, absent"},
		{name: "Argo CD's output missing", cases: FidelityCases,
			spoil: func(dir string) error {
				return os.Remove(filepath.Join(dir, "cases", "case-03", "expected-helm3.yaml"))
			},
			want: "case-03 has neither expected-helm3.yaml nor expected-helm3-error.txt"},
		{name: "Argo CD's Helm 4 output missing", cases: FidelityCases,
			spoil: func(dir string) error {
				return os.Remove(filepath.Join(dir, "cases", "case-05", "expected.yaml"))
			},
			want: "case-05 has neither expected.yaml nor expected-error.txt"},
		{name: "refusals stand for outputs", cases: FidelityCases,
			spoil: func(dir string) error {
				c := filepath.Join(dir, "cases", "case-06")
				for _, n := range []string{"expected.yaml", "expected-helm3.yaml"} {
					if err := os.Remove(filepath.Join(c, n)); err != nil {
						return err
					}
					errFile := filepath.Join(c, strings.TrimSuffix(n, ".yaml")+"-error.txt")
					if err := os.WriteFile(errFile, []byte("Error: execution error\n"), 0o644); err != nil {
						return err
					}
				}
				return nil
			}},
		{name: "render-env missing", cases: FidelityCases,
			spoil: func(dir string) error { return os.Remove(filepath.Join(dir, "cases", "case-07", "render-env.yaml")) },
			want:  "case-07 has no render-env.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeCorpus(t, tc.cases)
			if tc.spoil != nil {
				if err := tc.spoil(dir); err != nil {
					t.Fatal(err)
				}
			}
			problems := CheckFidelity(dir)
			got := strings.Join(problems, "; ")
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Fatalf("complete corpus reported incomplete: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("problems %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// recorder is a testing.TB that records a skip or a failure and stops the calling goroutine, as testing does.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...); runtime.Goexit() }

// call runs f(r) on its own goroutine (Skip and Fatal end it) and returns what f returned, if it returned.
func call(r *recorder, f func(testing.TB) string) string {
	done := make(chan string, 1)
	go func() {
		defer close(done)
		done <- f(r)
	}()
	return <-done
}

// A partial or absent corpus skips with one line, or fails under FLEETWAVE_REQUIRE_SHARED=1.
func TestFidelity(t *testing.T) {
	complete, partial := fakeCorpus(t, FidelityCases), fakeCorpus(t, 3)
	absent := filepath.Join(t.TempDir(), "nowhere")
	for _, tc := range []struct {
		name, dir, require string
		want               string // "ok", "skip" or "fail"
	}{
		{"complete", complete, "", "ok"},
		{"complete, required", complete, "1", "ok"},
		{"partial", partial, "", "skip"},
		{"partial, required", partial, "1", "fail"},
		{"absent", absent, "", "skip"},
		{"absent, required", absent, "1", "fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvFidelityDir, tc.dir)
			t.Setenv(EnvRequire, tc.require)
			r := &recorder{}
			got := call(r, Fidelity)
			msg := r.skipped + r.failed
			switch tc.want {
			case "ok":
				if got != tc.dir || msg != "" {
					t.Fatalf("Fidelity = %q (%s), want %q", got, msg, tc.dir)
				}
				if dirs := call(&recorder{}, func(tb testing.TB) string { return fmt.Sprint(len(FidelityCaseDirs(tb))) }); dirs != fmt.Sprint(FidelityCases) {
					t.Fatalf("FidelityCaseDirs: %s cases, want %d", dirs, FidelityCases)
				}
			case "skip":
				if r.skipped == "" || r.failed != "" {
					t.Fatalf("want a skip, got skip %q, failure %q", r.skipped, r.failed)
				}
			case "fail":
				if r.failed == "" || r.skipped != "" {
					t.Fatalf("want a failure, got skip %q, failure %q", r.skipped, r.failed)
				}
			}
			if strings.Contains(msg, "\n") || (msg != "" && !strings.Contains(msg, tc.dir)) {
				t.Fatalf("want one line naming %s, got %q", tc.dir, msg)
			}
		})
	}
}
