package preview

// drop releases the manifests of app key's renders once pair has diffed them (when nothing reads them after, as
// the live comparison would), so that the diffs of a large change do not pile up beside every render it made:
// what the report keeps of an app is its diff. The outcomes stay, with what the rules read (files, verdicts).
func (p *pipeline) drop(key string) {
	if !p.dropRenders {
		return
	}
	for _, out := range []*outcomes{p.baseOut, p.headOut} {
		if o := out.peek(key); o != nil {
			o.objs = nil
		}
	}
}
