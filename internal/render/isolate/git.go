package isolate

import (
	"context"
	"errors"

	"github.com/fleetwave/fleetwave/internal/edge/gitfetch"
	"github.com/fleetwave/fleetwave/internal/render"
)

// fetchGit answers a worker's request for a git revision with the pool's fetcher (render.Options.Git). A
// repository that is not allowed is answered as external (render.ErrExternalSource), the sentinel the wire keeps.
func (p *Pool) fetchGit(ctx context.Context, fc *fetchCall) *fetchReply {
	g := p.opts.Render.Git
	if g == nil {
		return &fetchReply{Err: toWire(errors.New("no git repositories are configured"))}
	}
	tree, err := g.Checkout(ctx, fc.RepoURL, fc.Revision, fc.TagPrefix)
	if errors.Is(err, gitfetch.ErrNotAllowed) {
		err = render.NotAllowedError(err)
	}
	return &fetchReply{Tree: tree, Err: toWire(err)}
}
