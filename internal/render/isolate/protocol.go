package isolate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/render"
)

// The worker speaks newline-delimited JSON: the parent writes a config, then requests, on the worker's stdin; the
// worker answers a hello, then one response per request, on its stdout (its own writes to os.Stdout go to stderr).
// A response's objects follow its line as they are, their JSON one after the other (ObjectSizes says where each
// ends): megabytes of manifests are not escaped into, scanned in and copied out of a JSON string.

// config is the first message to a worker: what its renderer and its limits are.
type config struct {
	Limits      render.Limits `json:"limits"`
	AllowRemote bool          `json:"allowRemote,omitempty"`
	// MemoryBytes is the worker's memory cap: its Go heap is watched against it, and its address space is
	// capped by the kernel a little above it.
	MemoryBytes int64 `json:"memoryBytes"`
	// CPU is the CPU time one request may take before the kernel stops the worker (SIGXCPU).
	CPU time.Duration `json:"cpu"`
	// Charts: the parent fetches charts (render.Options.Charts); the worker asks it for them during a render.
	Charts bool `json:"charts,omitempty"`
	// Git: the parent fetches revisions of other git repositories (render.Options.Git); the worker asks it for
	// them during a render and reads the exported tree the parent names.
	Git bool `json:"git,omitempty"`
	// GCPercent is the worker's collector target (Options.GCPercent); 0 leaves Go's default.
	GCPercent int `json:"gcPercent,omitempty"`
	// OneRender is render.Options.OneRender.
	OneRender bool `json:"oneRender,omitempty"`
}

// hello is the worker's answer to its config.
type hello struct {
	Worker int    `json:"worker"` // the worker's pid
	Limits string `json:"limits"` // the kernel limits it runs under, for the parent's log
}

// request is one application to render. Repos holds the checkout of every source's repoURL that has one.
type request struct {
	ID       uint64                `json:"id"`
	App      *v1alpha1.Application `json:"app"`
	Repos    map[string]string     `json:"repos,omitempty"`
	Settings render.Settings       `json:"settings"`
	// YAML asks for the manifests as a YAML stream (render.Request.YAML): response.YAML instead of Objects.
	YAML bool `json:"yaml,omitempty"`
	// Fetched answers the worker's Fetch during a render (no App then).
	Fetched *fetchReply `json:"fetched,omitempty"`
}

// fetchCall is a worker's request for a chart during a render: the parent holds the fetcher, its credentials
// and its cache.
type fetchCall struct {
	Archive  bool   `json:"archive,omitempty"` // a dependency's archive (ChartFetcher.Archive), else a chart (Chart)
	Git      bool   `json:"git,omitempty"`     // a git repository's revision (GitFetcher.Checkout)
	RepoURL  string `json:"repoURL"`
	Chart    string `json:"chart"`
	Revision string `json:"revision"`
	// TagPrefix is a git source's tagPrefix (GitFetcher.Checkout), as the render target reads it.
	TagPrefix string `json:"tagPrefix,omitempty"`
}

type fetchReply struct {
	Chart   *chartfetch.Chart `json:"chart,omitempty"`
	Archive []byte            `json:"archive,omitempty"`
	Version string            `json:"version,omitempty"`
	Tree    *gitfetch.Tree    `json:"tree,omitempty"`
	Err     *wireError        `json:"err,omitempty"`
}

// response is one render's outcome.
type response struct {
	Hello       *hello            `json:"hello,omitempty"` // the worker's first message only
	ID          uint64            `json:"id"`
	Objects     []json.RawMessage `json:"-"`                     // after the line (writeResponse, readResponse)
	ObjectSizes []int             `json:"objectSizes,omitempty"` // of each of Objects
	// YAML is the manifests as render.WriteYAML writes them, when the request asked for it and they encode
	// within yamlCap (else Objects carry them as usual); after the objects. OutputBytes is then the size of
	// their JSON encodings, which a change's output budget counts.
	YAML        []byte     `json:"-"`
	YAMLSize    int        `json:"yamlSize,omitempty"`
	OutputBytes int64      `json:"outputBytes,omitempty"`
	ReadFiles   []string   `json:"readFiles,omitempty"`
	ReadDirs    []string   `json:"readDirs,omitempty"`
	SourceTypes []string   `json:"sourceTypes,omitempty"`
	Err         *wireError `json:"err,omitempty"`
	// Warnings are the distinct lines the libraries printed during the render (liboutput.go).
	Warnings []string `json:"warnings,omitempty"`
	// Fetch asks the parent for a chart; the render goes on with its answer.
	Fetch *fetchCall `json:"fetch,omitempty"`
}

// wireError carries a render error across the pipe: a *render.Error keeps its app and path, and the sentinel its
// cause wraps (callers test errors.Is(err, render.ErrExternalSource) and render.ErrPluginSource).
type wireError struct {
	Render bool   `json:"render,omitempty"` // a *render.Error
	App    string `json:"app,omitempty"`
	Path   string `json:"path,omitempty"`
	Msg    string `json:"msg"`          // the cause's message (the whole message when not a *render.Error)
	Is     string `json:"is,omitempty"` // the sentinel the cause wraps
}

var sentinels = map[string]error{
	"external":          render.ErrExternalSource,
	"plugin":            render.ErrPluginSource,
	"chart-not-allowed": chartfetch.ErrNotAllowed,
	"chart-not-found":   chartfetch.ErrNotFound,
	"chart-refused":     chartfetch.ErrRefused,
	"chart-unsupported": chartfetch.ErrUnsupported,
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	var re *render.Error
	if errors.As(err, &re) {
		w.Render, w.App, w.Path, w.Msg = true, re.App, re.Path, re.Err.Error()
	}
	w.Msg = shortenMessage(render.TagRefusal(w.Msg)) // tagged first: the words naming the rule may be cut
	for name, s := range sentinels {
		if errors.Is(err, s) {
			w.Is = name
		}
	}
	return w
}

// remoteErr is a worker's error message that still matches its sentinel with errors.Is.
type remoteErr struct {
	msg string
	is  error
}

func (e *remoteErr) Error() string { return e.msg }
func (e *remoteErr) Unwrap() error { return e.is }

func (w *wireError) err() error {
	cause := error(&remoteErr{msg: w.Msg, is: sentinels[w.Is]})
	if w.Render {
		return &render.Error{App: w.App, Path: w.Path, Err: cause}
	}
	return cause
}

// maxMessage bounds an error's cause: a library may put a whole template's recursion in one message (Helm's
// include of itself: ~100 KB).
const maxMessage = 600

// shortenMessage cuts a long message, saying how much was left out.
func shortenMessage(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}

// yamlCap bounds a response's YAML for an output cap of maxObjects bytes of JSON. YAML indents what JSON
// brackets, so deep nesting makes it larger than the JSON (quadratically in the depth): past the bound, the
// worker sends the objects and the parent encodes them as they are written.
func yamlCap(maxObjects int64) int64 { return 4 * maxObjects }

// objectsCap is the bound on a response's objects for the output cap of limits, as the worker renders under it.
func objectsCap(limits render.Limits) int64 {
	if limits.MaxOutputBytes <= 0 {
		return render.DefaultMaxOutputBytes
	}
	return limits.MaxOutputBytes
}

// outputBytes is what a response's manifests count in a change's output budget: their JSON's size.
func (r *response) outputBytes() int64 {
	if r.YAML != nil {
		return r.OutputBytes
	}
	var n int64
	for _, o := range r.Objects {
		n += int64(len(o))
	}
	return n
}

// writeResponse writes resp's line, then its objects or its YAML, and flushes.
func writeResponse(w *bufio.Writer, enc *json.Encoder, resp *response) error {
	resp.ObjectSizes = resp.ObjectSizes[:0]
	for _, o := range resp.Objects {
		resp.ObjectSizes = append(resp.ObjectSizes, len(o))
	}
	resp.YAMLSize = len(resp.YAML)
	if err := enc.Encode(resp); err != nil {
		return err
	}
	for _, o := range resp.Objects {
		if _, err := w.Write(o); err != nil {
			return err
		}
	}
	if _, err := w.Write(resp.YAML); err != nil {
		return err
	}
	return w.Flush()
}

// readResponse reads a response's line and its objects, which may not add up to more than maxObjects bytes: a
// worker's objects are within its output cap, and one that says otherwise is not believed.
func readResponse(r *bufio.Reader, maxObjects int64) (*response, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	resp := new(response)
	if err := json.Unmarshal(line, resp); err != nil {
		return nil, err
	}
	if resp.YAMLSize != 0 {
		if resp.YAMLSize < 0 || int64(resp.YAMLSize) > yamlCap(maxObjects) || len(resp.ObjectSizes) != 0 {
			return nil, fmt.Errorf("render worker: an answer of %d bytes of YAML and %d objects (the bound is %d bytes of YAML, alone)", resp.YAMLSize, len(resp.ObjectSizes), yamlCap(maxObjects))
		}
		resp.YAML = make([]byte, resp.YAMLSize)
		if _, err := io.ReadFull(r, resp.YAML); err != nil {
			return nil, err
		}
		return resp, nil
	}
	if len(resp.ObjectSizes) == 0 {
		return resp, nil
	}
	var total int64
	for _, n := range resp.ObjectSizes {
		if n < 0 || total+int64(n) > maxObjects {
			return nil, fmt.Errorf("render worker: objects past the output cap of %d bytes", maxObjects)
		}
		total += int64(n)
	}
	buf := make([]byte, total)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	resp.Objects = make([]json.RawMessage, len(resp.ObjectSizes))
	for i, n := range resp.ObjectSizes {
		resp.Objects[i], buf = buf[:n:n], buf[n:]
	}
	return resp, nil
}
