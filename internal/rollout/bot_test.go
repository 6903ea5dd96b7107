package rollout_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/store"
	"github.com/fleetwave/fleetwave/internal/rollout"
)

// The crash test and the benchmark run the bot as a separate process — this test binary re-executed with
// FLEETWAVE_TEST_BOT=1 — so it can be killed with SIGKILL (and its memory measured) while the simulated Argo
// CD, with its per-app counters, lives on in the test process.

const botEnv = "FLEETWAVE_TEST_BOT"

func TestMain(m *testing.M) {
	if os.Getenv(botEnv) == "1" {
		os.Exit(botMain())
	}
	os.Exit(m.Run())
}

// botConfig is what the parent passes to the bot process (as JSON in FLEETWAVE_TEST_BOT_CONFIG).
type botConfig struct {
	Store       string        `json:"store"`
	ArgoCD      string        `json:"argocd"`
	Owner       string        `json:"owner"`
	Concurrency int           `json:"concurrency"`
	Control     time.Duration `json:"control"`
	Claim       time.Duration `json:"claim"`
	Poll        time.Duration `json:"poll"`
	Grace       time.Duration `json:"grace"`
	LeaseTTL    time.Duration `json:"leaseTTL"`
	Stall       time.Duration `json:"stall"`
	// Instances are the Argo CD instances beside ArgoCD's (instance ""), by name: base URLs; Budgets their
	// budgets (rollout.WithInstanceBudgets). Either turns the executor into a fleet-of-instances one.
	Instances map[string]string `json:"instances,omitempty"`
	Budgets   map[string]int    `json:"budgets,omitempty"`

	// MinimalWaves, when set, makes the process the benchmark's minimal client instead (minimalRollout): it
	// drives these waves of apps to MinimalRevision, out of the simulator's process as fleetwave is.
	MinimalWaves    [][]string `json:"minimalWaves,omitempty"`
	MinimalRevision string     `json:"minimalRevision,omitempty"`
}

// botReport is what the bot prints on its last line when every rollout is finished.
type botReport struct {
	Wall      time.Duration `json:"wall"`      // from Run to the last rollout finished
	MaxRSS    int64         `json:"maxRSS"`    // VmHWM, bytes
	StartRSS  int64         `json:"startRSS"`  // VmRSS when the executor started, bytes
	HeapInuse uint64        `json:"heapInuse"` // Go heap in use at the end (runtime.MemStats.HeapInuse), bytes
	CPUTime   time.Duration `json:"cpuTime"`   // user + system
}

func botMain() int {
	var cfg botConfig
	if err := json.Unmarshal([]byte(os.Getenv("FLEETWAVE_TEST_BOT_CONFIG")), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bot: reading the config:", err)
		return 2
	}
	if path := os.Getenv("FLEETWAVE_TEST_BOT_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	ctx := context.Background()
	if len(cfg.MinimalWaves) > 0 {
		wall, err := minimalRollout(ctx, cfg.ArgoCD, cfg.MinimalWaves, cfg.MinimalRevision)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bot:", err)
			return 1
		}
		b, _ := json.Marshal(botReport{Wall: wall, MaxRSS: procStatus("VmHWM:"), CPUTime: cpuTime()})
		fmt.Printf("bot: done %s\n", b)
		return 0
	}
	st, err := store.Open(ctx, cfg.Store)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bot:", err)
		return 1
	}
	defer st.Close()
	client, err := argocd.New(argocd.Options{BaseURL: cfg.ArgoCD, RetryInitialInterval: 50 * time.Millisecond, RetryMaxInterval: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bot:", err)
		return 1
	}
	opts := []rollout.Option{rollout.WithOwner(cfg.Owner), rollout.WithConcurrency(cfg.Concurrency),
		rollout.WithPollIntervals(cfg.Control, cfg.Claim, cfg.Poll), rollout.WithIntentGrace(cfg.Grace),
		rollout.WithLeaseTTL(cfg.LeaseTTL), rollout.WithSyncTimeouts(5*time.Minute, cfg.Stall, 2*time.Second)}
	if len(cfg.Instances) > 0 {
		others := map[string]rollout.ArgoCD{}
		for name, u := range cfg.Instances {
			c, err := argocd.New(argocd.Options{BaseURL: u, RetryInitialInterval: 50 * time.Millisecond, RetryMaxInterval: time.Second})
			if err != nil {
				fmt.Fprintln(os.Stderr, "bot:", err)
				return 1
			}
			others[name] = c
		}
		opts = append(opts, rollout.WithInstances(others))
	}
	if len(cfg.Budgets) > 0 {
		opts = append(opts, rollout.WithInstanceBudgets(cfg.Budgets))
	}
	ex := rollout.New(st, client, nil, opts...)
	path, ok := strings.CutPrefix(cfg.Store, "sqlite://")
	if !ok {
		fmt.Fprintln(os.Stderr, "bot: the wait for the end reads SQLite only, not", cfg.Store)
		return 2
	}
	states, err := sql.Open("sqlite", path+"?_query_only=1")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bot:", err)
		return 1
	}
	defer states.Close()
	startRSS := procStatus("VmRSS:")
	began := time.Now()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(runCtx) }()
	fmt.Println("bot: running")
	for {
		// Polled cheaply (the states only, not the rollouts with their plans) and seldom, so the measurement
		// takes no CPU worth counting from the bot it measures; when the rollouts finished is read afterwards.
		time.Sleep(50 * time.Millisecond)
		n, err := unfinishedRollouts(ctx, states)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bot:", err)
			continue
		}
		if n == 0 {
			break
		}
	}
	wall, err := lastFinished(ctx, st, began)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bot:", err)
		return 1
	}
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := ex.Stop(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "bot:", err)
	}
	<-runDone
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep := botReport{Wall: wall, MaxRSS: procStatus("VmHWM:"), StartRSS: startRSS, HeapInuse: ms.HeapInuse, CPUTime: cpuTime()}
	b, _ := json.Marshal(rep)
	fmt.Printf("bot: done %s\n", b)
	return 0
}

// lastFinished is how long after began the last rollout finished: when its row was updated to its final state
// (nothing writes a finished rollout's row again when there is no reporter, as in the bench and crash bots).
func lastFinished(ctx context.Context, st *store.Store, began time.Time) (time.Duration, error) {
	rs, err := st.ListRollouts(ctx, store.RolloutFilter{})
	if err != nil {
		return 0, err
	}
	var last time.Time
	for _, r := range rs {
		if r.UpdatedAt.After(last) {
			last = r.UpdatedAt
		}
	}
	// The store's times carry no monotonic reading: compare wall clocks.
	return last.Sub(began.Round(0)), nil
}

// unfinishedRollouts counts the rollouts not finished in the SQLite store db, reading their states only.
func unfinishedRollouts(ctx context.Context, db *sql.DB) (int, error) {
	rows, err := db.QueryContext(ctx, "SELECT state FROM rollouts")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var state string
		if err := rows.Scan(&state); err != nil {
			return 0, err
		}
		if !store.RolloutState(state).Terminal() {
			n++
		}
	}
	return n, rows.Err()
}

// procStatus reads a "kB" line of /proc/self/status, in bytes.
func procStatus(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n * 1024
		}
	}
	return 0
}

func cpuTime() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// botProcess is a running bot.
type botProcess struct {
	cmd  *exec.Cmd
	out  *lockedWriter
	done chan struct{}
	err  error
}

// startBot starts a bot process; the caller must wait for it (or kill it).
func startBot(cfg botConfig) (*botProcess, error) {
	b, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), botEnv+"=1", "FLEETWAVE_TEST_BOT_CONFIG="+string(b))
	out := &lockedWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &botProcess{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL and waits for the process to die.
func (p *botProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *botProcess) report() (botReport, bool) {
	for _, l := range strings.Split(p.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "bot: done "); ok {
			var r botReport
			if json.Unmarshal([]byte(rest), &r) == nil {
				return r, true
			}
		}
	}
	return botReport{}, false
}

// lockedWriter collects a process's output.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
