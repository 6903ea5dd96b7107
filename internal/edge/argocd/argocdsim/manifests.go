package argocdsim

import (
	"encoding/json"
	"fmt"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// DefaultManifests renders a ConfigMap and a Deployment per app whose content depends on the revision, so live
// and target differ until the app is synced.
func DefaultManifests(app *v1alpha1.Application, revision string) ([]string, error) {
	ns := app.Spec.Destination.Namespace
	short := revision
	if len(short) > 7 {
		short = short[:7]
	}
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": app.Name + "-config", "namespace": ns},
		"data":     map[string]any{"revision": revision},
	}
	dep := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": app.Name, "namespace": ns},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": map[string]any{"app": app.Name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": app.Name}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": fmt.Sprintf("registry.example/%s:%s", app.Name, short),
				}}},
			},
		},
	}
	out := make([]string, 0, 2)
	for _, o := range []any{cm, dep} {
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", app.Name, err)
		}
		out = append(out, string(b))
	}
	return out, nil
}

// managedResourcesLocked builds GET .../managed-resources: target at the resolved revision, live at the applied
// one, both JSON-encoded strings ("null" before the first sync, as the real server answers).
func (s *Server) managedResourcesLocked(st *appState) ([]v1alpha1.ResourceDiff, error) {
	target, err := s.resolveAppLocked(st.app)
	if err != nil {
		return nil, err
	}
	tobjs := s.objectsLocked(st.app, target)
	live := map[string]string{}
	for _, o := range s.objectsLocked(st.app, st.applied) {
		live[o.group+"/"+o.kind+"/"+o.namespace+"/"+o.name] = o.json
	}
	out := make([]v1alpha1.ResourceDiff, 0, len(tobjs))
	for _, o := range tobjs {
		l, ok := live[o.group+"/"+o.kind+"/"+o.namespace+"/"+o.name]
		if !ok {
			l = "null"
		}
		out = append(out, v1alpha1.ResourceDiff{
			Group: o.group, Kind: o.kind, Namespace: o.namespace, Name: o.name,
			TargetState: o.json, LiveState: l, NormalizedLiveState: l, PredictedLiveState: o.json,
			Modified: l != o.json,
		})
	}
	return out, nil
}
