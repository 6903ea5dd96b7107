package preview

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/fleetwave/fleetwave/internal/discover"
	"github.com/fleetwave/fleetwave/internal/render"
)

// A bomb already on the default branch (a CPU-bound template, an allocation bomb) is refused at its cap when the
// base renders; a change that touches its app without touching what it renders from — an annotation of its
// Application, a label — would render the very same inputs again at the head and wait for the same cap a second
// time: every such change would cost two caps for that app. The head's render is not run when its inputs are the
// base's: the same Application spec (what a render reads of it: sources, destination, project) and no changed
// file within the reach of the base's render (discover.Reach, the superset of what it can read). The base's
// refusal stands for the head, saying so. When the inputs differ (the change edits the bomb, or fixes it), the
// head is rendered: its own content gets its own cap.

// capRules are the refusals that depend only on a render's inputs: the same inputs are refused again, after
// as long.
var capRules = []string{"time-limit", "cpu-limit", "memory-limit", "stack-limit", "output-size", "document-count"}

// capRefusal returns the rule of a render refused at one of its caps ("" for none).
func capRefusal(o *outcome) string {
	if o == nil || o.err == nil {
		return ""
	}
	msg := o.err.Error()
	for _, r := range capRules {
		if strings.Contains(msg, "refused ("+r+")") {
			return r
		}
	}
	return ""
}

// repeatRefusal returns the head outcome of app head when its base render bo was refused at a cap and the head
// would render the same inputs; nil when the head must be rendered.
func (p *pipeline) repeatRefusal(base, head *discover.App, bo *outcome) *outcome {
	rule := capRefusal(bo)
	if rule == "" || !sameRenderInputs(p, base, head) {
		return nil
	}
	var re *render.Error
	detail := bo.err.Error()
	if errors.As(bo.err, &re) {
		detail = re.Err.Error()
	}
	return &outcome{err: &render.Error{App: head.App.Name, Path: render.SourcesLabel(head.App),
		Err: fmt.Errorf("%s at the base; the change leaves everything it renders from as it was, so it was not rendered again: %w", detail, errRepeated)}}
}

// errRepeated marks a head refusal carried over from the base (repeatRefusal).
var errRepeated = errors.New("one cap per app and change")

// sameRenderInputs: the head app renders exactly what the base app rendered, but for the revision.
func sameRenderInputs(p *pipeline, base, head *discover.App) bool {
	b, h := base.App, head.App
	if b.Name != h.Name || b.Namespace != h.Namespace || b.Spec.Project != h.Spec.Project ||
		!equality.Semantic.DeepEqual(b.Spec.Destination, h.Spec.Destination) ||
		!equality.Semantic.DeepEqual(b.Spec.GetSources(), h.Spec.GetSources()) {
		return false
	}
	reach := p.base.inv.Reach(base)
	if reach.Unbounded() {
		return false
	}
	return !reach.TouchesAny(discover.NewPaths(p.changed))
}
