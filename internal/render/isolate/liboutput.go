package isolate

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// What the libraries print while a worker renders is theirs, not fleetwave's: Kustomize writes a deprecation
// warning per kustomization it loads with fmt.Fprintf(os.Stderr) (sigs.k8s.io/kustomize/api
// internal/target/kusttarget.go Load, "Warning: 'commonLabels' is deprecated…"), and others use the standard
// logger (resaccumulator.go "well-defined vars that were never replaced", refvar/expand.go). A worker collects
// those lines per render (libOutput) and sends them with its answer; the pool logs each distinct line once
// (warnings), with the app that printed it first, so that a fleet of apps sharing one old kustomization
// makes one log line, not one per build.

// Bounds of what one render's library output may bring into the answer and the log.
const (
	maxWarningLines = 16       // distinct lines kept per render
	maxWarningLine  = 300      // bytes of one line (shortenMessage past it)
	maxLineRead     = 64 << 10 // bytes of one line read before the rest of it is skipped
	maxWarned       = 256      // distinct lines one pool logs; past it, one line says so
)

// libOutput reads what the worker's libraries write to os.Stderr and the standard logger (w) and keeps the
// distinct lines of the current render.
type libOutput struct {
	w      *os.File
	marker string
	marks  chan struct{}

	mu    sync.Mutex
	lines []string
	seen  map[string]bool
}

// newLibOutput starts reading a pipe whose write end the worker makes its os.Stderr and the standard logger's
// output.
func newLibOutput() (*libOutput, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	o := &libOutput{w: w, marker: "fleetwave-render-mark-" + hex.EncodeToString(b[:]), marks: make(chan struct{}, 1), seen: map[string]bool{}}
	go o.read(r)
	return o, nil
}

func (o *libOutput) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := readLine(br)
		if err != nil {
			return
		}
		if line == o.marker {
			o.marks <- struct{}{}
			continue
		}
		line = strings.TrimSpace(line)
		o.mu.Lock()
		if line != "" && !o.seen[line] && len(o.lines) < maxWarningLines {
			o.seen[line] = true
			o.lines = append(o.lines, shortenLine(line))
		}
		o.mu.Unlock()
	}
}

// readLine reads one line, keeping at most maxLineRead bytes of it.
func readLine(br *bufio.Reader) (string, error) {
	var sb strings.Builder
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			return "", err
		}
		if sb.Len() < maxLineRead {
			sb.Write(chunk[:min(len(chunk), maxLineRead-sb.Len())])
		}
		if !isPrefix {
			return sb.String(), nil
		}
	}
}

// take returns the distinct lines written since the last take. Everything a render's own goroutine wrote is
// in: the marker written after it reaches the reader after it (a pipe keeps the order of writes).
func (o *libOutput) take() []string {
	select { // a marker that came after an earlier take gave up waiting
	case <-o.marks:
	default:
	}
	if _, err := io.WriteString(o.w, o.marker+"\n"); err == nil {
		select {
		case <-o.marks:
		case <-time.After(time.Second): // the reader is stuck: answer with what it has
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	lines := o.lines
	o.lines, o.seen = nil, map[string]bool{}
	return lines
}

func shortenLine(s string) string {
	if len(s) <= maxWarningLine {
		return s
	}
	cut := maxWarningLine
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// warnings logs the lines the workers' libraries printed, each distinct line once per pool (one pool per
// process): at warn level, with the app whose render printed it first.
type warnings struct {
	log *slog.Logger

	mu     sync.Mutex
	logged map[string]bool
	full   bool
}

func newWarnings(log *slog.Logger) *warnings {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &warnings{log: log, logged: map[string]bool{}}
}

func (w *warnings) add(app string, lines []string) {
	for _, l := range lines {
		w.mu.Lock()
		switch {
		case w.logged[l]:
			w.mu.Unlock()
			continue
		case len(w.logged) >= maxWarned:
			full := w.full
			w.full = true
			w.mu.Unlock()
			if !full {
				w.log.Warn("render tool output: further distinct lines are not logged", "distinct", maxWarned)
			}
			return
		}
		w.logged[l] = true
		w.mu.Unlock()
		w.log.Warn("render tool output", "app", app, "output", l)
	}
}
