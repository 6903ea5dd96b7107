// Command benchrender measures fleetwave's in-process render against the helm and kustomize CLIs on the same
// inputs, in the same run: for every case of the fidelity corpus whose Argo CD command line can be replayed as is,
// it times the CLI (the exact `helm template` / `kustomize build` command Argo CD ran, from
// expected-helm3-commands.json) and the warm in-process render, and prints per-case medians and the median ratio.
//
//	go run ./hack/benchrender -helm <helm binary> -kustomize <kustomize binary> [-runs 5]
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
	flag.Parse()
	log.SetOutput(io.Discard) // kustomize's deprecation warnings about the corpus's kustomizations

	if *corpus == "" || *helmBin == "" || *kustBin == "" {
		fmt.Fprintln(os.Stderr, "benchrender: -corpus, -helm and -kustomize are required")
		os.Exit(2)
	}
	if err := run(*corpus, *helmBin, *kustBin, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "benchrender:", err)
		os.Exit(1)
	}
}

func run(corpus, helmBin, kustBin string, runs int) error {
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
		argv, ok := replayable(cmdFile, dir, helmBin, kustBin)
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

// replayable turns a case's single Argo CD command into a command for the given binaries. Cases whose commands
// edit a kustomization or pass a temp values file are skipped: they cannot be replayed without Argo CD's scratch
// copy. Argo CD runs `helm template .` from the chart directory and `kustomize build <path>` from the repo root.
func replayable(cmdFile, dir, helmBin, kustBin string) (command, bool) {
	b, err := os.ReadFile(cmdFile)
	if err != nil {
		return command{}, false
	}
	var cmds []string
	if json.Unmarshal(b, &cmds) != nil || len(cmds) != 1 || strings.Contains(cmds[0], "<tmp>") {
		return command{}, false
	}
	f := strings.Fields(strings.ReplaceAll(cmds[0], "<repo-root>", dir))
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
