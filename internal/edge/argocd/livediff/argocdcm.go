package livediff

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"
)

// DefaultSystem is Argo CD's system-wide diff settings with an empty argocd-cm: the status of every resource is
// ignored (resource.compareoptions ignoreResourceStatusField defaults to "all").
func DefaultSystem() System {
	sys, _ := SystemFromArgoCDCM(nil)
	return sys
}

// LoadArgoCDCM reads an argocd-cm ConfigMap (YAML or JSON; a bare map of its data is accepted too) and returns
// the system-wide diff settings Argo CD derives from it.
func LoadArgoCDCM(path string) (System, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return System{}, err
	}
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		return System{}, fmt.Errorf("%s: not an argocd-cm ConfigMap: %w", path, err)
	}
	data := cm.Data
	if cm.Kind == "" && data == nil {
		if err := yaml.Unmarshal(b, &data); err != nil {
			return System{}, fmt.Errorf("%s: not an argocd-cm ConfigMap nor its data: %w", path, err)
		}
	} else if cm.Kind != "" && cm.Kind != "ConfigMap" {
		return System{}, fmt.Errorf("%s: a %s, not the argocd-cm ConfigMap", path, cm.Kind)
	}
	sys, err := SystemFromArgoCDCM(data)
	if err != nil {
		return System{}, fmt.Errorf("%s: %w", path, err)
	}
	return sys, nil
}

// argocd-cm keys (argo-cd util/settings/settings.go).
const (
	cmResourceCustomizations = "resource.customizations"
	cmResourceCompareOptions = "resource.compareoptions"
	cmAppLabelKey            = "application.instanceLabelKey"
	cmTrackingMethod         = "application.resourceTrackingMethod"
)

// SystemFromArgoCDCM derives the system-wide diff settings from argocd-cm's data as Argo CD's settings manager
// does (argo-cd util/settings/settings.go GetResourceOverrides, appendResourceOverridesFromSplitKeys,
// convertToOverrideKey, GetResourceCompareOptions, addStatusOverrideToGK): the resource.customizations YAML,
// then the resource.customizations.<type>.<group_kind> keys ("all" is "*/*"), then "/status" ignored on every
// kind ("*/*"), on CRDs only, or on none, per ignoreResourceStatusField.
func SystemFromArgoCDCM(data map[string]string) (System, error) {
	overrides := map[string]v1alpha1.ResourceOverride{}
	if v := data[cmResourceCustomizations]; v != "" {
		if err := yaml.Unmarshal([]byte(v), &overrides); err != nil {
			return System{}, fmt.Errorf("%s: %w", cmResourceCustomizations, err)
		}
	}
	for k, v := range data {
		if !strings.HasPrefix(k, cmResourceCustomizations) {
			continue
		}
		parts := strings.SplitN(k, ".", 4)
		if len(parts) < 4 {
			continue
		}
		key, err := overrideKey(parts[3])
		if err != nil {
			return System{}, fmt.Errorf("%s: %w", k, err)
		}
		if key == "all" {
			key = "*/*"
		}
		o := overrides[key]
		switch parts[2] {
		case "health":
			o.HealthLua = v
		case "useOpenLibs":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return System{}, fmt.Errorf("%s: %w", k, err)
			}
			o.UseOpenLibs = b
		case "actions":
			o.Actions = v
		case "ignoreDifferences":
			var d v1alpha1.OverrideIgnoreDiff
			if err := yaml.Unmarshal([]byte(v), &d); err != nil {
				return System{}, fmt.Errorf("%s: %w", k, err)
			}
			o.IgnoreDifferences = d
		case "ignoreResourceUpdates":
			var d v1alpha1.OverrideIgnoreDiff
			if err := yaml.Unmarshal([]byte(v), &d); err != nil {
				return System{}, fmt.Errorf("%s: %w", k, err)
			}
			o.IgnoreResourceUpdates = d
		case "knownTypeFields":
			var f []v1alpha1.KnownTypeField
			if err := yaml.Unmarshal([]byte(v), &f); err != nil {
				return System{}, fmt.Errorf("%s: %w", k, err)
			}
			o.KnownTypeFields = f
		default:
			return System{}, fmt.Errorf("resource customization type %s not supported", parts[2])
		}
		overrides[key] = o
	}

	// Argo CD's defaults (util/settings GetDefaultDiffOptions): status ignored everywhere.
	opts := struct {
		IgnoreAggregatedRoles     bool   `json:"ignoreAggregatedRoles,omitempty"`
		IgnoreResourceStatusField string `json:"ignoreResourceStatusField,omitempty"`
	}{IgnoreResourceStatusField: "all"}
	if v, ok := data[cmResourceCompareOptions]; ok {
		if err := yaml.Unmarshal([]byte(v), &opts); err != nil {
			return System{}, fmt.Errorf("%s: %w", cmResourceCompareOptions, err)
		}
	}
	switch opts.IgnoreResourceStatusField {
	case "none", "off", "false":
	case "crd":
		ignoreStatus(overrides, "apiextensions.k8s.io/CustomResourceDefinition")
	default: // "", "all", and anything unrecognised
		ignoreStatus(overrides, "*/*")
	}
	return System{
		Overrides: overrides, IgnoreAggregatedRoles: opts.IgnoreAggregatedRoles,
		AppLabelKey: data[cmAppLabelKey], TrackingMethod: data[cmTrackingMethod],
	}, nil
}

func overrideKey(groupKind string) (string, error) {
	parts := strings.Split(groupKind, "_")
	switch {
	case len(parts) == 2:
		return parts[0] + "/" + parts[1], nil
	case len(parts) == 1 && groupKind != "":
		return groupKind, nil
	}
	return "", fmt.Errorf("group kind should be in format `resource.customizations.<type>.<group_kind>` or `resource.customizations.<type>.<kind>`, got group kind: '%s'", groupKind)
}

func ignoreStatus(overrides map[string]v1alpha1.ResourceOverride, groupKind string) {
	o := overrides[groupKind]
	o.IgnoreDifferences.JSONPointers = append(o.IgnoreDifferences.JSONPointers, "/status")
	overrides[groupKind] = o
}
