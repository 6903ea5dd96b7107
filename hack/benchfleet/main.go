// Command benchfleet measures what a pull request costs on generated GitOps repositories (internal/testkit/fleetgen:
// per cluster five Helm apps over three shared charts, five Kustomize overlays), against the floor every
// repo-server based tool pays: one `helm template` / `kustomize build` process per affected app and revision,
// given the affected set for free, run as many at once as there are cores.
//
// For each scenario (apps/changed) it runs, alternately, `fleetwave diff --output json` as a fresh process and
// the CLI floor, several times, and prints min/median/max of wall time, CPU time (user+sys, children included)
// and the bot's peak RSS, the ratios of medians, and how 5,000/50 compares with 500/50. With -min-ratio it
// exits 1 when the first scenario's wall-time ratio falls under it (the regression gate of `make bench`), with
// -max-rss when a fleetwave run's peak RSS passes it (issue #21's 300 MiB for 5,000/500 and render all). Then
// it times `fleetwave render --all` (every app of a fleet, -render-all sizes, default 5,000 apps) the same way.
// -dir keeps the fleets for profiling by hand.
//
//	go run ./hack/benchfleet -fleetwave bin/fleetwave -helm <helm> -kustomize <kustomize> [-runs 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetwave/fleetwave/internal/testkit/fleetgen"
)

const repoURL = "https://github.com/example/fleet.git"

type scenario struct{ clusters, changed int }

func (s scenario) String() string {
	return fmt.Sprintf("%d apps / %d changed", s.clusters*fleetgen.AppsPerCluster, s.changed)
}

// sample is one timed run.
type sample struct {
	wall, cpu time.Duration
	rssKiB    int64
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchfleet:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("fleetwave", "bin/fleetwave", "fleetwave binary")
	helmBin := flag.String("helm", os.Getenv("FLEETWAVE_HELM_BIN"), "helm v3 binary (the floor)")
	kustBin := flag.String("kustomize", os.Getenv("FLEETWAVE_KUSTOMIZE_BIN"), "kustomize binary (the floor)")
	runs := flag.Int("runs", 3, "alternating timed runs per scenario")
	list := flag.String("scenarios", "500/50,5000/50,5000/500", "apps/changed pairs (apps a multiple of 10)")
	floorFor := flag.String("floor", "500/50", "scenarios the CLI floor is measured for (it depends only on the changed apps)")
	minRatio := flag.Float64("min-ratio", 0, "fail when the first scenario's wall-time ratio to the floor is under this")
	maxRSS := flag.Int64("max-rss", 0, "fail when a fleetwave run (diff or render --all) peaks over this many MiB of RSS (0: no gate)")
	renderAll := flag.String("render-all", "5000", "apps counts (multiples of 10) of the fleets `fleetwave render --all` renders, with wall, CPU and peak RSS (\"\": none)")
	keep := flag.String("dir", "", "build the fleets in this directory and keep them (a fleet already there is reused): for profiling by hand")
	flag.Parse()
	if *helmBin == "" || *kustBin == "" {
		return fmt.Errorf("-helm and -kustomize are required")
	}
	scenarios, err := parse(*list)
	if err != nil {
		return err
	}
	floors := map[string]bool{}
	for _, f := range strings.Split(*floorFor, ",") {
		floors[strings.TrimSpace(f)] = true
	}
	tmp := *keep
	if tmp == "" {
		if tmp, err = os.MkdirTemp("", "benchfleet-"); err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
	}

	fmt.Printf("machine: %d cores, load average %s\n\n", runtime.NumCPU(), loadAvg())
	fmt.Println("| repo / PR | fleetwave wall | fleetwave CPU | peak RSS | CLI floor wall | CLI floor CPU | ratio wall | ratio CPU |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	var medians []time.Duration
	var worst sample // the fleetwave run of the highest peak RSS
	var worstWhat string
	var firstRatio float64
	for i, s := range scenarios {
		dir := filepath.Join(tmp, fmt.Sprintf("fleet-%d-%d", s.clusters, s.changed))
		if err := build(dir, s); err != nil {
			return err
		}
		key := fmt.Sprintf("%d/%d", s.clusters*fleetgen.AppsPerCluster, s.changed)
		var floor []command
		if floors[key] {
			if floor, err = floorCommands(dir, s, *helmBin, *kustBin); err != nil {
				return err
			}
		}
		var fw, fl []sample
		for r := 0; r < *runs; r++ {
			x, err := timed([]command{{argv: []string{*bin, "diff", "--repo", dir, "--base", "main", "--head", "change", "--output", "json"}}}, 1)
			if err != nil {
				return fmt.Errorf("fleetwave: %w", err)
			}
			fw = append(fw, x)
			if x.rssKiB > worst.rssKiB {
				worst, worstWhat = x, s.String()
			}
			if floor != nil {
				y, err := timed(floor, runtime.NumCPU())
				if err != nil {
					return fmt.Errorf("CLI floor: %w", err)
				}
				fl = append(fl, y)
			}
		}
		mw, mc, mr := stats(fw)
		row := fmt.Sprintf("| %s | %s | %s | %s MiB |", s, mw, mc, mr)
		medians = append(medians, median(fw, func(x sample) time.Duration { return x.wall }))
		if fl != nil {
			fw2, fc2, _ := stats(fl)
			rw := ratio(fl, fw, func(x sample) time.Duration { return x.wall })
			rc := ratio(fl, fw, func(x sample) time.Duration { return x.cpu })
			row += fmt.Sprintf(" %s (%d processes) | %s | %.1f× | %.1f× |", fw2, len(floor), fc2, rw, rc)
			if i == 0 {
				firstRatio = rw
			}
		} else {
			row += " — | — | — | — |"
		}
		fmt.Println(row)
	}
	fmt.Println()
	for i := 1; i < len(scenarios); i++ {
		if scenarios[i].changed == scenarios[0].changed {
			fmt.Printf("%s vs %s: %.2f× the median wall time\n", scenarios[i], scenarios[0], medians[i].Seconds()/medians[0].Seconds())
		}
	}
	fmt.Printf("min / median / max of %d alternating runs; ratios are the CLI floor's median over fleetwave's; load average after: %s\n", *runs, loadAvg())
	ra, raWhat, err := renderAllRows(*bin, *renderAll, tmp, scenarios, *runs)
	if err != nil {
		return err
	}
	if ra.rssKiB > worst.rssKiB {
		worst, worstWhat = ra, raWhat
	}
	if *maxRSS > 0 && worst.rssKiB>>10 > *maxRSS {
		return fmt.Errorf("%s peaked at %d MiB of RSS, over the %d MiB gate", worstWhat, worst.rssKiB>>10, *maxRSS)
	}
	if *minRatio > 0 && firstRatio > 0 && firstRatio < *minRatio {
		return fmt.Errorf("%s is %.1f× the CLI floor, under the %.0f× gate", scenarios[0], firstRatio, *minRatio)
	}
	return nil
}

// renderAllRows times `fleetwave render --all` (every app of the fleet at main, streamed as JSON lines to
// /dev/null) on the fleets of the given sizes, reusing a scenario's fleet of that size. There is no CLI floor: it
// would be one helm template or kustomize build per app, thousands of processes. It returns the run of the
// highest peak RSS, and which.
func renderAllRows(bin, sizes, tmp string, scenarios []scenario, runs int) (worst sample, what string, err error) {
	if strings.TrimSpace(sizes) == "" {
		return worst, "", nil
	}
	fmt.Println()
	fmt.Println("| render all (`fleetwave render --all`) | wall | CPU | peak RSS |")
	fmt.Println("|---|---|---|---|")
	for _, v := range strings.Split(sizes, ",") {
		apps, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || apps <= 0 || apps%fleetgen.AppsPerCluster != 0 {
			return worst, "", fmt.Errorf("-render-all %q: want apps counts, multiples of %d", v, fleetgen.AppsPerCluster)
		}
		s := scenario{clusters: apps / fleetgen.AppsPerCluster, changed: fleetgen.AppsPerCluster}
		for _, x := range scenarios {
			if x.clusters == s.clusters {
				s = x
				break
			}
		}
		dir := filepath.Join(tmp, fmt.Sprintf("fleet-%d-%d", s.clusters, s.changed))
		if err := build(dir, s); err != nil {
			return worst, "", err
		}
		var xs []sample
		for r := 0; r < runs; r++ {
			x, err := timed([]command{{argv: []string{bin, "render", "--all", "--repo", dir, "--revision", "main", "--progress-every", "0"}}}, 1)
			if err != nil {
				return worst, "", fmt.Errorf("render --all: %w", err)
			}
			xs = append(xs, x)
			if x.rssKiB > worst.rssKiB {
				worst, what = x, fmt.Sprintf("render --all of %d apps", apps)
			}
		}
		w, c, m := stats(xs)
		fmt.Printf("| %d apps | %s | %s | %s MiB |\n", apps, w, c, m)
	}
	return worst, what, nil
}

func parse(list string) ([]scenario, error) {
	var out []scenario
	for _, p := range strings.Split(list, ",") {
		a, c, ok := strings.Cut(strings.TrimSpace(p), "/")
		apps, err1 := strconv.Atoi(a)
		changed, err2 := strconv.Atoi(c)
		if !ok || err1 != nil || err2 != nil || apps%fleetgen.AppsPerCluster != 0 || changed%fleetgen.AppsPerCluster != 0 || changed > apps {
			return nil, fmt.Errorf("scenario %q: want apps/changed, both multiples of %d", p, fleetgen.AppsPerCluster)
		}
		out = append(out, scenario{clusters: apps / fleetgen.AppsPerCluster, changed: changed})
	}
	return out, nil
}

// build commits the fleet on main and the change on branch change, packed as in a clone, and checks both
// revisions out under dir/.floor/{main,change} for the CLI floor.
func build(dir string, s scenario) error {
	if _, err := os.Stat(filepath.Join(dir, ".floor", "change")); err == nil {
		return nil // kept from an earlier run (-dir)
	}
	if err := fleetgen.Write(dir, repoURL, s.clusters); err != nil {
		return err
	}
	steps := [][]string{{"init", "-q", "-b", "main"}, {"remote", "add", "origin", repoURL}, {"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "fleet"}, {"checkout", "-q", "-b", "change"}}
	for _, a := range steps {
		if err := git(dir, a...); err != nil {
			return err
		}
	}
	if err := fleetgen.Change(dir, repoURL, s.clusters, s.changed, 1); err != nil {
		return err
	}
	for _, a := range [][]string{{"add", "-A"}, {"-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "change"}, {"repack", "-a", "-d", "-q"}} {
		if err := git(dir, a...); err != nil {
			return err
		}
	}
	for _, rev := range []string{"main", "change"} {
		if err := git(dir, "worktree", "add", "-q", "--detach", filepath.Join(dir, ".floor", rev), rev); err != nil {
			return err
		}
	}
	return nil
}

func git(dir string, args ...string) error {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %v: %s", args[0], err, out)
	}
	return nil
}

// command is one process of a run.
type command struct {
	dir  string
	argv []string
}

// floorCommands are the renders a repo-server based tool runs for the change: each affected app at both
// revisions, with the same inputs as the Application gives Argo CD.
func floorCommands(dir string, s scenario, helmBin, kustBin string) ([]command, error) {
	var out []command
	for _, rev := range []string{"main", "change"} {
		root := filepath.Join(dir, ".floor", rev)
		for _, i := range fleetgen.ChangedClusters(s.clusters, s.changed) {
			c, env := fleetgen.Cluster(i), fleetgen.Env(i)
			for _, a := range fleetgen.HelmApps {
				out = append(out, command{dir: root, argv: []string{helmBin, "template", a.Name, "charts/" + a.Chart,
					"--namespace", a.Name, "--kube-version", "1.30.0",
					"-f", "values/common/" + a.Name + ".yaml", "-f", "values/" + env + "/" + a.Name + ".yaml", "-f", "clusters/" + c + "/values/" + a.Name + ".yaml"}})
			}
			for _, k := range fleetgen.KustomizeApps {
				out = append(out, command{dir: root, argv: []string{kustBin, "build", "clusters/" + c + "/kustomize/" + k}})
			}
		}
	}
	return out, nil
}

// timed runs cmds, width at a time, and returns the wall time, the CPU time of the processes (and the children
// they waited for) and the peak RSS of the largest.
func timed(cmds []command, width int) (sample, error) {
	before := childUsage()
	start := time.Now()
	var mu sync.Mutex
	var first error
	var rss int64
	sem := make(chan struct{}, width)
	var wg sync.WaitGroup
	for _, c := range cmds {
		sem <- struct{}{}
		wg.Add(1)
		go func(c command) {
			defer func() { <-sem; wg.Done() }()
			cmd := exec.CommandContext(context.Background(), c.argv[0], c.argv[1:]...)
			cmd.Dir = c.dir
			cmd.Stdout = nil // discarded
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = fmt.Errorf("%s: %v: %s", strings.Join(c.argv, " "), err, strings.TrimSpace(stderr.String()))
			}
			if cmd.ProcessState != nil {
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
					rss = max(rss, ru.Maxrss)
				}
			}
		}(c)
	}
	wg.Wait()
	wall := time.Since(start)
	after := childUsage()
	return sample{wall: wall, cpu: after - before, rssKiB: rss}, first
}

func childUsage() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []sample, f func(sample) time.Duration) time.Duration {
	v := make([]time.Duration, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

func spread(xs []sample, f func(sample) time.Duration) string {
	v := make([]time.Duration, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return fmt.Sprintf("%.2f / **%.2f** / %.2f s", v[0].Seconds(), v[len(v)/2].Seconds(), v[len(v)-1].Seconds())
}

func stats(xs []sample) (wall, cpu, rss string) {
	var r []int
	for _, x := range xs {
		r = append(r, int(x.rssKiB>>10))
	}
	sort.Ints(r)
	return spread(xs, func(x sample) time.Duration { return x.wall }), spread(xs, func(x sample) time.Duration { return x.cpu }),
		fmt.Sprintf("%d–%d", r[0], r[len(r)-1])
}

func ratio(floor, fw []sample, f func(sample) time.Duration) float64 {
	return median(floor, f).Seconds() / median(fw, f).Seconds()
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
