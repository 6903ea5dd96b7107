// Command benchrender measures fleetwave's in-process render against the helm and kustomize CLIs on the same
// inputs, in the same run: for every case of the fidelity corpus whose Argo CD command line can be replayed as is,
// it times the CLI (the exact `helm template` / `kustomize build` command Argo CD ran, from
// expected-helm3-commands.json) and the warm in-process render, and prints per-case medians and the median ratio.
// With -fleetwave, it then compares one large chart (-large, default kube-prometheus-stack: 147 objects, 5 MB of
// YAML, mostly CRDs) as fresh processes, as a user runs them: `fleetwave render` against `helm template` on the
// same chart and values, wall and CPU time (the process and its render worker), median of -runs alternating
// runs, with `fleetwave version` for the binary's start-up. -before adds another fleetwave binary (a build before a
// change) to the same alternation, so before and after are measured under the same load; -large-only skips the
// corpus comparison; -max-large-ratio fails the run when fleetwave render's median wall time is over that many
// times helm template's (make bench's regression gate).
//
//	go run ./hack/benchrender -helm <helm binary> -kustomize <kustomize binary> [-runs 5] [-fleetwave bin/fleetwave [-before old-binary] [-large-only]]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fleetwave/fleetwave/internal/render"
)

func main() {
	corpus := flag.String("corpus", os.Getenv("FLEETWAVE_FIDELITY_DIR"), "fidelity corpus directory")
	helmBin := flag.String("helm", os.Getenv("FLEETWAVE_HELM_BIN"), "helm v3 binary")
	kustBin := flag.String("kustomize", os.Getenv("FLEETWAVE_KUSTOMIZE_BIN"), "kustomize binary")
	runs := flag.Int("runs", 5, "timed runs per case and tool")
	fleetwave := flag.String("fleetwave", "", "fleetwave binary: also compare one large chart as fresh processes")
	large := flag.String("large", "helm-kube-prometheus-stack", "the corpus case -fleetwave compares")
	before := flag.String("before", "", "with -fleetwave: another fleetwave binary (before a change) in the same alternation")
	largeOnly := flag.Bool("large-only", false, "with -fleetwave: only the large chart, not the corpus comparison")
	largeRuns := flag.Int("large-runs", 0, "with -fleetwave: alternating runs of the large chart (0: -runs)")
	maxLarge := flag.Float64("max-large-ratio", 0, "with -fleetwave: fail when fleetwave render's wall time is over this many times helm template's (0: no gate)")
	flag.Parse()
	// Kustomize's deprecation warnings about the corpus's kustomizations (the standard logger, and
	// fmt.Fprintf(os.Stderr) in kusttarget.go Load): the in-process renders here would print them raw, once per
	// build. fleetwave's own commands log them (internal/render/isolate); here they are noise.
	log.SetOutput(io.Discard)
	stderr := os.Stderr
	if devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		os.Stderr = devNull
	}

	if *corpus == "" || *helmBin == "" || (*kustBin == "" && !*largeOnly) {
		fmt.Fprintln(stderr, "benchrender: -corpus, -helm and -kustomize are required")
		os.Exit(2)
	}
	scratch, err := os.MkdirTemp("", "benchrender-")
	if err != nil {
		fmt.Fprintln(stderr, "benchrender:", err)
		os.Exit(1)
	}
	if !*largeOnly || *fleetwave == "" {
		err = run(*corpus, *helmBin, *kustBin, *runs, scratch)
	}
	if err == nil && *fleetwave != "" {
		n := *largeRuns
		if n <= 0 {
			n = *runs
		}
		var ratio float64
		ratio, err = processes(filepath.Join(*corpus, "cases", *large), *fleetwave, *before, *helmBin, n, scratch)
		if err == nil && *maxLarge > 0 && ratio > *maxLarge {
			err = fmt.Errorf("fleetwave render takes %.2f× the wall time of helm template on %s, over the gate of %.2f×", ratio, *large, *maxLarge)
		}
	}
	os.RemoveAll(scratch)
	if err != nil {
		fmt.Fprintln(stderr, "benchrender:", err)
		os.Exit(1)
	}
}

func run(corpus, helmBin, kustBin string, runs int, scratch string) error {
	cases, err := filepath.Glob(filepath.Join(corpus, "cases", "*", "expected-helm3-commands.json"))
	if err != nil {
		return err
	}
	sort.Strings(cases)
	r := render.New(render.Options{})
	var ratios []float64
	var sumCLI, sumIn time.Duration
	fmt.Printf("| case | CLI median | in-process median (warm) | ratio |\n|---|---:|---:|---:|\n")
	for _, cmdFile := range cases {
		dir := filepath.Dir(cmdFile)
		argv, ok := replayable(cmdFile, dir, helmBin, kustBin, scratch)
		if !ok {
			continue
		}
		req, err := request(dir)
		if err != nil {
			return err
		}
		// Warm both: the first CLI run loads the binary into the page cache, the first render fills the chart cache.
		if err := cli(argv); err != nil {
			continue // a case the CLI cannot replay outside Argo CD (e.g. expected to fail)
		}
		if _, err := r.Render(context.Background(), req); err != nil {
			continue
		}
		cliT := median(runs, func() error { return cli(argv) })
		inT := median(runs, func() error { _, err := r.Render(context.Background(), req); return err })
		ratio := float64(cliT) / float64(inT)
		ratios = append(ratios, ratio)
		sumCLI += cliT
		sumIn += inT
		fmt.Printf("| %s | %s | %s | %.1f× |\n", filepath.Base(dir), cliT.Round(time.Microsecond), inT.Round(time.Microsecond), ratio)
	}
	if len(ratios) == 0 {
		return fmt.Errorf("no replayable case")
	}
	sort.Float64s(ratios)
	fmt.Printf("\n%d cases; median ratio %.1f× (in-process faster), total %s CLI vs %s in-process\n",
		len(ratios), ratios[len(ratios)/2], sumCLI.Round(time.Millisecond), sumIn.Round(time.Millisecond))
	return nil
}

// command is one CLI invocation: its working directory and argv.
type command struct {
	dir  string
	argv []string
}

// valuesPlaceholder is how the corpus records the temp file Argo CD writes source.helm.values/valuesObject to
// (reposerver/repository/repository.go helmTemplate: os.WriteFile of ApplicationSourceHelm.ValuesYAML()).
const valuesPlaceholder = "<temp file with values from source.helm.values/valuesObject>"

// replayable turns a case's single Argo CD command into a command for the given binaries; the values Argo CD
// writes to a temp file are written to one in scratch. Cases whose commands edit a kustomization are skipped:
// they cannot be replayed without Argo CD's scratch copy. Argo CD runs `helm template .` from the chart
// directory and `kustomize build <path>` from the repo root.
func replayable(cmdFile, dir, helmBin, kustBin, scratch string) (command, bool) {
	b, err := os.ReadFile(cmdFile)
	if err != nil {
		return command{}, false
	}
	var cmds []string
	if json.Unmarshal(b, &cmds) != nil || len(cmds) != 1 || strings.Contains(cmds[0], "<tmp>") {
		return command{}, false
	}
	line := strings.ReplaceAll(cmds[0], "<repo-root>", dir)
	if strings.Contains(line, valuesPlaceholder) {
		req, err := request(dir)
		if err != nil || req.App.Spec.GetSource().Helm == nil {
			return command{}, false
		}
		p := filepath.Join(scratch, filepath.Base(dir)+"-values.yaml")
		if os.WriteFile(p, req.App.Spec.GetSource().Helm.ValuesYAML(), 0o600) != nil {
			return command{}, false
		}
		line = strings.ReplaceAll(line, valuesPlaceholder, p)
	}
	f := strings.Fields(line)
	switch f[0] {
	case "helm":
		req, err := request(dir)
		if err != nil {
			return command{}, false
		}
		f[0] = helmBin
		return command{dir: filepath.Join(dir, req.App.Spec.GetSource().Path), argv: f}, true
	case "kustomize":
		f[0] = kustBin
		return command{dir: dir, argv: f}, true
	}
	return command{}, false
}

func cli(c command) error {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = c.dir
	return cmd.Run()
}

func request(dir string) (render.Request, error) {
	b, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
	if err != nil {
		return render.Request{}, err
	}
	app, err := render.ParseApplication(b)
	if err != nil {
		return render.Request{}, err
	}
	s, err := render.LoadSettings(filepath.Join(dir, "render-env.yaml"))
	if err != nil {
		return render.Request{}, err
	}
	// The CLI side replays Argo CD 3.4's helm 3 commands (expected-helm3-commands.json): render as 3.4 too, the
	// same helm on both sides.
	s.ArgoCDVersion = "3.4"
	return render.Request{App: app, Settings: s, Repos: func(string) (string, bool) { return dir, true }}, nil
}

func median(n int, f func() error) time.Duration {
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := f(); err != nil {
			return time.Hour
		}
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// processes compares one case as fresh processes: `fleetwave render` (its render worker included, as a user runs
// it) against the `helm template` Argo CD ran, and `fleetwave version` for the binary's start-up; runs
// alternating runs of each, medians of wall and CPU time (user+system of the process and the children it
// waited for). With before, that binary's render runs in the same alternation.
func processes(dir, fleetwave, before, helmBin string, runs int, scratch string) (float64, error) {
	helmCmd, ok := replayable(filepath.Join(dir, "expected-helm3-commands.json"), dir, helmBin, helmBin, scratch)
	if !ok {
		return 0, fmt.Errorf("%s: no replayable helm command", filepath.Base(dir))
	}
	fwRender := command{dir: dir, argv: []string{fleetwave, "render", "--app", "app.yaml", "--repo-root", ".",
		"--settings", "render-env.yaml", "--argocd-version", "3.4"}}
	fwVersion := command{dir: dir, argv: []string{fleetwave, "version"}}
	cmds := []command{helmCmd, fwRender, fwVersion}
	if before != "" {
		old := fwRender
		old.argv = append([]string{before}, fwRender.argv[1:]...)
		cmds = append(cmds, old, command{dir: dir, argv: []string{before, "version"}})
	}
	walls, cpus := make([][]time.Duration, len(cmds)), make([][]time.Duration, len(cmds))
	var size int
	for i := -1; i < runs; i++ { // one warm-up round: the binaries into the page cache
		for j, c := range cmds {
			wall, cpu, n, err := timed(c)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", strings.Join(c.argv[:2], " "), err)
			}
			if i >= 0 {
				walls[j], cpus[j] = append(walls[j], wall), append(cpus[j], cpu)
			}
			if j == 0 {
				size = n
			}
		}
	}
	med := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	w, c := make([]time.Duration, len(cmds)), make([]time.Duration, len(cmds))
	for j := range cmds {
		w[j], c[j] = med(walls[j]), med(cpus[j])
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	fmt.Printf("\n== one large chart as fresh processes: %s (%.1f MB of manifests), median of %d alternating runs\n",
		filepath.Base(dir), float64(size)/1e6, runs)
	fmt.Printf("| command | wall | CPU (user+sys) |\n|---|---:|---:|\n")
	fmt.Printf("| helm template (helm CLI, Argo CD 3.4's command) | %s | %s |\n", ms(w[0]), ms(c[0]))
	fmt.Printf("| fleetwave render (with its render worker) | %s | %s |\n", ms(w[1]), ms(c[1]))
	fmt.Printf("| of which start-up: fleetwave version | %s | %s |\n", ms(w[2]), ms(c[2]))
	if before != "" {
		fmt.Printf("| -before: fleetwave render | %s | %s |\n", ms(w[3]), ms(c[3]))
		fmt.Printf("| -before: fleetwave version | %s | %s |\n", ms(w[4]), ms(c[4]))
	}
	fmt.Printf("\nfleetwave render / helm template: %.2f× wall, %.2f× CPU; render starts two processes (itself and its worker): start-up ≈ %.0f%% of its CPU\n",
		float64(w[1])/float64(w[0]), float64(c[1])/float64(c[0]), 100*2*float64(c[2])/float64(c[1]))
	if before != "" {
		fmt.Printf("-before: %.2f× wall, %.2f× CPU of helm template; after / before: %.2f× wall, %.2f× CPU\n",
			float64(w[3])/float64(w[0]), float64(c[3])/float64(c[0]), float64(w[1])/float64(w[3]), float64(c[1])/float64(c[3]))
	}
	return float64(w[1]) / float64(w[0]), nil
}

// timed runs c and returns its wall time, its CPU time and the size of its standard output.
func timed(c command) (wall, cpu time.Duration, size int, err error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = c.dir
	var out countWriter
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), int(out), nil
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
