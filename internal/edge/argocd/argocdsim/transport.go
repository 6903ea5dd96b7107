package argocdsim

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// RoundTripper serves requests in-process, without sockets: the handler runs on its own goroutine and streams
// its answer through a pipe. Every wait is on channels, so a whole simulation can run inside testing/synctest's
// virtual time (sockets would stall it).
func (s *Server) RoundTripper() http.RoundTripper { return inProcess{h: s.handler, s: s} }

// HTTPClient is an *http.Client over RoundTripper.
func (s *Server) HTTPClient() *http.Client { return &http.Client{Transport: s.RoundTripper()} }

type inProcess struct {
	h http.Handler
	s *Server
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.s != nil && !t.s.hang(req.Context()) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, req.Context().Err()
	}
	if t.s != nil && t.s.currentOutage() == Unreachable {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, refusedDial()
	}
	ctx, cancel := context.WithCancel(req.Context())
	sreq := req.Clone(ctx)
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "127.0.0.1:1"
	pr, pw := io.Pipe()
	rw := &pipeWriter{header: http.Header{}, pw: pw, started: make(chan struct{})}
	go func() {
		defer func() {
			if v := recover(); v != nil {
				if !isAbort(v) {
					panic(v)
				}
				// The handler aborted (http.ErrAbortHandler): the connection closes, unanswered or mid-answer.
				rw.abort()
				_ = pw.CloseWithError(errConnectionClosed)
				return
			}
			rw.start(http.StatusOK)
			_ = pw.Close()
		}()
		t.h.ServeHTTP(rw, sreq)
	}()
	select {
	case <-rw.started:
	case <-ctx.Done():
		cancel()
		_ = pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	if rw.aborted {
		cancel()
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, errConnectionClosed
	}
	resp := &http.Response{
		Status:     strconv.Itoa(rw.status) + " " + http.StatusText(rw.status),
		StatusCode: rw.status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        rw.sent,
		Body:          &pipeBody{pr: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}
	return resp, nil
}

// pipeWriter is the handler's http.ResponseWriter: the status and headers are fixed by the first write, flush
// or the handler's return; the body goes through the pipe.
type pipeWriter struct {
	header  http.Header
	sent    http.Header
	pw      *io.PipeWriter
	once    sync.Once
	status  int
	started chan struct{}
	aborted bool // set before started is closed: the handler aborted before its answer began
}

func (p *pipeWriter) Header() http.Header { return p.header }

func (p *pipeWriter) start(status int) {
	p.once.Do(func() {
		p.status = status
		p.sent = p.header.Clone()
		close(p.started)
	})
}

// abort closes started without an answer, unless the answer had begun.
func (p *pipeWriter) abort() {
	p.once.Do(func() {
		p.aborted = true
		close(p.started)
	})
}

func (p *pipeWriter) WriteHeader(status int) { p.start(status) }

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.start(http.StatusOK)
	return p.pw.Write(b)
}

// Flush is a no-op: pipe writes reach the reader directly.
func (p *pipeWriter) Flush() { p.start(http.StatusOK) }

type pipeBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *pipeBody) Close() error {
	b.cancel()
	return b.pr.Close()
}
