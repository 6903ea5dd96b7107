package isolate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/render"
)

// envWorker marks a process started as a render worker.
const envWorker = "FLEETWAVE_RENDER_WORKER"

// Exit codes a worker ends with on its own.
const (
	exitMemory   = 86 // its heap passed the memory cap
	exitProtocol = 87 // the parent spoke nonsense
	exitCPU      = 88 // a render passed its CPU time (RLIMIT_CPU's SIGXCPU)
)

// capable records that this binary serves workers: WorkerMain ran at its start and returned.
var capable atomic.Bool

// WorkerMain makes the running binary able to serve render workers. Call it first thing in main (and in the
// TestMain of tests that start a Pool): in a process started as a worker it serves renders on stdin/stdout and
// exits; in any other process it returns at once. A Pool starts its workers by re-executing the binary it runs
// in, so a binary that does not call WorkerMain cannot have one (New says so).
func WorkerMain() {
	if os.Getenv(envWorker) != "1" {
		capable.Store(true)
		return
	}
	os.Exit(serve(os.Stdin, os.Stdout))
}

// serve is a worker's life: read the config, apply the kernel limits, answer requests one at a time.
func serve(in io.Reader, out *os.File) int {
	// What the libraries print must never reach the responses (stdout), nor, raw, the stderr whose head the
	// parent keeps to say why a worker crashed: their stdout is dropped, and their stderr and standard logger
	// (Kustomize's deprecation warnings: liboutput.go) are collected per render and sent with its answer, for
	// the parent's log. The runtime's own fatal errors and panics are written to file descriptor 2 directly,
	// so they still reach the parent; the worker's own messages go there through diag.
	diag := os.Stderr
	devNull, nullErr := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if nullErr == nil {
		os.Stdout = devNull
	} else {
		os.Stdout = os.Stderr
	}
	lib, err := newLibOutput()
	switch {
	case err == nil:
		os.Stderr = lib.w
		log.SetFlags(0)
		log.SetOutput(lib.w)
	case nullErr == nil:
		os.Stderr = devNull
		log.SetOutput(io.Discard)
	default:
		log.SetOutput(io.Discard)
	}
	// Terminal signals are the parent's business: it cancels by killing. Keep rendering until told.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go endAtCPULimit(diag)

	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<16))
	w := bufio.NewWriterSize(out, 1<<16)
	enc := json.NewEncoder(w)
	var cfg config
	if err := dec.Decode(&cfg); err != nil {
		fmt.Fprintf(diag, "render worker: reading config: %v\n", err)
		return exitProtocol
	}
	limits := applyLimits(cfg)
	go watchMemory(cfg.MemoryBytes, diag)

	lim := cfg.Limits
	// The parent enforces the time cap by killing this process: the in-process cap must never fire first, as
	// it would abandon a goroutine that keeps running into the next render.
	lim.Timeout = 1000 * time.Hour
	ropts := render.Options{Limits: lim, AllowRemote: cfg.AllowRemote, KeepJSON: true, OneRender: cfg.OneRender}
	proxy := &chartProxy{dec: dec, enc: enc, w: w} // one pipe: charts and git trees are asked in turn
	if cfg.Charts {
		ropts.Charts = proxy
	}
	if cfg.Git {
		ropts.Git = &gitProxy{proxy}
	}
	r := render.New(ropts)
	if err := enc.Encode(response{Hello: &hello{Worker: os.Getpid(), Limits: limits}}); err != nil || w.Flush() != nil {
		return exitProtocol
	}
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if err == io.EOF {
				return 0 // the parent closed the pipe: the pool is closing or the parent died
			}
			fmt.Fprintf(diag, "render worker: reading request: %v\n", err)
			return exitProtocol
		}
		armCPU(cfg.CPU)
		resp := handle(r, &req, yamlCap(objectsCap(cfg.Limits)))
		if lib != nil {
			resp.Warnings = lib.take()
		}
		if err := writeResponse(w, enc, resp); err != nil {
			fmt.Fprintf(diag, "render worker: writing response: %v\n", err)
			return exitProtocol
		}
	}
}

func handle(r *render.Renderer, req *request, maxYAML int64) *response {
	resp := &response{ID: req.ID}
	repos := req.Repos
	res, err := r.Render(context.Background(), render.Request{
		App: req.App,
		Repos: func(repoURL string) (string, bool) {
			root, ok := repos[repoURL]
			return root, ok
		},
		Settings: req.Settings,
	})
	if err != nil {
		resp.Err = toWire(err)
		return resp
	}
	resp.ReadFiles, resp.ReadDirs, resp.SourceTypes = res.ReadFiles, res.ReadDirs, res.SourceTypes
	if len(res.JSON) == len(res.Objects) { // the render's own encoding (render.Options.KeepJSON)
		// The bytes the parent would write had it received the objects: manifestyaml.Marshal writes what
		// sigs.k8s.io/yaml.Marshal does, from the objects' JSON, so the objects here and the parent's decoding
		// of their JSON encode alike. Past maxYAML, or when one does not encode, the parent gets the objects and
		// writes them or says why not, as before.
		if req.YAML {
			if y, err := render.EncodeYAML(res.Objects, maxYAML); err == nil {
				resp.YAML = y
				for _, b := range res.JSON {
					resp.OutputBytes += int64(len(b))
				}
				return resp
			}
		}
		resp.Objects = res.JSON
		return resp
	}
	resp.Objects = make([]json.RawMessage, 0, len(res.Objects))
	for _, o := range res.Objects {
		b, err := json.Marshal(o.Object)
		if err != nil {
			resp.Objects, resp.Err = nil, toWire(&render.Error{App: req.App.Name, Err: err})
			return resp
		}
		resp.Objects = append(resp.Objects, b)
	}
	return resp
}

// applyLimits sets the limits the kernel enforces on this process: its address space (a backstop above the heap
// watch, as Go reserves address space it never uses) and a stack cap that makes runaway recursion fail fast.
// It returns a description for the parent's log.
func applyLimits(cfg config) string {
	desc := ""
	if cfg.MemoryBytes > 0 {
		// The Go runtime has reserved its arenas' bookkeeping by now (hundreds of MiB of address space, little
		// of it resident): the cap is what is mapped now plus room for the heap cap and the runtime around it.
		as := uint64(vmSize() + cfg.MemoryBytes + cfg.MemoryBytes/4 + 256<<20)
		if raceEnabled {
			desc = "RLIMIT_AS not set (race detector)"
		} else if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: as, Max: as}); err == nil {
			desc = fmt.Sprintf("RLIMIT_AS %d MiB", as>>20)
		} else {
			desc = "RLIMIT_AS not set: " + err.Error()
		}
		// No soft memory limit for the collector by default: near it, a bomb's live heap would make the
		// collector run (up to half the CPU) until the cap instead of passing the cap and ending at once.
		debug.SetMaxStack(int(maxStack(cfg.MemoryBytes)))
	}
	if cfg.CPU > 0 {
		desc += ", RLIMIT_CPU per render"
	}
	if cfg.GCPercent > 0 {
		// The heap may grow to 1+GCPercent/100 times what is live, but not past half the memory cap: the soft
		// limit makes the collector run before watchMemory would end the worker for its garbage.
		debug.SetGCPercent(cfg.GCPercent)
		desc += fmt.Sprintf(", GOGC %d", cfg.GCPercent)
		if os.Getenv("GOGC") == strconv.Itoa(cfg.GCPercent) {
			desc += " from start-up" // the parent set it in the environment (Pool.spawn)
		}
		if cfg.MemoryBytes > 0 {
			debug.SetMemoryLimit(cfg.MemoryBytes / 2)
			desc += fmt.Sprintf(" under a soft limit of %d MiB", cfg.MemoryBytes/2>>20)
		}
	}
	return desc
}

// maxStack is a goroutine's stack cap in a worker with the given memory cap: runaway recursion (a deeply nested
// document, a recursive program) fails at it instead of at Go's default of 1 GB.
func maxStack(memory int64) int64 { return min(memory/4, 256<<20) }

// endAtCPULimit ends the worker when the kernel signals that a render passed its CPU time (armCPU). Go's
// runtime catches SIGXCPU and takes no action on it (os/signal: "other signals will be caught but no action will
// be taken"), and the hard limit is left unset so that the soft one can move: without this the kernel's signal
// ended nothing and a render whose kill did not come ran on for ever (TestHostileBoundCatchesMissingKill). The
// goroutine is preempted into even while a template runs, as the memory watch is.
func endAtCPULimit(diag io.Writer) {
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	<-xcpu
	fmt.Fprintln(diag, "render worker: CPU time limit exceeded")
	os.Exit(exitCPU)
}

// armCPU lets the next render use cpu of CPU time from now: past it the kernel sends SIGXCPU, on which the
// worker ends (endAtCPULimit). The soft limit moves with each request; the hard limit is left alone so it can.
func armCPU(cpu time.Duration) {
	if cpu <= 0 {
		return
	}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CPU, &lim); err != nil {
		return
	}
	cur := uint64((used + cpu + time.Second - 1) / time.Second)
	if lim.Max != unix.RLIM_INFINITY && cur > lim.Max {
		cur = lim.Max
	}
	lim.Cur = cur
	_ = unix.Setrlimit(unix.RLIMIT_CPU, &lim)
}

// watchMemory ends the worker as soon as its heap passes limit. The render itself cannot be stopped (templates,
// kyaml and go-jsonnet take no context), but this goroutine is preempted in, so it sees the heap grow within
// milliseconds, long before the kernel's address-space cap would fail an allocation.
func watchMemory(limit int64, diag io.Writer) {
	if limit <= 0 {
		return
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		metrics.Read(s)
		if int64(s[0].Value.Uint64()+s[1].Value.Uint64()) > limit {
			fmt.Fprintf(diag, "render worker: heap passed %d bytes\n", limit)
			os.Exit(exitMemory)
		}
	}
}

// vmSize is this process's mapped address space in bytes (0 if unknown).
func vmSize() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var pages int64
	if _, err := fmt.Sscan(string(b), &pages); err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// chartProxy fetches charts through the parent: the worker asks on its stdout and reads the answer on its stdin,
// which the serve loop does not read during a render.
type chartProxy struct {
	mu  sync.Mutex
	dec *json.Decoder
	enc *json.Encoder
	w   *bufio.Writer
}

func (c *chartProxy) call(fc fetchCall) (*fetchReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enc.Encode(response{Fetch: &fc}); err != nil {
		return nil, err
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	var req request
	if err := c.dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("render worker: reading the chart: %w", err)
	}
	if req.Fetched == nil {
		return nil, errors.New("render worker: the parent did not answer the chart request")
	}
	if req.Fetched.Err != nil {
		return nil, req.Fetched.Err.err()
	}
	return req.Fetched, nil
}

func (c *chartProxy) Chart(_ context.Context, repoURL, chart, revision string) (*chartfetch.Chart, error) {
	r, err := c.call(fetchCall{RepoURL: repoURL, Chart: chart, Revision: revision})
	if err != nil {
		return nil, err
	}
	if r.Chart == nil {
		return nil, errors.New("render worker: the parent sent no chart")
	}
	return r.Chart, nil
}

func (c *chartProxy) Archive(_ context.Context, repository, chart, constraint string) ([]byte, string, error) {
	r, err := c.call(fetchCall{Archive: true, RepoURL: repository, Chart: chart, Revision: constraint})
	if err != nil {
		return nil, "", err
	}
	return r.Archive, r.Version, nil
}

// gitProxy fetches git revisions through the parent, which holds the repositories' credentials and the cache;
// the worker reads the tree the parent exported.
type gitProxy struct{ c *chartProxy }

func (g *gitProxy) Checkout(_ context.Context, repoURL, revision, tagPrefix string) (*gitfetch.Tree, error) {
	r, err := g.c.call(fetchCall{Git: true, RepoURL: repoURL, Revision: revision, TagPrefix: tagPrefix})
	if err != nil {
		return nil, err
	}
	if r.Tree == nil {
		return nil, errors.New("render worker: the parent sent no tree")
	}
	return r.Tree, nil
}
