package preview

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetwave/fleetwave/internal/report"
)

func (p *pipeline) live(ctx context.Context, lc LiveComparer, rep *report.Report) error {
	var apps []LiveApp
	var idx []int
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
		apps = append(apps, la)
		idx = append(idx, i)
	}
	if len(apps) == 0 {
		return nil
	}
	lives, err := lc.CompareLive(ctx, apps)
	if err != nil {
		return err
	}
	var missing []string
	for j, l := range lives {
		if j >= len(idx) {
			break
		}
		rep.Apps[idx[j]].Live = l
		if l != nil && l.Missing {
			missing = append(missing, rep.Apps[idx[j]].Key())
		}
	}
	if len(missing) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("not in Argo CD, live state not compared: %s", strings.Join(missing, ", ")))
	}
	return nil
}
