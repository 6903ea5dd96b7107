package diff

import (
	"encoding/base64"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Markers that replace Secret values.
const (
	MarkUnchanged = "<unchanged>"
	MarkPrevious  = "<previous value>"
	MarkChanged   = "<changed>"
	MarkAdded     = "<added>"
	MarkRemoved   = "<removed>"
)

// lastApplied is the annotation kubectl (and client-side apply) stores the applied object in, data included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// SecretKey is how one key of a Secret changed; the value itself is never kept.
type SecretKey struct {
	// Key is the field path, e.g. "data.password" or "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration".
	Key    string `json:"key"`
	Change string `json:"change"` // added, removed, changed, unchanged
}

// IsSecret reports a core/v1 Secret.
func IsSecret(obj *unstructured.Unstructured) bool {
	if obj == nil {
		return false
	}
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// MaskSecretPair returns copies of a base and head Secret (either may be nil) whose values are replaced by
// markers, and the per-key changes. Objects that are not Secrets are returned as they are.
func MaskSecretPair(base, head *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured, []SecretKey) {
	if !IsSecret(base) && !IsSecret(head) {
		return base, head, nil
	}
	var bData, hData map[string]string
	if base != nil {
		base = base.DeepCopy()
		bData = secretValues(base)
	}
	if head != nil {
		head = head.DeepCopy()
		hData = secretValues(head)
	}
	keys := map[string]bool{}
	for k := range bData {
		keys[k] = true
	}
	for k := range hData {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)

	bMasked, hMasked := map[string]any{}, map[string]any{}
	var changes []SecretKey
	for _, k := range names {
		bv, inB := bData[k]
		hv, inH := hData[k]
		change := classify(inB, inH, bv == hv)
		changes = append(changes, SecretKey{Key: "data." + k, Change: change})
		if inB {
			bMasked[k] = baseMarker(change)
		}
		if inH {
			hMasked[k] = headMarker(change)
		}
	}
	if base != nil {
		setMasked(base, bMasked)
	}
	if head != nil {
		setMasked(head, hMasked)
	}

	// The last-applied annotation embeds the whole Secret: mask it as one value.
	bLA, inB := annotation(base, lastApplied)
	hLA, inH := annotation(head, lastApplied)
	if inB || inH {
		change := classify(inB, inH, bLA == hLA)
		changes = append(changes, SecretKey{Key: "metadata.annotations." + lastApplied, Change: change})
		if inB {
			setAnnotation(base, lastApplied, baseMarker(change))
		}
		if inH {
			setAnnotation(head, lastApplied, headMarker(change))
		}
	}
	return base, head, changes
}

func classify(inBase, inHead, equal bool) string {
	switch {
	case inBase && inHead && equal:
		return "unchanged"
	case inBase && inHead:
		return "changed"
	case inHead:
		return "added"
	default:
		return "removed"
	}
}

func baseMarker(change string) string {
	switch change {
	case "unchanged":
		return MarkUnchanged
	case "changed":
		return MarkPrevious
	default:
		return MarkRemoved
	}
}

func headMarker(change string) string {
	switch change {
	case "unchanged":
		return MarkUnchanged
	case "changed":
		return MarkChanged
	default:
		return MarkAdded
	}
}

// secretValues returns the decoded values of a Secret's data and stringData (stringData wins, as on the API
// server; gitops-engine pkg/diff/diff.go NormalizeSecret folds it the same way), keyed by data key.
func secretValues(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	if data, ok := obj.Object["data"].(map[string]any); ok {
		for k, v := range data {
			s, isStr := v.(string)
			if !isStr {
				out[k] = fmt.Sprintf("%T:%v", v, v)
				continue
			}
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
				out[k] = string(dec)
			} else {
				out[k] = "invalid-base64:" + s
			}
		}
	}
	if sd, ok := obj.Object["stringData"].(map[string]any); ok {
		for k, v := range sd {
			if s, isStr := v.(string); isStr {
				out[k] = s
			} else {
				out[k] = fmt.Sprintf("%T:%v", v, v)
			}
		}
	}
	return out
}

func setMasked(obj *unstructured.Unstructured, masked map[string]any) {
	delete(obj.Object, "stringData")
	if len(masked) == 0 {
		if _, had := obj.Object["data"]; had {
			obj.Object["data"] = map[string]any{}
		}
		return
	}
	obj.Object["data"] = masked
}

func annotation(obj *unstructured.Unstructured, key string) (string, bool) {
	if obj == nil {
		return "", false
	}
	v, ok := obj.GetAnnotations()[key]
	return v, ok
}

func setAnnotation(obj *unstructured.Unstructured, key, value string) {
	a := obj.GetAnnotations()
	a[key] = value
	obj.SetAnnotations(a)
}
