package argocdsim

import (
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/health"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// CorpusApps are the names AddCorpus gives its apps, in order.
var CorpusApps = []string{"never-synced", "synced", "fails", "degrades", "running", "multi"}

// AddCorpus adds apps that, once synced, go through the states a rollout meets: never synced, synced, an
// operation that fails, one that leaves the app Degraded, one that runs for an hour, a multi-source app. They
// carry labels and annotations that need escaping. live is the revision deployed before (HEAD should resolve
// to another). The encoding and decoding tests read the simulator's JSON of them.
func (s *Server) AddCorpus(live string) error {
	add := func(name string, opts AppOptions, edit func(*v1alpha1.Application)) error {
		a := &v1alpha1.Application{}
		a.Name = name
		a.Labels = map[string]string{"team": "web", "wave": "w1", "html": `<a href="x">&</a>`}
		a.Annotations = map[string]string{"notes": "quoted \"text\" with \\ and unicode ✓ \u2028 \x01"}
		a.Spec.Source = &v1alpha1.ApplicationSource{RepoURL: "https://git.example/fleet.git", Path: "apps/" + name, TargetRevision: "HEAD",
			Helm: &v1alpha1.ApplicationSourceHelm{ValueFiles: []string{"values.yaml", "values-prod.yaml"},
				Parameters: []v1alpha1.HelmParameter{{Name: "image.tag", Value: "1.2.3", ForceString: true}}}}
		a.Spec.Destination = v1alpha1.ApplicationDestination{Name: "c001", Namespace: "web"}
		a.Spec.SyncPolicy = &v1alpha1.SyncPolicy{SyncOptions: v1alpha1.SyncOptions{"CreateNamespace=true"},
			Retry: &v1alpha1.RetryStrategy{Limit: 3, Backoff: &v1alpha1.Backoff{Duration: "5s", MaxDuration: "1m"}}}
		if edit != nil {
			edit(a)
		}
		return s.AddApp(a, opts)
	}
	revs := []string{live}
	for _, a := range []struct {
		name string
		opts AppOptions
		edit func(*v1alpha1.Application)
	}{
		{"never-synced", AppOptions{}, nil},
		{"synced", AppOptions{LiveRevisions: revs, Health: health.HealthStatusHealthy}, nil},
		{"fails", AppOptions{LiveRevisions: revs, Behavior: Behavior{Fail: true, FailMessage: "one or more objects failed to apply"}}, nil},
		{"degrades", AppOptions{LiveRevisions: revs, Behavior: Behavior{Degrade: true}}, nil},
		{"running", AppOptions{LiveRevisions: revs, Behavior: Behavior{SyncDuration: time.Hour}}, nil},
		{"multi", AppOptions{LiveRevisions: []string{live, live}}, func(a *v1alpha1.Application) {
			a.Spec.Sources = v1alpha1.ApplicationSources{*a.Spec.Source, {RepoURL: "https://git.example/values.git", TargetRevision: "HEAD", Ref: "values"}}
			a.Spec.Source = nil
		}},
	} {
		if err := add(a.name, a.opts, a.edit); err != nil {
			return err
		}
	}
	return nil
}
