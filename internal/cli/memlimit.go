package cli

// batchMemory is the soft memory limit of the Go runtime in the commands that go once over a repository (diff,
// plan, render --all). Without it the garbage collector lets the heap grow to twice what is live before it
// collects: on a 5,000-app repository with a change of 500 apps, about 95 MiB live made 185 MiB of anonymous
// memory, and with the binary's code (90–110 MiB resident) over 300 MiB. Under the limit the collector runs
// more often once the heap nears it, and only then: a change of 500 apps among 500 stays well under it.
// Render workers are other processes, capped on their own (internal/render/isolate).
const batchMemory = 160 << 20

// batchGCPercent is the collector target of the batch commands under batchMemory: below the limit the heap may
// grow to five times what is live before a collection (on a 5,000-app repository with a change of 50 apps,
// collections were about a tenth of the command's CPU), and near it the limit, not GOGC, decides.
const batchGCPercent = 400

// limitBatchMemory sets batchMemory as the process's soft memory limit and batchGCPercent as its GOGC, each
// unless the environment sets it (GOMEMLIMIT, GOGC: the Go runtime reads them; they win) or deps cannot set it
// (tests, which share their process). GOGC is raised only with the limit in place.
func limitBatchMemory(deps *Deps) {
	if deps.SetMemoryLimit == nil || deps.env("GOMEMLIMIT") != "" {
		return
	}
	deps.SetMemoryLimit(batchMemory)
	if deps.SetGCPercent != nil && deps.env("GOGC") == "" {
		deps.SetGCPercent(batchGCPercent)
	}
}

// Collector settings of `render --app`, a process that holds one app's objects (decoded from its worker's
// JSON, at most the 64 MiB output cap of it) only to write them out as YAML: with Go's default GOGC of 100 the
// collector ran about ten times on kube-prometheus-stack (5 MB of YAML) and took ~10% of the command's CPU,
// marking objects that all stay live until written. GOGC 400 lets the heap grow to five times what is live
// (≈ 60 MiB more on that chart) and the soft limit pulls it back to the default's behaviour past 512 MiB, so
// an app near the output cap costs no more memory than before. The render itself runs in the worker, capped
// on its own (internal/render/isolate): newAppRenderer gives it the same GOGC, under a soft limit of half its
// memory cap (on kube-prometheus-stack ≈ 40 CPU-ms less, ≈ 70 MB more RSS).
const (
	renderGCPercent = 400
	renderMemory    = 512 << 20
)

// loosenRenderGC sets renderGCPercent and renderMemory, each unless the environment sets it (GOGC, GOMEMLIMIT:
// the Go runtime reads them; they win) or deps cannot set it (tests, which share their process).
func loosenRenderGC(deps *Deps) {
	if deps.SetGCPercent != nil && deps.env("GOGC") == "" {
		deps.SetGCPercent(renderGCPercent)
	}
	if deps.SetMemoryLimit != nil && deps.env("GOMEMLIMIT") == "" {
		deps.SetMemoryLimit(renderMemory)
	}
}
