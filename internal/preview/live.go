package preview

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/kit/text"
	"github.com/fleetwave/fleetwave/internal/report"
)

// live compares the affected apps with their live state, each app in its own instance: one CompareLive per
// instance that compares (an instance without a LiveComparer leaves its apps uncompared). A named instance that
// cannot be read leaves its apps uncompared with a note; the instance "" failing fails the run, as it did before
// instances (the App then previews without the live state).
func (p *pipeline) live(ctx context.Context, rep *report.Report) error {
	apps := map[string][]LiveApp{}
	idx := map[string][]int{}
	var names []string
	for i := range rep.Apps {
		k := rep.Apps[i].Key()
		h, inHead := p.head.inv.Get(k)
		ho := p.headOut.peek(k)
		if !inHead || ho == nil || ho.reused || ho.err != nil {
			continue
		}
		la := LiveApp{App: h.App, Head: ho.objs, HeadNamespace: h.App.Spec.Destination.Namespace, RepoURLs: p.repoURLs}
		if b, inBase := p.base.inv.Get(k); inBase {
			la.BaseNamespace = b.App.Spec.Destination.Namespace
			if bo := p.baseOut.peek(k); bo != nil && bo.err == nil {
				la.Base = append([]*unstructured.Unstructured{}, bo.objs...) // non-nil: rendered, maybe empty
			}
		}
		if h.InstanceErr != nil || p.instances.of(h).argocd.Live == nil {
			continue
		}
		if _, seen := apps[h.Instance]; !seen {
			names = append(names, h.Instance)
		}
		apps[h.Instance] = append(apps[h.Instance], la)
		idx[h.Instance] = append(idx[h.Instance], i)
	}
	slices.Sort(names)
	var missing []string
	for _, name := range names {
		lives, err := p.instances[name].argocd.Live.CompareLive(ctx, apps[name])
		switch {
		case err != nil && name == "":
			return err
		case err != nil:
			// One instance that cannot be read leaves its apps uncompared, not the others'.
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("live state not compared on Argo CD instance %s: %s", name, text.FirstLine(err.Error())))
			continue
		}
		for j, l := range lives {
			if j >= len(idx[name]) {
				break
			}
			rep.Apps[idx[name][j]].Live = l
			if l != nil && l.Missing {
				missing = append(missing, rep.Apps[idx[name][j]].Key())
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		rep.Notes = append(rep.Notes, fmt.Sprintf("not in Argo CD, live state not compared: %s", strings.Join(missing, ", ")))
	}
	return nil
}
