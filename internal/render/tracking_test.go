package render

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/argo"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSetAppInstanceMatchesArgoCD runs fleetwave's tracking and Argo CD's own (util/argo/resource_tracking.go)
// on the same objects and requires identical results, for every tracking method and edge case.
func TestSetAppInstanceMatchesArgoCD(t *testing.T) {
	objects := []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"other","labels":{"a":"b"},"annotations":{"argocd.argoproj.io/installation-id":"old"}}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"app":"x"}}}}}`,
		`{"apiVersion":"extensions/v1beta1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"app":"x"}}}}}`,
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","labels":null},"spec":{"template":{}}}`,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"cr"}}`,
	}
	appNames := []string{"guestbook", "team-a_guestbook", "a-very-long-application-name-that-goes-beyond-the-label-limit-of-63-chars"}
	keys := []string{"app.kubernetes.io/instance", "applications.argoproj.io/app-name"}
	methods := []string{"annotation", "label", "annotation+label", ""}
	ids := []string{"", "install-1"}
	rt := argo.NewResourceTracking()
	for _, o := range objects {
		for _, name := range appNames {
			for _, key := range keys {
				for _, m := range methods {
					for _, id := range ids {
						t.Run(fmt.Sprintf("%s/%s/%s/%s/%s", o[:40], name[:8], key, m, id), func(t *testing.T) {
							ours, theirs := parse(t, o), parse(t, o)
							errOurs := setAppInstance(ours, key, name, "dest-ns", m, id)
							errTheirs := rt.SetAppInstance(theirs, key, name, "dest-ns", v1alpha1.TrackingMethod(m), id)
							if (errOurs == nil) != (errTheirs == nil) {
								t.Fatalf("errors differ: ours %v, Argo CD %v", errOurs, errTheirs)
							}
							if !reflect.DeepEqual(ours.Object, theirs.Object) {
								a, _ := json.Marshal(ours.Object)
								b, _ := json.Marshal(theirs.Object)
								t.Fatalf("ours   %s\nArgo CD %s", a, b)
							}
						})
					}
				}
			}
		}
	}
}

func parse(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
