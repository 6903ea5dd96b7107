package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/edge/chartfetch"
	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/render"
	"github.com/fleetwave/fleetwave/internal/renderall"
)

// renderAllFlags are the flags `render --all` adds to render's.
type renderAllFlags struct {
	all           bool
	repo, output  string
	outDir        string
	clustersFile  string
	repoURLs      []string
	concurrency   int
	progressEvery time.Duration
}

func (f *renderAllFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.all, "all", false, "render every Application and ApplicationSet app of the repository at --revision (default HEAD), streaming each app's result as it completes")
	fl.StringVar(&f.repo, "repo", ".", "with --all: the GitOps repository (a git working copy or a bare repository)")
	fl.StringVarP(&f.output, "output", "o", "json", "with --all: json (one JSON line per app) or yaml (one YAML stream, each app's documents after a comment naming it)")
	fl.StringVar(&f.outDir, "out-dir", "", "with --all: write each app's manifests to <dir>/<namespace>/<name>.yaml instead of stdout")
	fl.StringVar(&f.clustersFile, "clusters", "", "with --all: destination clusters, as diff's --clusters (default: the cluster Secrets in the repository)")
	fl.StringArrayVar(&f.repoURLs, "repo-url", nil, "with --all: a URL (or owner/name) under which Applications name this repository, in addition to its origin remote; repeatable")
	fl.IntVar(&f.concurrency, "concurrency", 0, "with --all: concurrent renders, one worker process each (default: number of CPUs)")
	fl.DurationVar(&f.progressEvery, "progress-every", time.Second, "with --all: how often a progress line is written to stderr (0: never)")
}

// appLine is one app's line of `render --all --output json`.
type appLine struct {
	App       string            `json:"app"` // <namespace>/<name>
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	File      string            `json:"file,omitempty"`
	AppSet    string            `json:"appSet,omitempty"`
	Parent    string            `json:"parent,omitempty"`
	Cluster   string            `json:"cluster,omitempty"`
	Status    renderall.Status  `json:"status"`
	Error     string            `json:"error,omitempty"`
	Again     bool              `json:"again,omitempty"`
	Objects   int               `json:"objects"`
	ElapsedMS int64             `json:"elapsedMs"`
	Path      string            `json:"path,omitempty"`
	Manifests []json.RawMessage `json:"manifests,omitempty"`
}

// summaryLine is the last line of `render --all --output json`.
type summaryLine struct {
	Summary renderSummary `json:"summary"`
}

type renderSummary struct {
	Commit   string   `json:"commit"`
	Apps     int      `json:"apps"`
	Rendered int      `json:"rendered"`
	Failed   int      `json:"failed"`
	Skipped  int      `json:"skipped"`
	Problems []string `json:"problems"`
	// Unevaluated are the ApplicationSets only Argo CD can generate.
	Unevaluated []string `json:"unevaluated,omitempty"`
	// NoSourceInRepo: no app takes a source from this repository (nothing rendered; a fork or mirror), and the
	// repoURLs the apps name instead.
	NoSourceInRepo bool     `json:"noSourceInRepo,omitempty"`
	AppRepoURLs    []string `json:"appRepoURLs,omitempty"`
	ElapsedMS      int64    `json:"elapsedMs"`
}

// runRenderAll renders every app of a revision (internal/renderall): each app's result is encoded and written
// as soon as it is made, one app at a time under a lock, so that memory holds the renders in flight only.
func runRenderAll(cmd *cobra.Command, deps *Deps, f *renderFlags, a *renderAllFlags) error {
	switch {
	case f.app != "":
		return usageErr(errors.New("render: --all renders every app of --repo: drop --app"))
	case cmd.Flags().Changed("repo-root"):
		return usageErr(errors.New("render: --all reads --repo at --revision, not --repo-root"))
	case a.output != "json" && a.output != "yaml":
		return usageErr(fmt.Errorf("render: --output %q: must be json or yaml", a.output))
	}
	limitBatchMemory(deps)
	rev := f.revision
	f.revision = "" // the commit --revision resolves to is what the apps see
	s, err := renderSettings(cmd, f)
	if err != nil {
		return usageErr(err)
	}
	in := renderall.Input{RepoDir: a.repo, Revision: rev, RepoURLs: a.repoURLs, Settings: s, Concurrency: a.concurrency}
	if a.clustersFile != "" {
		data, err := os.ReadFile(a.clustersFile)
		if err != nil {
			return usageErr(fmt.Errorf("render: reading clusters: %w", err))
		}
		if in.Clusters, err = discover.ParseClusters(a.clustersFile, data); err != nil {
			return usageErr(fmt.Errorf("render: %w", err))
		}
	}
	if a.outDir != "" {
		if err := os.MkdirAll(a.outDir, 0o755); err != nil {
			return usageErr(fmt.Errorf("render: --out-dir: %w", err))
		}
	}
	charts, err := chartFetcher(deps, f.repositories)
	if err != nil {
		return usageErr(fmt.Errorf("render: %w", err))
	}
	r, closeRenderer, _, err := newRenderer(deps.Getenv, toolLog(deps.Stderr), render.Options{
		AllowRemote: f.allowRemote, Charts: charts,
		Limits: render.Limits{MaxFileBytes: f.maxFileBytes, MaxOutputBytes: f.maxOutputBytes,
			MaxDocuments: f.maxDocuments, Timeout: f.timeout},
	}, a.concurrency)
	if err != nil {
		return usageErr(fmt.Errorf("render: %w", err))
	}
	defer closeRenderer()
	st := &stream{out: deps.Stdout, errw: deps.Stderr, format: a.output, dir: a.outDir, every: a.progressEvery, start: time.Now()}
	sum, err := renderall.Run(cmd.Context(), r, in, st.write)
	if err != nil {
		var we *writeError
		if errors.As(err, &we) {
			return &ExitError{Code: 2, Err: fmt.Errorf("render: writing output: %w", we.err)}
		}
		return usageErr(fmt.Errorf("render: %w", err))
	}
	for _, p := range slices.Concat(sum.Problems, sum.Unevaluated) {
		fmt.Fprintf(deps.Stderr, "fleetwave: render: %s\n", p)
	}
	if a.output == "json" {
		line := summaryLine{renderSummary{Commit: sum.Commit, Apps: sum.Apps, Rendered: sum.Rendered, Failed: sum.Failed,
			Skipped: sum.Skipped, Problems: nonNilStrings(sum.Problems), Unevaluated: sum.Unevaluated, NoSourceInRepo: sum.NoSourceInRepo, AppRepoURLs: sum.AppRepoURLs,
			ElapsedMS: sum.Elapsed.Milliseconds()}}
		if err := json.NewEncoder(deps.Stdout).Encode(line); err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("render: writing output: %w", err)}
		}
	}
	skipped := fmt.Sprintf("%d skipped", sum.Skipped)
	if sum.Skipped > 0 {
		skipped += " (" + st.skipReasons() + ")"
	}
	msg := fmt.Sprintf("render: %s at %s in %.1fs: %d rendered, %d failed, %s, %s",
		text.Plural(sum.Apps, "app"), text.ShortRev(sum.Commit), sum.Elapsed.Seconds(), sum.Rendered, sum.Failed, skipped, text.Plural(len(sum.Problems), "repository problem"))
	if sum.NoSourceInRepo {
		msg += "; " + noSourceInRepo(sum.AppRepoURLs)
	}
	if !sum.OK() {
		return &ExitError{Code: 2, Err: errors.New(msg)}
	}
	if sum.Skipped > 0 {
		// Not every app was rendered: no all-clear.
		return &ExitError{Code: 1, Err: errors.New(msg)}
	}
	fmt.Fprintf(deps.Stderr, "fleetwave: %s\n", msg)
	return nil
}

// stream writes each app's result as it comes, and progress lines to stderr.
type stream struct {
	out, errw io.Writer
	format    string
	dir       string
	every     time.Duration
	start     time.Time

	mu       sync.Mutex
	lastNote time.Time
	skips    map[string]string // app key → why it was skipped (its last result)
}

// skipReason is why an app was skipped, by the kind of its render error: what would render it.
func skipReason(err error) string {
	switch {
	case errors.Is(err, render.ErrPluginSource):
		return "config-management plugin: only Argo CD renders it"
	case errors.Is(err, chartfetch.ErrNotAllowed):
		return "repository not allowed by --repositories"
	case strings.Contains(err.Error(), "fetched only from an allowed repositories file"):
		return "chart or OCI artifact: --repositories would fetch it"
	}
	return "source outside this repository: --repositories (or Argo CD) would render it"
}

// skipReasons counts the skipped apps by reason: "2 chart or OCI artifact: --repositories would fetch it; 1 ...".
func (s *stream) skipReasons() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := map[string]int{}
	for _, r := range s.skips {
		counts[r]++
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	return strings.Join(reasons, "; ")
}

// writeError is a failure to write the output (not an app's): it ends the run.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// write encodes one result outside the lock (results arrive from every render at once) and writes it under it.
func (s *stream) write(res renderall.Result) error {
	var buf bytes.Buffer
	var path string
	if res.Status == renderall.Rendered && s.dir != "" {
		var err error
		if path, err = s.writeFile(res); err != nil {
			res.Status, res.Err = renderall.Failed, err
		}
	}
	if err := s.encode(&buf, res, path); err != nil {
		return &writeError{err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.skips == nil {
		s.skips = map[string]string{}
	}
	delete(s.skips, res.App.Key)
	if res.Status == renderall.Skipped && res.Err != nil {
		s.skips[res.App.Key] = skipReason(res.Err)
	}
	if res.Status != renderall.Rendered {
		fmt.Fprintf(s.errw, "fleetwave: render: app %s: %s: %s\n", res.App.Key, res.Status, oneLineErr(res.Err))
	}
	if _, err := s.out.Write(buf.Bytes()); err != nil {
		return &writeError{err}
	}
	if now := time.Now(); s.every > 0 && now.Sub(s.lastNote) >= s.every {
		s.lastNote = now
		fmt.Fprintf(s.errw, "fleetwave: render: %d/%d apps, %d failed, %.1fs\n", res.Done, res.Known, res.FailedSoFar, now.Sub(s.start).Seconds())
	}
	return nil
}

func (s *stream) encode(buf *bytes.Buffer, res renderall.Result, path string) error {
	a := res.App
	if s.format == "yaml" {
		if s.dir != "" || res.Status != renderall.Rendered {
			return nil // files only; a failure is the stderr line
		}
		fmt.Fprintf(buf, "# app: %s\n", a.Key)
		return render.WriteYAML(buf, res.Objects)
	}
	line := appLine{App: a.Key, Name: a.App.Name, Namespace: a.App.Namespace, File: a.File, AppSet: a.AppSet, Parent: a.Parent,
		Cluster: a.Cluster.Name, Status: res.Status, Again: res.Again, Objects: len(res.Objects), ElapsedMS: res.Elapsed.Milliseconds(), Path: path}
	if res.Err != nil {
		line.Error = oneLineErr(res.Err)
	}
	if line.Cluster == "" {
		line.Cluster = a.App.Spec.Destination.Server
	}
	if res.Status == renderall.Rendered && path == "" {
		line.Manifests = make([]json.RawMessage, 0, len(res.Objects))
		for _, o := range res.Objects {
			js, err := json.Marshal(o.Object)
			if err != nil {
				return err
			}
			line.Manifests = append(line.Manifests, js)
		}
	}
	return json.NewEncoder(buf).Encode(line)
}

// writeFile writes an app's manifests to <dir>/<namespace>/<name>.yaml, as `render --app` prints them.
func (s *stream) writeFile(res renderall.Result) (string, error) {
	ns, name := res.App.App.Namespace, res.App.App.Name
	if !safeName(ns) || !safeName(name) {
		return "", fmt.Errorf("cannot name a file after app %q", res.App.Key)
	}
	dir := filepath.Join(s.dir, ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".yaml")
	var buf bytes.Buffer
	if err := render.WriteYAML(&buf, res.Objects); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// safeName reports a name that is one path component (Kubernetes names are; a raw Application file's may not be).
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`+"\x00")
}

func oneLineErr(err error) string {
	if err == nil {
		return ""
	}
	return text.FirstLine(err.Error())
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
