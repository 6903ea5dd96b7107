package cli

// batchMemory is the soft memory limit of the Go runtime in the commands that go once over a repository (diff,
// plan, render --all). Without it the garbage collector lets the heap grow to twice what is live before it
// collects: on a 5,000-app repository with a change of 500 apps, about 95 MiB live made 185 MiB of anonymous
// memory, and with the binary's code (90–110 MiB resident) over 300 MiB. Under the limit the collector runs
// more often once the heap nears it, and only then: a change of 500 apps among 500 stays well under it.
// Render workers are other processes, capped on their own (internal/render/isolate).
const batchMemory = 160 << 20

// limitBatchMemory sets batchMemory as the process's soft memory limit, unless GOMEMLIMIT sets one (the Go
// runtime reads it; it wins) or deps cannot set it (tests, which share their process).
func limitBatchMemory(deps *Deps) {
	if deps.SetMemoryLimit == nil || deps.Getenv != nil && deps.Getenv("GOMEMLIMIT") != "" {
		return
	}
	deps.SetMemoryLimit(batchMemory)
}
