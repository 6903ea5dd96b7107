package helmtemplate

import (
	"path"
	"sort"
	"strconv"
	"strings"
)

// Sorter is releaseutil.SortManifests of both SDKs (helm.sh/helm/v3@v3.19.4 pkg/releaseutil/manifest_sorter.go
// and kind_sorter.go; helm.sh/helm/v4@v4.3.1 pkg/release/v1/util/ the same files), with what differs between
// them supplied by the caller. Its results are the SDK's, field for field, in neutral types; it is faster on
// large charts: the documents are split without a regexp and their heads read from blockyaml's decoding
// instead of sigs.k8s.io/yaml's YAML-to-JSON-to-struct round trip (see fastHead), which is asked only when in
// doubt.
type Sorter struct {
	// Split is the SDK's SplitManifests: SplitManifests (Helm 3) or SplitManifests4 (helm 4).
	Split func(bigFile string) []string
	// Unmarshal is what the SDK calls on a document, sigs.k8s.io/yaml.Unmarshal(doc, &head) into its own
	// SimpleHead (whose type name its errors show), converted.
	Unmarshal func(doc []byte) (SimpleHead, error)
	// ParseError wraps Unmarshal's error as the SDK does, with the file's path.
	ParseError func(path string, err error) error
	// UnknownHook logs a skipped hook with an unknown event as the SDK does.
	UnknownHook func(hookTypes string)
	// Order is the SDK's InstallOrder.
	Order []string
}

// Manifest is the SDK's Manifest: a document that is not a hook.
type Manifest struct {
	Name    string
	Content string
	Head    *SimpleHead
}

// Hook is what SortManifests sets of the SDK's release.Hook (the SDK's HookEvent, HookDeletePolicy and
// HookOutputLogPolicy are strings).
type Hook struct {
	Name, Kind, Path, Manifest        string
	Events                            []string
	Weight                            int
	DeletePolicies, OutputLogPolicies []string
}

// The annotations manifest_sorter.go reads (release/hook.go's HookAnnotation, HookWeightAnnotation,
// HookDeleteAnnotation and HookOutputLogAnnotation, the same in both SDKs).
const (
	hookAnnotation          = "helm.sh/hook"
	hookWeightAnnotation    = "helm.sh/hook-weight"
	hookDeleteAnnotation    = "helm.sh/hook-delete-policy"
	hookOutputLogAnnotation = "helm.sh/hook-output-log-policy"
)

// eventOf is manifest_sorter.go's events: a hook annotation's event name to the SDK's HookEvent.
func eventOf(name string) (string, bool) {
	switch name {
	case "pre-install", "post-install", "pre-delete", "post-delete", "pre-upgrade", "post-upgrade",
		"pre-rollback", "post-rollback", "test":
		return name, true
	case "test-success": // Helm 2's name, kept by both SDKs
		return "test", true
	}
	return "", false
}

// SortManifests is the SDK's SortManifests(files, nil, Order): the documents of every file but partials ("_"
// prefix) and blank files, in sorted path order, into hooks and manifests, each sorted (stably) by kind in
// Order. On an error, like the SDK, it returns what it had sorted so far, unsorted by kind.
func (s *Sorter) SortManifests(files map[string]string) ([]*Hook, []Manifest, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var hooks []*Hook
	var generic []Manifest
	for _, p := range paths {
		content := files[p]
		if strings.HasPrefix(path.Base(p), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		for _, m := range s.Split(content) {
			entry, err := s.head(m)
			if err != nil {
				return hooks, generic, s.ParseError(p, err)
			}
			var annotations map[string]string
			if entry.Metadata != nil {
				annotations = entry.Metadata.Annotations
			}
			hookTypes, ok := annotations[hookAnnotation]
			if !ok { // hasAnyAnnotation, then the hook annotation
				generic = append(generic, Manifest{Name: p, Content: m, Head: &entry})
				continue
			}
			h := &Hook{
				Name:              entry.Metadata.Name,
				Kind:              entry.Kind,
				Path:              p,
				Manifest:          m,
				Events:            []string{},
				Weight:            hookWeight(annotations[hookWeightAnnotation]),
				DeletePolicies:    []string{},
				OutputLogPolicies: []string{},
			}
			unknown := false
			for _, t := range strings.Split(hookTypes, ",") {
				e, ok := eventOf(strings.ToLower(strings.TrimSpace(t)))
				if !ok {
					unknown = true
					break
				}
				h.Events = append(h.Events, e)
			}
			if unknown {
				s.UnknownHook(hookTypes)
				continue
			}
			hooks = append(hooks, h)
			h.DeletePolicies = annotationValues(annotations, hookDeleteAnnotation, h.DeletePolicies)
			h.OutputLogPolicies = annotationValues(annotations, hookOutputLogAnnotation, h.OutputLogPolicies)
		}
	}

	rank := newKindRank(s.Order)
	sort.SliceStable(hooks, func(i, j int) bool { return rank.less(hooks[i].Kind, hooks[j].Kind) })
	sort.SliceStable(generic, func(i, j int) bool { return rank.less(generic[i].Head.Kind, generic[j].Head.Kind) })
	return hooks, generic, nil
}

// head is the SDK's yaml.Unmarshal(doc, &head), from fastHead when it answers.
func (s *Sorter) head(doc string) (SimpleHead, error) {
	if h, ok := fastHead(doc); ok {
		return h, nil
	}
	return s.Unmarshal([]byte(doc))
}

// hookWeight is calculateHookWeight: the weight annotation as an int, 0 when it is not one.
func hookWeight(s string) int {
	w, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return w
}

// annotationValues is operateAnnotationValues: the annotation's comma-separated values, trimmed and lower-cased,
// appended to out when the annotation is present.
func annotationValues(annotations map[string]string, name string, out []string) []string {
	v, ok := annotations[name]
	if !ok {
		return out
	}
	for _, p := range strings.Split(v, ",") {
		out = append(out, strings.ToLower(strings.TrimSpace(p)))
	}
	return out
}

// kindRank is kind_sorter.go lessByKind's ordering map, built once instead of on every comparison: a kind's
// last index in the order.
type kindRank map[string]int

func newKindRank(order []string) kindRank {
	r := make(kindRank, len(order))
	for i, k := range order {
		r[k] = i
	}
	return r
}

// less is lessByKind: known kinds by their index, unknown kinds after them, alphabetically among themselves.
func (r kindRank) less(a, b string) bool {
	first, aok := r[a]
	second, bok := r[b]
	switch {
	case !aok && !bok:
		return a < b
	case !aok:
		return false
	case !bok:
		return true
	}
	return first < second
}

// StringsAs converts a list of strings to one of a string type (an SDK's HookEvent, HookDeletePolicy or
// HookOutputLogPolicy), an empty list to an empty one, not nil, as the SDK's hooks hold them.
func StringsAs[T ~string](in []string) []T {
	out := make([]T, len(in))
	for i, s := range in {
		out[i] = T(s)
	}
	return out
}
