package contract

import (
	"errors"
	"slices"
	"testing"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
)

// generateAppSet checks POST /api/v1/applicationsets/generate, the way fleetwave evaluates the generators it
// cannot run offline: Argo CD answers with the Applications the set would make, in both template syntaxes,
// and creates nothing.
func generateAppSet(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	held, err := s.c.GetApplication(ctx, s.ManualApp, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		goTemplate bool
		appName    string
	}{
		{"go-template", true, "contract-gen-{{.cluster}}"},
		{"legacy-template", false, "contract-gen-{{cluster}}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := &v1alpha1.ApplicationSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet"},
				ObjectMeta: metav1.ObjectMeta{Name: "contract-generate", Namespace: held.Namespace},
				Spec: v1alpha1.ApplicationSetSpec{
					GoTemplate: c.goTemplate,
					Generators: []v1alpha1.ApplicationSetGenerator{{List: &v1alpha1.ListGenerator{Elements: []apiextensionsv1.JSON{
						{Raw: []byte(`{"cluster":"one"}`)}, {Raw: []byte(`{"cluster":"two"}`)},
					}}}},
					Template: v1alpha1.ApplicationSetTemplate{
						ApplicationSetTemplateMeta: v1alpha1.ApplicationSetTemplateMeta{Name: c.appName},
						Spec: v1alpha1.ApplicationSpec{
							Project:     held.Spec.Project,
							Source:      held.Spec.Source.DeepCopy(),
							Destination: held.Spec.Destination,
						},
					},
				},
			}
			apps, err := s.c.GenerateApplicationSet(ctx, set)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range apps {
				names = append(names, a.Name)
				if a.Spec.Source == nil || a.Spec.Source.RepoURL != held.Spec.Source.RepoURL {
					t.Errorf("generated app %s lost the template's source: %+v", a.Name, a.Spec.Source)
				}
			}
			slices.Sort(names)
			if want := []string{"contract-gen-one", "contract-gen-two"}; !slices.Equal(names, want) {
				t.Fatalf("generated %v, want %v", names, want)
			}
			// Argo CD answers PermissionDenied for an app that does not exist, as for one the caller may not see.
			if _, err := s.c.GetApplication(ctx, held.Namespace+"/contract-gen-one", ""); !errors.Is(err, argocd.ErrNotFound) && !errors.Is(err, argocd.ErrPermissionDenied) {
				t.Errorf("generate created an application (get: %v)", err)
			}
		})
	}
}
