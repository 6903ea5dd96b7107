package render

import (
	"errors"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Tracking keys, as in argo-cd common/common.go.
const (
	annotationTrackingID       = "argocd.argoproj.io/tracking-id"
	annotationInstallationID   = "argocd.argoproj.io/installation-id"
	labelLegacyApplicationName = "applications.argoproj.io/app-name"
	labelMaxLength             = 63
)

var okEndPattern = regexp.MustCompile("[a-zA-Z0-9]$")

// setAppInstance stamps Argo CD's tracking metadata on obj, exactly as argo-cd util/argo/resource_tracking.go
// SetAppInstance does (with util/kube/kube.go SetAppInstanceLabel/SetAppInstanceAnnotation). The caller skips CRDs,
// as reposerver/repository/repository.go GenerateManifests does.
func setAppInstance(obj *unstructured.Unstructured, key, appName, namespace, method, installationID string) error {
	setAnnotation := func() error {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		gvk := obj.GroupVersionKind()
		if installationID != "" {
			if err := setStringMapEntry(obj, "annotations", annotationInstallationID, installationID); err != nil {
				return err
			}
		} else if err := removeStringMapEntry(obj, "annotations", annotationInstallationID); err != nil {
			return err
		}
		value := fmt.Sprintf("%s:%s/%s:%s/%s", appName, gvk.Group, gvk.Kind, ns, obj.GetName())
		return setStringMapEntry(obj, "annotations", annotationTrackingID, value)
	}
	switch method {
	case "label":
		return setAppInstanceLabel(obj, key, appName)
	case "annotation+label":
		if err := setAnnotation(); err != nil {
			return err
		}
		val := appName
		if len(val) > labelMaxLength {
			val = val[:labelMaxLength]
			// Prevent errors if the truncated name ends in a special character (argo-cd #18237).
			for !okEndPattern.MatchString(val) {
				if len(val) <= 1 {
					return errors.New("failed to set app instance label: unable to truncate label to not end with a special character")
				}
				val = val[:len(val)-1]
			}
		}
		return setAppInstanceLabel(obj, key, val)
	default: // "annotation" and anything Argo CD does not know
		return setAnnotation()
	}
}

// setAppInstanceLabel mirrors argo-cd util/kube/kube.go SetAppInstanceLabel, including the legacy label's
// propagation to pod templates.
func setAppInstanceLabel(obj *unstructured.Unstructured, key, val string) error {
	if err := setStringMapEntry(obj, "labels", key, val); err != nil {
		return fmt.Errorf("failed to set app instance label: %w", err)
	}
	if key != labelLegacyApplicationName {
		return nil
	}
	gvk := schema.FromAPIVersionAndKind(obj.GetAPIVersion(), obj.GetKind())
	propagate := false
	switch gvk.Group {
	case "apps", "extensions":
		switch gvk.Kind {
		case "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet":
			propagate = true
		}
	case "batch":
		propagate = gvk.Kind == "Job"
	}
	if !propagate {
		return nil
	}
	content := obj.UnstructuredContent()
	templateLabels, ok, err := unstructured.NestedMap(content, "spec", "template", "metadata", "labels")
	if err != nil {
		return err
	}
	if !ok || templateLabels == nil {
		templateLabels = map[string]any{}
	}
	templateLabels[key] = val
	if err := unstructured.SetNestedMap(content, templateLabels, "spec", "template", "metadata", "labels"); err != nil {
		return err
	}
	switch obj.GetAPIVersion() {
	case "apps/v1beta1", "extensions/v1beta1":
		selector, _, err := unstructured.NestedMap(content, "spec", "selector")
		if err != nil {
			return err
		}
		if len(selector) == 0 {
			delete(templateLabels, key)
			return unstructured.SetNestedMap(content, templateLabels, "spec", "selector", "matchLabels")
		}
	}
	return nil
}

// nestedStringMap reads metadata.<field> like argo-cd util/kube/kube.go nestedNullableStringMap: a null map is
// empty, a map with a non-string value is an error.
func nestedStringMap(obj *unstructured.Unstructured, field string) (map[string]string, error) {
	var m map[string]string
	val, found, err := unstructured.NestedFieldNoCopy(obj.Object, "metadata", field)
	if err == nil && found && val != nil {
		m, _, err = unstructured.NestedStringMap(obj.Object, "metadata", field)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: metadata.%s: %w", obj.GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), field, err)
	}
	return m, nil
}

func setStringMapEntry(obj *unstructured.Unstructured, field, key, val string) error {
	m, err := nestedStringMap(obj, field)
	if err != nil {
		return err
	}
	if m == nil {
		m = map[string]string{}
	}
	m[key] = val
	if field == "labels" {
		obj.SetLabels(m)
	} else {
		obj.SetAnnotations(m)
	}
	return nil
}

func removeStringMapEntry(obj *unstructured.Unstructured, field, key string) error {
	m, err := nestedStringMap(obj, field)
	if err != nil || m == nil {
		return err
	}
	if _, ok := m[key]; !ok {
		return nil
	}
	delete(m, key)
	if len(m) == 0 {
		m = nil
	}
	if field == "labels" {
		obj.SetLabels(m)
	} else {
		obj.SetAnnotations(m)
	}
	return nil
}
