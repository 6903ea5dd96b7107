package isolate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/render/isolate"
	"github.com/fleetwave/fleetwave/internal/testkit/filetest"
	"github.com/fleetwave/fleetwave/internal/testkit/hostileyaml"
)

// The hostile suite's caps: small, so that every case is quick, and a regression fails a case (too slow, an
// error without its rule) instead of taking the machine.
const (
	hostileTimeout = 3 * time.Second
	hostileMemory  = 512 << 20
	// parentRSSCap bounds the test process itself (the parent): the bombs' memory is the workers'.
	parentRSSCap = 1536 << 20
	// killSlack bounds how long past its time cap a render may take, measured from the parent's own clock: from
	// the moment its timer is armed (the request sent to a worker) to the moment Render returns. What it covers
	// is the parent's SIGKILL at the deadline, the reap of a worker of up to hostileMemory, and goroutines waking
	// on a loaded 2-core machine; none of it grows with the cap, so the slack is fixed, not a fraction of it.
	// Wall time from submit, which the suite measured before with a 1.2× bound, also counts the wait for a free
	// worker (the scheduler's, not the kill's), and that bound flaked at load 20 (3.63 s against 3.6 s). A
	// render whose kill does not come runs on to its worker's RLIMIT_CPU, at least twice the cap plus a second
	// on this machine, far past cap + slack: TestHostileBoundCatchesMissingKill shows the bound failing then.
	killSlack = time.Second
)

// withinKillBound reports whether a render armed at armed and returned at end ended within its cap and the
// kill's slack.
func withinKillBound(limit time.Duration, armed, end time.Time) bool {
	return end.Sub(armed) <= limit+killSlack
}

// renderTimes records, per app, when the pool armed its render's timer and when that timer fired.
type renderTimes struct {
	mu       sync.Mutex
	armed    map[string]time.Time
	deadline map[string]time.Time
}

func traceRenders(p *isolate.Pool) *renderTimes {
	rt := &renderTimes{armed: map[string]time.Time{}, deadline: map[string]time.Time{}}
	isolate.TraceRenders(p, func(app, event string, at time.Time) {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if event == "armed" {
			rt.armed[app] = at
			delete(rt.deadline, app)
		} else {
			rt.deadline[app] = at
		}
	})
	return rt
}

func (rt *renderTimes) of(app string) (armed, deadline time.Time) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.armed[app], rt.deadline[app]
}

const (
	chart = "apiVersion: v2\nname: bomb\nversion: 0.1.0\n"
	cm    = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
)

// hostileFiles is the repository the cases' apps point into; "outside" is a directory beside it.
func hostileFiles() map[string]string {
	nested := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	return map[string]string{
		"benign/cm.yaml": cm + "data: {ok: 'yes'}\n",

		"alias-helm/Chart.yaml":             chart,
		"alias-helm/values.yaml":            "x: 1\n" + hostileyaml.AliasBomb("", 9),
		"alias-helm/templates/cm.yaml":      cm,
		"alias-kust/kustomization.yaml":     "resources: [cm.yaml]\n",
		"alias-kust/cm.yaml":                cm + "data:\n" + hostileyaml.AliasBomb("  ", 9),
		"alias-kustfile/kustomization.yaml": "resources: [cm.yaml]\n" + hostileyaml.AliasBomb("", 9),
		"alias-kustfile/cm.yaml":            cm,
		"alias-plain/cm.yaml":               cm + "data:\n" + hostileyaml.AliasBomb("  ", 9),
		"alias-jsonnet/main.jsonnet":        "std.parseYaml(importstr 'b.yaml')",
		"alias-jsonnet/b.yaml":              "a: 1\n" + hostileyaml.AliasBomb("", 9),

		"deep-json/cm.json":            `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": ` + nested + `}`,
		"deep-yaml/cm.yaml":            cm + "data: " + nested + "\n",
		"deep-values/Chart.yaml":       chart,
		"deep-values/values.yaml":      "x: " + nested + "\n",
		"deep-values/templates/c.yaml": cm + "data: {n: {{ .Values.x | toJson | len | quote }}}\n",
		"deep-jsonnet/main.jsonnet":    strings.Repeat("[", 100000) + strings.Repeat("]", 100000),

		"cpu-until/Chart.yaml":                chart,
		"cpu-until/templates/c.yaml":          "{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ $x := sha256sum \"x\" }}{{ end }}{{ end }}",
		"template-recursion/Chart.yaml":       chart,
		"template-recursion/templates/a.tpl":  "{{ define \"a\" }}{{ include \"a\" . }}{{ end }}",
		"template-recursion/templates/c.yaml": "{{ include \"a\" . }}",
		"output-bomb/Chart.yaml":              chart,
		"output-bomb/templates/c.yaml":        cm + "data:\n  x: {{ repeat 100000000 \"xxxxxxxxxx\" }}\n",
		"output-doubling/Chart.yaml":          chart,
		"output-doubling/templates/c.yaml":    cm + "data:\n  x: {{ $s := \"xxxxxxxx\" }}{{ range until 30 }}{{ $s = print $s $s }}{{ end }}{{ $s }}\n",
		"object-bomb/Chart.yaml":              chart,
		"object-bomb/templates/c.yaml":        "{{ range $i := until 5000000 }}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c{{ $i }}}\n{{ end }}",
		"output-over-cap/Chart.yaml":          chart,
		"output-over-cap/templates/c.yaml":    cm + "data:\n  x: {{ repeat 80000000 \"x\" }}\n",
		"object-million/Chart.yaml":           chart,
		"object-million/templates/c.yaml":     "{{ range $i := until 1000000 }}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c{{ $i }}}\n{{ end }}",
		"object-list/Chart.yaml":              chart,
		"object-list/templates/c.yaml":        "apiVersion: v1\nkind: List\nitems:\n{{- range $i := until 200000 }}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c{{ $i }}}}\n{{- end }}\n",

		"object-plain/cms.yaml":          strings.Repeat("---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n", 130000),
		"object-jsonnet/main.jsonnet":    "std.makeArray(20000, function(i) {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'c' + i}})",
		"jsonnet-recursion/main.jsonnet": "local f(n) = f(n + 1) + 1; f(0)",
		"jsonnet-alloc/main.jsonnet":     "local f(s, n) = if n == 0 then s else f(s + s, n - 1); {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'c'}, data: {x: f('x', 40)}}",
		"jsonnet-array/main.jsonnet":     "std.makeArray(200000000, function(i) {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'c' + i}})",
		"jsonnet-loop/main.jsonnet":      "std.foldl(function(a, b) a + b, std.range(0, 2000000000), 0)",

		"huge-file/Chart.yaml":           chart,
		"huge-file/values.yaml":          "x: '" + strings.Repeat("x", 20<<20) + "'\n",
		"huge-file/templates/c.yaml":     cm,
		"escape-values/Chart.yaml":       chart,
		"escape-values/templates/c.yaml": cm + "data: {s: {{ .Values.secret | default \"none\" | quote }}}\n",
		"kbase/kustomization.yaml":       "resources:\n- https://github.com/evil/repo//base?ref=main\n",
		"kgen/kustomization.yaml":        "generators: [gen.yaml]\n",
		"kgen/gen.yaml":                  "apiVersion: evil.example/v1\nkind: Gen\nmetadata:\n  name: g\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n",
		"hdep/Chart.yaml":                chart + "dependencies:\n- {name: dep, version: 1.0.0, repository: https://charts.evil.example}\n",
		"hdep/templates/c.yaml":          cm,
		"escape-kust/kustomization.yaml": "resources: [../../outside/cm.yaml]\n",
	}
}

type hostileCase struct {
	name, source, buildOptions string
	// want: the refusal must contain one of these.
	want []string
}

var hostileCases = []hostileCase{
	{"alias bomb: helm values", "{repoURL: R, path: alias-helm}", "", []string{"alias"}},
	{"alias bomb: kustomize resource", "{repoURL: R, path: alias-kust}", "", []string{"alias"}},
	{"alias bomb: kustomization file", "{repoURL: R, path: alias-kustfile}", "", []string{"alias"}},
	{"alias bomb: plain manifest", "{repoURL: R, path: alias-plain}", "", []string{"alias"}},
	{"alias bomb: jsonnet parseYaml", "{repoURL: R, path: alias-jsonnet}", "", []string{"alias", "memory-limit"}},
	{"deep nesting: json manifest", "{repoURL: R, path: deep-json}", "", []string{"depth", "nest", "crashed", "memory-limit", "exceeded max"}},
	{"deep nesting: yaml manifest", "{repoURL: R, path: deep-yaml}", "", []string{"depth", "nest", "crashed", "memory-limit", "exceeded max"}},
	{"deep nesting: helm values", "{repoURL: R, path: deep-values}", "", []string{"depth", "nest", "crashed", "memory-limit", "exceeded max"}},
	{"deep nesting: jsonnet", "{repoURL: R, path: deep-jsonnet}", "", []string{"stack", "depth", "crashed", "memory-limit", "time-limit"}},
	{"cpu: nested until", "{repoURL: R, path: cpu-until}", "", []string{"time-limit", "cpu-limit"}},
	{"non-terminating: recursive include", "{repoURL: R, path: template-recursion}", "", []string{"recursion", "depth", "time-limit", "memory-limit", "crashed"}},
	{"output bomb: 1 GB string", "{repoURL: R, path: output-bomb}", "", []string{"memory-limit"}},
	{"output bomb: doubling to 8 GiB", "{repoURL: R, path: output-doubling}", "", []string{"memory-limit", "output-size", "time-limit"}},
	{"object bomb: 5M documents", "{repoURL: R, path: object-bomb}", "", []string{"memory-limit", "document-count", "time-limit", "output-size"}},
	// The 64 MiB output rule ends it in about a second alone; under the race detector on a loaded machine Helm's
	// engine can take the 3 s first (CI, load 30: "render exceeded 3 s"), and either rule bounds it. The output
	// rule itself is proven with small caps per renderer (helm, kustomize, directory TestOutputCap* tests).
	{"output bomb: 80 MB, over the 64 MiB cap", "{repoURL: R, path: output-over-cap}", "", []string{"output-size", "time-limit"}},
	// Counted as Helm's engine returns (0.4 s alone), unless the engine's own loop outlasts the 3 s cap first, as it
	// can under the race detector on a loaded machine (make test, 3.1 s): either rule ends it. The early count
	// itself is proven by internal/render/helm's TestOutputCapsSpareMemory.
	{"object bomb: a million documents", "{repoURL: R, path: object-million}", "", []string{"document-count", "time-limit"}},
	{"object bomb: 130,000 plain documents", "{repoURL: R, path: object-plain}", "", []string{"document-count"}},
	// Counted as go-jsonnet hands its output back, unless evaluating 20,000 objects outlasts the 3 s cap first, as it
	// did with make test and make e2e at once (load 20): either rule ends it. The count itself is proven per
	// renderer (internal/render/directory TestOutputCaps, "jsonnet: 11 objects").
	{"object bomb: 20,000 Jsonnet objects", "{repoURL: R, path: object-jsonnet}", "", []string{"document-count", "time-limit"}},
	{"object bomb: 200k-item List", "{repoURL: R, path: object-list}", "", []string{"memory-limit", "document-count", "time-limit", "output-size"}},
	{"jsonnet recursion", "{repoURL: R, path: jsonnet-recursion}", "", []string{"stack", "memory-limit", "time-limit"}},
	{"jsonnet allocation bomb", "{repoURL: R, path: jsonnet-alloc}", "", []string{"memory-limit", "output-size", "time-limit"}},
	{"jsonnet array bomb", "{repoURL: R, path: jsonnet-array}", "", []string{"memory-limit", "document-count", "time-limit"}},
	{"jsonnet range of 2e9", "{repoURL: R, path: jsonnet-loop}", "", []string{"time-limit", "memory-limit", "cpu-limit"}},
	{"huge file", "{repoURL: R, path: huge-file}", "", []string{"file-size", "bytes"}},
	{"symlink escape: helm value file", "{repoURL: R, path: escape-values, helm: {valueFiles: [link/values.yaml]}}", "", []string{"outside", "escape", "symlink", "refused"}},
	{"path escape: helm value file", "{repoURL: R, path: escape-values, helm: {valueFiles: [../../outside/values.yaml]}}", "", []string{"outside", "escape", "refused"}},
	{"path escape: kustomize resource", "{repoURL: R, path: escape-kust}", "", []string{"outside", "escape", "refused", "security"}},
	{"remote reference: kustomize base", "{repoURL: R, path: kbase}", "", []string{"remote-reference"}},
	{"remote reference: helm dependency", "{repoURL: R, path: hdep}", "", []string{"remote", "dependenc", "repositor"}},
	{"exec plugin: kustomize generator", "{repoURL: R, path: kgen}", "", []string{"exec-plugin"}},
	{"config management plugin", "{repoURL: R, path: benign, plugin: {name: evil}}", "", []string{"config management plugins run only inside Argo CD"}},
	{"symlinked app path", "{repoURL: R, path: linkdir}", "", []string{"outside", "escape", "symlink", "refused"}},
}

// TestHostileRepository renders each hostile app of the table beside a benign app, in a pool of two workers with
// small caps: each bomb ends in a one-line refusal that names the app and the rule within its cap and the kill's
// slack (measured from the parent's timer, see killSlack), the benign app still renders, the parent's memory
// stays bounded and no goroutine is left once the pool is closed.
func TestHostileRepository(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("workers' kernel limits are Linux's")
	}
	baseline := runtime.NumGoroutine()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	const secret = "TOP-SECRET-OUTSIDE"
	for p, c := range hostileFiles() {
		write(t, filepath.Join(root, p), c)
	}
	write(t, filepath.Join(base, "outside", "values.yaml"), "secret: "+secret+"\n")
	write(t, filepath.Join(base, "outside", "cm.yaml"), cm+"data: {s: "+secret+"}\n")
	write(t, filepath.Join(base, "outside", "dir", "cm.yaml"), cm+"data: {s: "+secret+"}\n")
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "escape-values", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside", "dir"), filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}

	pool, err := isolate.New(isolate.Options{Workers: 2, MemoryBytes: hostileMemory,
		Render: render.Options{Limits: render.Limits{Timeout: hostileTimeout}}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			pool.Close()
		}
	}()
	times := traceRenders(pool)
	ctx := context.Background()
	var table strings.Builder
	fmt.Fprintf(&table, "%-40s %8s %8s %8s  %s\n", "case", "seconds", "kill ms", "workers", "refusal")
	for _, tc := range hostileCases {
		// The workers a case killed are replaced in the background; a case's time is its render's.
		if err := pool.Prestart(ctx); err != nil {
			t.Fatal(err)
		}
		bomb := hostileApp(t, "bomb", tc.source, root)
		bomb.Settings.KustomizeBuildOptions = tc.buildOptions
		benign := hostileApp(t, "benign", "{repoURL: R, path: benign}", root)
		var wg sync.WaitGroup
		var benignErr error
		var benignN int
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := pool.Render(ctx, benign)
			benignErr = err
			if res != nil {
				benignN = len(res.Objects)
			}
		}()
		res, err := pool.Render(ctx, bomb)
		end := time.Now()
		wg.Wait()
		armed, deadline := times.of("bomb")
		took := end.Sub(armed)
		kill := "-" // the render ended before its deadline
		if !deadline.IsZero() {
			kill = strconv.FormatInt(end.Sub(deadline).Milliseconds(), 10)
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		fmt.Fprintf(&table, "%-40s %8.2f %8s %8d  %s\n", tc.name, took.Seconds(), kill, pool.Started(), shortMsg(msg))
		switch {
		case err == nil:
			var b strings.Builder
			_ = render.WriteYAML(&b, res.Objects)
			t.Errorf("%s: rendered %d objects; want a refusal", tc.name, len(res.Objects))
			if strings.Contains(b.String(), secret) {
				t.Errorf("%s: the render read outside the repository", tc.name)
			}
		case strings.Contains(msg, "\n") || !strings.Contains(msg, `app "bomb"`) || len(msg) > 1000:
			t.Errorf("%s: want one line naming the app, got %d bytes: %.300s", tc.name, len(msg), msg)
		case !namesFile(err):
			t.Errorf("%s: the refusal names no file or source of the app: %s", tc.name, msg)
		case !containsAny(msg, tc.want):
			t.Errorf("%s: refusal %q names none of %q", tc.name, msg, tc.want)
		case !strings.Contains(msg, "refused (") && !errors.Is(err, render.ErrPluginSource):
			// Every refusal names its rule, the libraries' own (render.Error) as fleetwave's; a plugin source is
			// not refused, it is Argo CD's to render.
			t.Errorf("%s: the refusal names no rule: %s", tc.name, msg)
		case strings.Contains(msg, secret):
			t.Errorf("%s: the refusal shows the outside file: %s", tc.name, msg)
		}
		if armed.IsZero() || !withinKillBound(hostileTimeout, armed, end) {
			t.Errorf("%s: ended %s after its render was armed, past the %s cap and the kill's %s", tc.name, took.Round(time.Millisecond), hostileTimeout, killSlack)
		}
		if benignErr != nil || benignN != 1 {
			t.Errorf("%s: the benign app beside it: %d objects, %v", tc.name, benignN, benignErr)
		}
	}
	rss, hwm := procStatus(t, "VmRSS"), procStatus(t, "VmHWM")
	fmt.Fprintf(&table, "parent: VmRSS %d MiB, VmHWM %d MiB; %d workers started for %d cases", rss>>20, hwm>>20, pool.Started(), len(hostileCases))
	t.Logf("\n%s", table.String())
	if hwm > parentRSSCap {
		t.Errorf("the parent's peak RSS is %d MiB, over %d MiB", hwm>>20, parentRSSCap>>20)
	}
	pool.Close()
	closed = true
	waitGoroutines(t, baseline)
}

// TestHostileBoundCatchesMissingKill: the suite's time bound is no bound a render meets anyway. With the
// parent's kill at the deadline switched off, a non-terminating template runs on to its worker's CPU cap
// (RLIMIT_CPU, here 2 s of CPU time against a 0.5 s cap: at least 2 s of wall time, past the 1.5 s bound), and
// the bound says so.
func TestHostileBoundCatchesMissingKill(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("workers' kernel limits are Linux's")
	}
	if testing.Short() {
		t.Skip("runs a worker to its CPU cap")
	}
	root := filetest.Tree(t, map[string]string{"cpu-until/Chart.yaml": chart, "cpu-until/templates/c.yaml": hostileFiles()["cpu-until/templates/c.yaml"]})
	const timeout = 500 * time.Millisecond
	pool, err := isolate.New(isolate.Options{Workers: 1, MemoryBytes: hostileMemory, CPU: 2 * time.Second,
		Render: render.Options{Limits: render.Limits{Timeout: timeout}}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	isolate.KeepWorkersAtDeadline(pool)
	times := traceRenders(pool)
	_, err = pool.Render(context.Background(), hostileApp(t, "bomb", "{repoURL: R, path: cpu-until}", root))
	end := time.Now()
	armed, deadline := times.of("bomb")
	t.Logf("without the kill: ended %s after it was armed, %s after its deadline: %v", end.Sub(armed).Round(time.Millisecond), end.Sub(deadline).Round(time.Millisecond), err)
	if deadline.IsZero() {
		t.Fatal("the render's deadline never fired")
	}
	if withinKillBound(timeout, armed, end) {
		t.Errorf("a render whose worker was not killed at its deadline ended within the bound (%s after it was armed)", end.Sub(armed))
	}
	if err == nil || !strings.Contains(err.Error(), "cpu-limit") {
		t.Errorf("err = %v; want the worker's CPU cap", err)
	}
}

// TestWorkerKilledMidRender: a worker that dies during a render (the OOM killer, an operator) fails that render
// with one line, and the next render gets a fresh worker.
func TestWorkerKilledMidRender(t *testing.T) {
	baseline := runtime.NumGoroutine()
	root := filetest.Tree(t, map[string]string{
		"slow/Chart.yaml":       chart,
		"slow/templates/c.yaml": "{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ end }}{{ end }}",
		"ok/cm.yaml":            cm,
	})
	pool, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{Limits: render.Limits{Timeout: 20 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Render(context.Background(), hostileApp(t, "ok", "{repoURL: R, path: ok}", root)); err != nil {
		t.Fatal(err)
	}
	if err := killedDuring(t, pool, hostileApp(t, "slow", "{repoURL: R, path: slow}", root)); err == nil || !strings.Contains(err.Error(), `app "slow"`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v; want one line naming the app", err)
	}
	if _, err := pool.Render(context.Background(), hostileApp(t, "ok", "{repoURL: R, path: ok}", root)); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	if n := pool.Started(); n != 2 {
		t.Errorf("%d workers started; want the killed one replaced (2)", n)
	}
	pool.Close()
	if kids := children(t); len(kids) != 0 {
		t.Errorf("workers left after Close: %v", kids)
	}
	waitGoroutines(t, baseline)
}

func hostileApp(t *testing.T, name, source, root string) render.Request {
	t.Helper()
	req := appReq(t, name, strings.ReplaceAll(source, "repoURL: R", "repoURL: https://example.com/r.git"), root)
	return req
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func shortMsg(s string) string {
	if len(s) > 110 {
		return s[:110] + "…"
	}
	return s
}

// procStatus reads a size field (kB) of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// children lists the pids of this process's live children.
func children(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(me) {
			out = append(out, pid)
		}
	}
	return out
}

// waitGoroutines fails t unless the goroutine count comes back to baseline within 2 s.
func waitGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left running, baseline %d:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLibraryOutputIsNoCrashCause: Kustomize prints a deprecation warning per build on stderr. A worker that
// rendered such overlays and is then killed must say it was killed, not quote the warning as the crash's cause
// (the parent keeps only the head of a worker's stderr, which the warnings would fill).
func TestLibraryOutputIsNoCrashCause(t *testing.T) {
	root := filetest.Tree(t, map[string]string{
		"old/kustomization.yaml":  "bases: [../base]\ncommonLabels: {a: b}\n",
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            cm,
		"slow/Chart.yaml":         chart,
		"slow/templates/c.yaml":   "{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ end }}{{ end }}",
	})
	pool, err := isolate.New(isolate.Options{Workers: 1, Render: render.Options{Limits: render.Limits{Timeout: 20 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for range 3 {
		if _, err := pool.Render(context.Background(), hostileApp(t, "old", "{repoURL: R, path: old}", root)); err != nil {
			t.Fatal(err)
		}
	}
	if err := killedDuring(t, pool, hostileApp(t, "slow", "{repoURL: R, path: slow}", root)); err == nil || strings.Contains(err.Error(), "Warning") || strings.Contains(err.Error(), "deprecated") {
		t.Fatalf("err = %v; want the kill, not a library's warning", err)
	}
}

// killedDuring starts req on a pool of one worker, SIGKILLs that worker while it renders, and returns the
// render's error (failing t if the render does not end within 5 s of the kill).
func killedDuring(t *testing.T, pool *isolate.Pool, req render.Request) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := pool.Render(context.Background(), req)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	kids := children(t)
	if len(kids) != 1 {
		t.Fatalf("worker processes: %v, want one", kids)
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("killed worker: %v", err)
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the render did not end when its worker was killed")
		return nil
	}
}

// namesFile reports whether a render error names what of the app it is about: its source (render.Error.Path),
// or a file in its message.
func namesFile(err error) bool {
	var re *render.Error
	return errors.As(err, &re) && re.Path != ""
}
