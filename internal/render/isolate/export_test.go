package isolate

import "time"

// TraceRenders has p call trace, with the parent's clock, when an app's render timer is armed (its request is
// sent to a worker: "armed") and when it fires ("deadline"). Call it before the first render.
func TraceRenders(p *Pool, trace func(app, event string, at time.Time)) { p.trace = trace }

// KeepWorkersAtDeadline has p leave a worker running past its render's deadline: the render then ends only when
// the worker does (its RLIMIT_CPU). Call it before the first render.
func KeepWorkersAtDeadline(p *Pool) { p.noDeadlineKill = true }

// WorkerLimits returns what each of p's running workers said of its limits when it started.
func WorkerLimits(p *Pool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for w := range p.all {
		out = append(out, w.limits)
	}
	return out
}
