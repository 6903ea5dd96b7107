// Package isolate renders Applications in worker processes of the running binary, so that no render, whatever
// its templates do, can take the process that asked for it down, hang it or keep a core busy after its cap.
//
// Go's text/template, kyaml and go-jsonnet take no context and allocate as they please: a render cannot be
// interrupted in-process, only abandoned, and an allocation bomb outruns any check made after it. A worker is a
// process: the kernel caps its address space (RLIMIT_AS) and its CPU time per render (RLIMIT_CPU), a watch of its
// own heap ends it at the memory cap, and the parent kills it at the time cap or when the caller gives up. The
// caller gets a one-line error of the app ("refused (time-limit): render exceeded 60 s") and the pool starts a
// fresh worker for the next render. Workers are reused across renders (their chart caches stay warm), so a
// render costs a round trip of JSON over pipes, not a process start.
//
// The binary must call WorkerMain first thing in main (tests: in TestMain): a worker is the same binary
// started with FLEETWAVE_RENDER_WORKER=1.
package isolate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/render"
)

// DefaultMemoryBytes is a worker's memory cap when Options.MemoryBytes is 0.
const DefaultMemoryBytes = 1 << 30

// DefaultChangeOutput is Options.ChangeOutput's default: sixteen apps at render.DefaultMaxOutputBytes.
const DefaultChangeOutput = 16 * render.DefaultMaxOutputBytes

// startTimeout bounds a worker's start (the binary's init and the hello), on a loaded machine too.
const startTimeout = 30 * time.Second

// Options configure a Pool.
type Options struct {
	// Render configures each worker's renderer: its Limits (Limits.Timeout is enforced by killing the worker)
	// and AllowRemote.
	Render render.Options
	// Workers is the number of worker processes, the most renders run at once (default GOMAXPROCS).
	Workers int
	// MemoryBytes caps a worker's memory (default DefaultMemoryBytes).
	MemoryBytes int64
	// CPU caps the CPU time of one render, enforced by the kernel (default: the time cap times the number of
	// CPUs, plus a second; the wall-time kill normally comes first).
	CPU time.Duration
	// ChangeOutput caps the manifests (their JSON bytes, as the workers send them) of all the renders made
	// through one Pool.For view, one change's preview under serve (default DefaultChangeOutput; negative: none):
	// the parent holds them until the change's report is made, and each app's own cap (render.Limits) does not
	// bound their sum over many apps.
	ChangeOutput int64
	// Share is the most workers one tenant (Pool.For) holds at once (default and at most: Workers). Whatever
	// it is, a freed worker goes first to the waiting tenant that holds the fewest. A server shared by tenants
	// that must not starve each other sets it below Workers (serve: Workers-1), so that a tenant whose renders
	// all run to the time cap still leaves a worker to the others.
	Share int
	// Log receives, at warn level, each distinct line the workers' libraries print while rendering (Kustomize's
	// deprecation warnings), once per pool, with the app that printed it first (nil: dropped).
	Log *slog.Logger
	// GCPercent sets the workers' garbage collector target (runtime/debug.SetGCPercent; 0: Go's default of 100),
	// with a soft memory limit of half MemoryBytes. A command that renders one large app and holds all of it
	// until written (render --app) trades memory for the collector's time; a server keeps the default.
	GCPercent int
}

// ErrUnavailable is returned by New in a binary that does not call WorkerMain at its start.
var ErrUnavailable = errors.New("this binary cannot start render workers (isolate.WorkerMain is not called at its start)")

// ErrClosed is returned by Render after Close.
var ErrClosed = errors.New("render worker pool is closed")

// Available reports whether this binary can start render workers.
func Available() bool { return capable.Load() }

// Pool renders Applications in worker processes. It implements preview.Renderer; it is safe for concurrent use.
type Pool struct {
	opts    Options
	timeout time.Duration
	sched   *scheduler
	cg      *cgroups // nil: workers run under setrlimit alone
	cgWhy   string   // why cg is nil
	warn    *warnings
	nextID  atomic.Uint64
	started atomic.Int64

	mu      sync.Mutex
	idle    []*worker
	all     map[*worker]bool // started and not killed: idle, busy, or just started
	pending int              // workers being started
	notify  chan struct{}    // closed and replaced when a worker is started or put back
	refills sync.WaitGroup   // replacements being started in the background
	closed  bool

	// Tests' view of the time cap (export_test.go): trace is told when an app's render timer is armed ("armed", the
	// request sent to its worker) and when it fires ("deadline"), with the parent's own clock, so that the
	// hostile suite measures the kill from the deadline rather than wall time from a queued submit;
	// noDeadlineKill leaves the worker running past its deadline, to show that the suite's bound catches a
	// missing kill. Both are unset outside tests.
	trace          func(app, event string, at time.Time)
	noDeadlineKill bool
}

// New returns a pool; workers are started when first needed, and again after one is killed.
func New(opts Options) (*Pool, error) {
	if !Available() {
		return nil, ErrUnavailable
	}
	if f, ok := opts.Render.Charts.(*chartfetch.Fetcher); ok && f == nil {
		opts.Render.Charts = nil
	}
	if f, ok := opts.Render.Git.(*gitfetch.Fetcher); ok && f == nil {
		opts.Render.Git = nil
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.MemoryBytes <= 0 {
		opts.MemoryBytes = DefaultMemoryBytes
	}
	timeout := opts.Render.Limits.Timeout
	if timeout <= 0 {
		timeout = render.DefaultTimeout
	}
	if opts.CPU <= 0 {
		opts.CPU = timeout*time.Duration(runtime.NumCPU()) + time.Second
	}
	if opts.ChangeOutput == 0 {
		opts.ChangeOutput = DefaultChangeOutput
	}
	if opts.Share <= 0 || opts.Share > opts.Workers {
		opts.Share = opts.Workers
	}
	p := &Pool{opts: opts, timeout: timeout, sched: newScheduler(opts.Workers, opts.Share), all: map[*worker]bool{}, notify: make(chan struct{}),
		warn: newWarnings(opts.Log)}
	p.cg, p.cgWhy = newCgroups(cgroupRoot, "/proc/self/cgroup")
	return p, nil
}

// Fetches is render.Renderer.Fetches, answered by the parent, which holds the chart fetcher: whether src is a
// chart from a Helm repository the operator allows.
func (p *Pool) Fetches(src *v1alpha1.ApplicationSource) bool {
	return render.Fetches(p.opts.Render.Charts, src) || render.FetchesGit(p.opts.Render.Git, src)
}

// Workers is the pool's size: the most worker processes, and renders, at once.
func (p *Pool) Workers() int { return p.opts.Workers }

// Isolation says, for logs, what the kernel enforces on each worker: a cgroup v2 group of its own (memory.max,
// cpu.max) where the machine has cgroup v2 and this process's cgroup is writable, and setrlimit always.
func (p *Pool) Isolation() string {
	if p.cg != nil {
		return "cgroup v2 under " + p.cg.dir + " (memory.max, cpu.max) and setrlimit"
	}
	return "setrlimit (" + p.cgWhy + ")"
}

// Started is the number of workers started so far (a killed worker is replaced by a new one).
func (p *Pool) Started() int64 { return p.started.Load() }

// Render renders req.App in a worker. Errors are those of render.Renderer.Render (a *render.Error naming the app,
// matching render.ErrExternalSource and render.ErrPluginSource), plus the worker's own end: past the time cap,
// the memory cap or the CPU cap, or a crash, the error is one line and the worker is replaced. Its renders are
// those of the tenant "" (see For).
func (p *Pool) Render(ctx context.Context, req render.Request) (*render.Result, error) {
	return p.render(ctx, who{}, nil, req)
}

// render renders as tenant's; out, when not nil, is the output budget the render's manifests count in.
func (p *Pool) render(ctx context.Context, tenant who, out *outputBudget, req render.Request) (*render.Result, error) {
	app := req.App
	if app == nil {
		return nil, errors.New("render: no application")
	}
	wreq := &request{App: app, Settings: req.Settings, YAML: req.YAML}
	if req.Repos != nil {
		for _, src := range app.Spec.GetSources() {
			if root, ok := req.Repos(src.RepoURL); ok {
				if wreq.Repos == nil {
					wreq.Repos = map[string]string{}
				}
				wreq.Repos[src.RepoURL] = root
			}
		}
	}
	// A worker's end names the app and what it was rendering (its source's path or chart): which file of it
	// was being read when the cap was reached is not known to the parent.
	fail := func(err error) (*render.Result, error) {
		return nil, &render.Error{App: app.Name, Path: render.SourcesLabel(app), Err: err}
	}
	if err := p.sched.acquire(ctx, tenant); err != nil {
		return fail(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			p.sched.release(tenant)
		}
	}
	defer release()
	w, err := p.get(ctx)
	if err != nil {
		return fail(err)
	}
	wreq.ID = p.nextID.Add(1)
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	deadline := timer.C
	if p.trace != nil {
		p.trace(app.Name, "armed", time.Now())
	}
	if err := w.send(wreq); err != nil {
		p.kill(w)
		return fail(w.cause(p.opts))
	}
	var resp *response
	for resp == nil {
		select {
		case r, ok := <-w.resps:
			if !ok {
				p.replace(w)
				return fail(w.cause(p.opts))
			}
			if r.Fetch != nil {
				if err := w.send(&request{Fetched: p.fetch(ctx, r.Fetch)}); err != nil {
					p.replace(w)
					return fail(w.cause(p.opts))
				}
				continue
			}
			resp = r
		case <-deadline:
			if p.trace != nil {
				p.trace(app.Name, "deadline", time.Now())
			}
			if p.noDeadlineKill {
				deadline = nil
				continue
			}
			p.replace(w)
			return fail(fmt.Errorf("refused (time-limit): render exceeded %s", seconds(p.timeout)))
		case <-ctx.Done():
			p.replace(w)
			return fail(ctx.Err())
		}
	}
	if resp.ID != wreq.ID {
		p.kill(w)
		return fail(fmt.Errorf("render worker answered request %d to request %d", resp.ID, wreq.ID))
	}
	p.warn.add(app.Name, resp.Warnings)
	p.put(w)
	release()
	if resp.Err != nil {
		return nil, resp.Err.err()
	}
	if err := out.take(resp.outputBytes()); err != nil {
		return fail(err)
	}
	if resp.YAML != nil {
		return &render.Result{ReadFiles: resp.ReadFiles, ReadDirs: resp.ReadDirs, SourceTypes: resp.SourceTypes, YAML: resp.YAML}, nil
	}
	objs, err := decodeObjects(resp.Objects)
	if err != nil {
		return fail(err)
	}
	return &render.Result{ReadFiles: resp.ReadFiles, ReadDirs: resp.ReadDirs, SourceTypes: resp.SourceTypes, Objects: objs}, nil
}

// decodeObjects decodes a worker's manifests as Argo CD's controller reads the repo-server's (integers stay
// int64; decodeObject), on all CPUs: a large chart's are megabytes.
func decodeObjects(raws []json.RawMessage) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, len(raws))
	errs := make([]error, len(raws))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(raws)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(raws); i = int(next.Add(1) - 1) {
				obj, err := decodeObject(raws[i])
				objs[i], errs[i] = &unstructured.Unstructured{Object: obj}, err
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("decoding the worker's manifest: %w", err)
		}
	}
	return objs, nil
}

// fetch answers a worker's chart request with the pool's fetcher. The time it takes counts in the render's.
func (p *Pool) fetch(ctx context.Context, fc *fetchCall) *fetchReply {
	if fc.Git {
		return p.fetchGit(ctx, fc)
	}
	f := p.opts.Render.Charts
	if f == nil {
		return &fetchReply{Err: toWire(errors.New("no chart repositories are configured"))}
	}
	if fc.Archive {
		data, version, err := f.Archive(ctx, fc.RepoURL, fc.Chart, fc.Revision)
		return &fetchReply{Archive: data, Version: version, Err: toWire(err)}
	}
	ch, err := f.Chart(ctx, fc.RepoURL, fc.Chart, fc.Revision)
	return &fetchReply{Chart: ch, Err: toWire(err)}
}

// Close kills the workers and waits for them; Render fails after it.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.idle = nil
	p.changed()
	p.mu.Unlock()
	for _, w := range ws {
		p.kill(w)
	}
	p.refills.Wait()
	return nil
}

// Prestart starts workers until the pool has all of them (a server calls it at start, so that the first
// renders do not wait for workers to start). It returns the first start's failure.
func (p *Pool) Prestart(ctx context.Context) error {
	for {
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			return ErrClosed
		case p.pending > 0:
			ch := p.notify
			p.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		case len(p.all) >= p.opts.Workers:
			p.mu.Unlock()
			return nil
		}
		p.pending++
		p.mu.Unlock()
		if _, err := p.start(); err != nil {
			return err
		}
	}
}

// changed wakes those waiting for a worker being started. Call with p.mu held.
func (p *Pool) changed() {
	close(p.notify)
	p.notify = make(chan struct{})
}

// start starts a worker counted in p.pending; it joins the idle ones.
func (p *Pool) start() (*worker, error) {
	w, err := p.spawn()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending--
	p.changed()
	if err != nil {
		return nil, fmt.Errorf("starting a render worker: %w", err)
	}
	if p.closed {
		go w.kill()
		return nil, ErrClosed
	}
	p.all[w] = true
	p.idle = append(p.idle, w)
	return w, nil
}

// get takes an idle worker, else waits for one being started, else starts one.
func (p *Pool) get(ctx context.Context) (*worker, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if n := len(p.idle); n > 0 {
			w := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return w, nil
		}
		if p.pending > 0 {
			ch := p.notify
			p.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		// Start one, in the background: a caller that gives up meanwhile returns at once, and the worker
		// joins the idle ones for the next render.
		p.pending++
		p.refills.Add(1)
		p.mu.Unlock()
		started := make(chan error, 1)
		go func() {
			defer p.refills.Done()
			_, err := p.start()
			started <- err
		}()
		select {
		case err := <-started:
			if err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (p *Pool) put(w *worker) {
	p.mu.Lock()
	if !p.closed {
		p.idle = append(p.idle, w)
		p.changed()
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.kill(w)
}

// replace kills w and starts a worker in its place, in the background: the next render does not wait for the
// whole start.
func (p *Pool) replace(w *worker) {
	p.kill(w)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.pending++
	p.refills.Add(1)
	go func() {
		defer p.refills.Done()
		_, _ = p.start() // on failure the next render starts one, and says why it cannot
	}()
}

// kill ends w and waits until its process is reaped and its goroutines are done.
func (p *Pool) kill(w *worker) {
	w.kill()
	p.mu.Lock()
	delete(p.all, w)
	p.mu.Unlock()
}

// worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	in     *os.File
	bw     *bufio.Writer
	enc    *json.Encoder
	resps  chan *response // closed when the worker's stdout ends
	exited chan struct{}  // closed when the process is reaped
	stderr *headBuffer
	once   sync.Once
	cgroup string // its cgroup v2 group ("": none), removed once it is reaped
	oom    bool   // the kernel killed it at its group's memory.max
	limits string // what the worker said of its limits when it started
}

// workerEnvAllowed are the variables of the parent's environment a worker starts with. Everything else stays
// with the parent: the webhook secret, the Argo CD token, the store's DSN, the fleet view's token and whatever
// else the operator's environment holds (issue 38). A worker needs a PATH, a HOME and a TMPDIR, and the Go
// runtime's own settings; its configuration arrives over its pipe.
var workerEnvAllowed = map[string]bool{
	"PATH": true, "HOME": true, "TMPDIR": true,
	"GOGC": true, "GOMEMLIMIT": true, "GOMAXPROCS": true, "GODEBUG": true, "GOTRACEBACK": true,
	"GORACE": true, "GOCOVERDIR": true, // the race detector's and coverage's settings, for tests of the binary
}

// workerEnv is a worker's environment: the allowed variables of parent, and envWorker.
func workerEnv(parent []string) []string {
	env := make([]string, 0, len(workerEnvAllowed)+1)
	for _, kv := range parent {
		if k, _, ok := strings.Cut(kv, "="); ok && workerEnvAllowed[k] {
			env = append(env, kv)
		}
	}
	return append(env, envWorker+"=1")
}

func (p *Pool) spawn() (*worker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	w := &worker{in: inW, resps: make(chan *response, 1), exited: make(chan struct{}), stderr: &headBuffer{max: 16 << 10}}
	w.cmd = exec.Command(exe)
	w.cmd.Env = workerEnv(os.Environ())
	if p.opts.GCPercent > 0 && os.Getenv("GOGC") == "" {
		// From its first instruction rather than from its config: the packages' initialisation allocates about
		// 13 MB, which at Go's default target costs two collections (≈ 6 ms of a worker's start-up).
		w.cmd.Env = append(w.cmd.Env, "GOGC="+strconv.Itoa(p.opts.GCPercent))
	}
	w.cmd.Stdin, w.cmd.Stdout, w.cmd.Stderr = inR, outW, w.stderr
	// Its own process group (a terminal's ^C is for the parent, which cancels by killing), and killed with it.
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if p.cg != nil {
		// Started inside its own group (clone3 CLONE_INTO_CGROUP): capped from its first instruction. A group
		// that cannot be made leaves this worker under setrlimit alone.
		if fd, dir, err := p.cg.group(cgroupMemory(p.opts.MemoryBytes)); err == nil {
			defer fd.Close()
			w.cgroup = dir
			w.cmd.SysProcAttr.UseCgroupFD, w.cmd.SysProcAttr.CgroupFD = true, int(fd.Fd())
		}
	}
	err = w.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		w.removeCgroup()
		inW.Close()
		outR.Close()
		return nil, err
	}
	p.started.Add(1)
	w.bw = bufio.NewWriterSize(inW, 1<<16)
	w.enc = json.NewEncoder(w.bw)
	go func() {
		defer close(w.resps)
		defer outR.Close()
		br := bufio.NewReaderSize(outR, 1<<16)
		maxObjects := objectsCap(p.opts.Render.Limits)
		for {
			r, err := readResponse(br, maxObjects)
			if err != nil {
				return
			}
			w.resps <- r
		}
	}()
	go func() {
		_ = w.cmd.Wait()
		close(w.exited)
	}()

	cfg := config{Limits: p.opts.Render.Limits, AllowRemote: p.opts.Render.AllowRemote, MemoryBytes: p.opts.MemoryBytes, CPU: p.opts.CPU,
		Charts: p.opts.Render.Charts != nil, Git: p.opts.Render.Git != nil, GCPercent: p.opts.GCPercent,
		OneRender: p.opts.Render.OneRender}
	if err := w.send(cfg); err != nil {
		w.kill()
		return nil, fmt.Errorf("%w: %s", err, w.stderr.firstLine())
	}
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case r, ok := <-w.resps:
		if ok && r.Hello != nil {
			w.limits = r.Hello.Limits
			return w, nil
		}
		w.kill()
		return nil, fmt.Errorf("the worker did not start: %s", w.cause(p.opts))
	case <-timer.C:
		w.kill()
		return nil, fmt.Errorf("the worker did not answer within %s", startTimeout)
	}
}

func (w *worker) send(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	return w.bw.Flush()
}

// kill ends the process (if it still runs) and waits for it and for the goroutines reading it.
func (w *worker) kill() {
	w.once.Do(func() {
		_ = w.cmd.Process.Kill()
		<-w.exited
		for range w.resps {
		}
		w.in.Close()
		w.oom = w.cgroup != "" && oomKilled(w.cgroup)
		w.removeCgroup()
	})
}

// removeCgroup removes the worker's cgroup, empty once the worker is reaped.
func (w *worker) removeCgroup() {
	if w.cgroup != "" {
		_ = os.Remove(w.cgroup)
	}
}

// cause says, in one line, why a worker ended during a render. The worker must have been killed first (or have
// died): it waits for the process to be reaped.
func (w *worker) cause(o Options) error {
	w.kill()
	memory := fmt.Errorf("refused (memory-limit): render exceeded %s of memory", FormatBytes(o.MemoryBytes))
	st := w.cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited() && ws.ExitStatus() == exitMemory:
			return memory
		case ws.Exited() && ws.ExitStatus() == exitCPU,
			ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL && w.stderr.contains("CPU time limit")):
			return fmt.Errorf("refused (cpu-limit): render exceeded %s of CPU time", seconds(o.CPU))
		}
	}
	if w.oom || w.stderr.contains("out of memory") || w.stderr.contains("cannot allocate memory") {
		return memory
	}
	if w.stderr.contains("fatal error: stack overflow") {
		return fmt.Errorf("refused (stack-limit): render exceeded the %s stack (nesting or recursion too deep)", FormatBytes(maxStack(o.MemoryBytes)))
	}
	if line := w.stderr.crashLine(); line != "" {
		return fmt.Errorf("render worker crashed: %s", line)
	}
	return fmt.Errorf("render worker ended: %s", st)
}

// headBuffer keeps the first max bytes written to it (a crash's first lines say why).
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *headBuffer) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Contains(b.buf.Bytes(), []byte(s))
}

func (b *headBuffer) firstLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	line, _, _ := strings.Cut(strings.TrimSpace(b.buf.String()), "\n")
	return line
}

// crashLine is the line of the worker's stderr that says why it crashed: Go's "fatal error:" or "panic:" line,
// else its first line.
func (b *headBuffer) crashLine() string {
	b.mu.Lock()
	text := b.buf.String()
	b.mu.Unlock()
	first := ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if first == "" {
			first = l
		}
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return shorten(l)
		}
	}
	return shorten(first)
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// seconds writes a duration as "60 s" or "1.5 s".
func seconds(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", d.Seconds()), "0"), ".") + " s"
}

// FormatBytes writes a byte count as "1 GiB", "512 MiB" or "1.5 GiB".
func FormatBytes(n int64) string {
	trim := func(f float64) string { return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", f), "0"), ".") }
	switch {
	case n >= 1<<30:
		return trim(float64(n)/(1<<30)) + " GiB"
	case n >= 1<<20:
		return trim(float64(n)/(1<<20)) + " MiB"
	}
	return fmt.Sprintf("%d bytes", n)
}
