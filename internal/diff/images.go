package diff

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ImageChange is a container whose image differs between base and head: the headline a reviewer looks for
// first ("api: ghcr.io/acme/api:1.2.0 → 1.3.0"). From is empty for a container the head adds, To for one it
// removes.
type ImageChange struct {
	// Container is the container's name ("init:" prefixed for init containers, "ephemeral:" for ephemeral ones).
	Container string `json:"container"`
	From      string `json:"from,omitempty"`
	To        string `json:"to,omitempty"`
}

// containerLists are the pod-spec fields holding containers, wherever a pod template sits in the object
// (Deployment, StatefulSet, CronJob's jobTemplate, Pod, custom resources embedding a pod spec).
var containerLists = map[string]string{"containers": "", "initContainers": "init:", "ephemeralContainers": "ephemeral:"}

// imageChanges lists the containers of one resource whose image differs between base and head (either may be
// nil), in container order.
func imageChanges(base, head *unstructured.Unstructured) []ImageChange {
	b, h := images(base), images(head)
	var out []ImageChange
	for name, to := range h {
		if from := b[name]; from != to {
			out = append(out, ImageChange{Container: name, From: from, To: to})
		}
	}
	for name, from := range b {
		if _, ok := h[name]; !ok {
			out = append(out, ImageChange{Container: name, From: from})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Container < out[j].Container })
	return out
}

// images maps each container of obj (found under any containers/initContainers/ephemeralContainers list with
// name and image) to its image.
func images(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	if obj == nil {
		return out
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 32 { // rendered objects are bounded, but a pod spec is never this deep
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for k, child := range t {
				if prefix, ok := containerLists[k]; ok {
					if list, ok := child.([]any); ok {
						for _, c := range list {
							m, _ := c.(map[string]any)
							name, _ := m["name"].(string)
							image, _ := m["image"].(string)
							if name != "" && image != "" {
								out[prefix+name] = image
							}
						}
						continue
					}
				}
				walk(child, depth+1)
			}
		case []any:
			for _, child := range t {
				walk(child, depth+1)
			}
		}
	}
	walk(obj.Object, 0)
	return out
}
