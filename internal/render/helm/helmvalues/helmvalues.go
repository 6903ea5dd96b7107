// Package helmvalues holds what every renderer of a Helm chart does to a values map, once, for Helm 3, helm 4
// and Kustomize's helmCharts alike: merge value files in order as helm does, and copy values so that renders
// running at the same time never share one.
package helmvalues

// Merge is helm's pkg/cli/values/options.go mergeMaps (unexported there, helm.sh/helm/v3@v3.19.4 and
// helm.sh/helm/v4): b's keys over a's, maps merged key by key at every depth, anything else replaced whole.
// Neither a nor b is modified; the result shares their leaves.
func Merge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]any); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]any); ok {
					out[k] = Merge(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// Copy is a deep copy of the maps and lists of a values tree (what rendering may rewrite: chartutil's
// coalescing writes into maps); other values (strings, numbers, booleans) are immutable and shared.
func Copy(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return Copy(t)
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = copyValue(x)
		}
		return s
	default:
		return v
	}
}
