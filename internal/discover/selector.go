package discover

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// matchSelector evaluates a Kubernetes label selector over a flat string map. A nil or empty selector matches
// everything. Values are not validated as label values: Argo CD's generator post-selector uses its own copy of
// LabelSelectorAsSelector without that restriction so that it can match on cluster URLs
// (applicationset/utils/selector.go).
func matchSelector(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
	if sel == nil {
		return true, nil
	}
	for k, v := range sel.MatchLabels {
		if got, ok := set[k]; !ok || got != v {
			return false, nil
		}
	}
	for _, r := range sel.MatchExpressions {
		got, ok := set[r.Key]
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			if !ok || !slices.Contains(r.Values, got) {
				return false, nil
			}
		case metav1.LabelSelectorOpNotIn:
			if ok && slices.Contains(r.Values, got) {
				return false, nil
			}
		case metav1.LabelSelectorOpExists:
			if !ok {
				return false, nil
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if ok {
				return false, nil
			}
		default:
			return false, fmt.Errorf("label selector: unknown operator %q", r.Operator)
		}
	}
	return true, nil
}

func selectorEmpty(sel *metav1.LabelSelector) bool {
	return sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0)
}
