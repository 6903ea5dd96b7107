package plan

import (
	"slices"
	"strings"
	"testing"
)

// in is app placed on a cluster of an Argo CD instance.
func in(instance string, a App) App {
	a.Instance = instance
	return a
}

// TestBuildAcrossInstances: one plan over several Argo CD instances. A cluster is identified with its instance
// (two instances' in-cluster are two clusters for maxParallel, maxPerLabel and batching), waves select by instance,
// and canary-first and the limits hold across instances.
func TestBuildAcrossInstances(t *testing.T) {
	eu, prd := lbl("region", "eu"), lbl("env", "prd")
	tests := []struct {
		name           string
		policy         string
		apps           []App
		wantPlacement  string
		wantClusters   string // the batches' clusters, "[a b] [c]" per wave, waves joined by " | "
		wantViolations string
		wantMessage    string
	}{
		{
			name:          "two instances' in-cluster are two clusters",
			policy:        head + "  - {name: w, selector: {}, maxParallel: 1}\n",
			apps:          []App{in("eu", app("a", "in-cluster", nil, nil)), in("us", app("b", "in-cluster", nil, nil)), in("eu", app("c", "in-cluster", nil, nil))},
			wantPlacement: "w: [a c] [b]",
			wantClusters:  "[eu/in-cluster] [us/in-cluster]",
		},
		{
			name:          "maxParallel counts clusters across instances",
			policy:        head + "  - {name: w, selector: {}, maxParallel: 2}\n",
			apps:          []App{in("eu", app("a", "c1", nil, nil)), in("us", app("b", "c1", nil, nil)), in("us", app("c", "c2", nil, nil))},
			wantPlacement: "w: [a b] [c]",
			wantClusters:  "[eu/c1 us/c1] [us/c2]",
		},
		{
			name:          "maxPerLabel holds across instances",
			policy:        head + "  - {name: w, selector: {}, maxPerLabel: {region: 1}}\n",
			apps:          []App{in("eu", app("a", "c1", eu, nil)), in("us", app("b", "c1", eu, nil))},
			wantPlacement: "w: [a] [b]",
			wantClusters:  "[eu/c1] [us/c1]",
		},
		{
			name:          "waves select by instance",
			policy:        head + "  - {name: first, selector: {instances: [eu]}}\n  - {name: prod, selector: {instances: [us, ap], matchLabels: {env: prd}}}\n  - {name: rest, selector: {}}\n",
			apps:          []App{in("us", app("a", "c1", prd, nil)), in("eu", app("b", "c1", prd, nil)), in("us", app("c", "c2", nil, nil)), app("d", "c3", prd, nil)},
			wantPlacement: "first: [b] | prod: [a] | rest: [d c]", // by cluster: c3, us/c2
			wantClusters:  "[eu/c1] | [us/c1] | [c3 us/c2]",
		},
		{
			name: "canary-first holds across instances",
			policy: head + `  - {name: canary, selector: {instances: [eu]}}
  - {name: prod, selector: {instances: [us]}, production: true}
requireCanary: true
`,
			apps: []App{in("eu", app("guestbook-test", "test", nil, nil)),
				in("us", app("guestbook-prd-1", "prd-1", nil, nil)), in("us", app("billing-prd-1", "prd-1", nil, nil))},
			wantPlacement:  "canary: [guestbook-test] | prod: [billing-prd-1 guestbook-prd-1]",
			wantClusters:   "[eu/test] | [us/prd-1]",
			wantViolations: "canary-first billing-prd-1",
		},
		{
			name:           "an uncovered app names its instance's cluster",
			policy:         head + "  - {name: eu, selector: {instances: [eu]}}\n",
			apps:           []App{in("eu", app("a", "in-cluster", nil, nil)), in("us", app("b", "in-cluster", nil, nil))},
			wantPlacement:  "eu: [a]",
			wantClusters:   "[eu/in-cluster]",
			wantViolations: "uncovered b",
			wantMessage:    `no wave selects app "b" on cluster "us/in-cluster"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(parse(t, tt.policy), tt.apps)
			if got := placement(p); got != tt.wantPlacement {
				t.Errorf("placement = %s\nwant        %s", got, tt.wantPlacement)
			}
			var waves []string
			for _, w := range p.Waves {
				var batches []string
				for _, b := range w.Batches {
					batches = append(batches, "["+strings.Join(b.Clusters, " ")+"]")
					for _, a := range b.Apps {
						want := slices.IndexFunc(tt.apps, func(x App) bool { return x.Name == a.Name })
						if a.Instance != tt.apps[want].Instance || a.Cluster != tt.apps[want].Cluster {
							t.Errorf("%s planned on instance %q cluster %q, want %q %q", a.Name, a.Instance, a.Cluster, tt.apps[want].Instance, tt.apps[want].Cluster)
						}
					}
				}
				waves = append(waves, strings.Join(batches, " "))
			}
			if got := strings.Join(waves, " | "); got != tt.wantClusters {
				t.Errorf("clusters = %s\nwant       %s", got, tt.wantClusters)
			}
			if got := violations(p); got != tt.wantViolations {
				t.Errorf("violations = %q, want %q", got, tt.wantViolations)
			}
			if tt.wantMessage != "" && (len(p.Violations) == 0 || !strings.Contains(p.Violations[0].Message, tt.wantMessage)) {
				t.Errorf("first violation %+v does not say %q", p.Violations, tt.wantMessage)
			}
		})
	}
}

// TestSelectorInstances: a selector's instances are part of its canonical form, so two waves differing only in
// their instances are not the same selector, and a wave after one taking every instance's apps is unreachable.
func TestSelectorInstances(t *testing.T) {
	s := Selector{Instances: []string{"us", "eu", "us"}, MatchLabels: map[string]string{"env": "prd"}}
	if got, want := s.String(), "@instance in (eu,us),env=prd"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if (Selector{Instances: []string{"eu"}}).Empty() {
		t.Error("a selector of instances is empty")
	}
	p := parse(t, head+"  - {name: eu, selector: {instances: [eu]}}\n  - {name: us, selector: {instances: [us]}}\n")
	if len(p.Warnings) != 0 {
		t.Errorf("warnings %v for waves of different instances", p.Warnings)
	}
}
