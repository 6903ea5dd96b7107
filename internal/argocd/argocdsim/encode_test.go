package argocdsim

import (
	"encoding/json"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWithResourceVersion: the stream reuses a commit's encoding; it must be byte for byte what encoding the
// object with its resourceVersion gives.
func TestWithResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta metav1.ObjectMeta
		want bool
	}{
		{"minimal", metav1.ObjectMeta{Name: "a", UID: "u-1"}, true},
		{"full", metav1.ObjectMeta{Name: "a", Namespace: "argocd", UID: "u-1", Generation: 3,
			Labels: map[string]string{"uid": `"uid":"x"`}, Annotations: map[string]string{"k": "v"},
			OwnerReferences: []metav1.OwnerReference{{UID: "owner", Name: "set"}}}, true},
		{"no uid", metav1.ObjectMeta{Name: "a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &v1alpha1.Application{ObjectMeta: tc.meta}
			a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example/x.git", Path: "p"}
			without, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			a.ResourceVersion = "42"
			want, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			got := withResourceVersion(without, "42")
			if !tc.want {
				if got != nil {
					t.Fatalf("got %s, want nil (no place to put it)", got)
				}
				return
			}
			if string(got) != string(want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}
