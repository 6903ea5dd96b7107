package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func parse(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := ParsePolicy("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func app(name, cluster string, clusterLabels, labels map[string]string) App {
	return App{Name: name, Namespace: "argocd", Cluster: cluster, ClusterLabels: clusterLabels, Labels: labels}
}

func lbl(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// placement renders a plan compactly: "wave: [c1 c2] [c3] | wave2: ..." with apps per cluster implied.
func placement(p *Plan) string {
	var waves []string
	for _, w := range p.Waves {
		var batches []string
		for _, b := range w.Batches {
			var apps []string
			for _, a := range b.Apps {
				apps = append(apps, a.Name)
			}
			batches = append(batches, "["+strings.Join(apps, " ")+"]")
		}
		waves = append(waves, w.Name+": "+strings.Join(batches, " "))
	}
	return strings.Join(waves, " | ")
}

func violations(p *Plan) string {
	var out []string
	for _, v := range p.Violations {
		out = append(out, v.Rule+" "+v.App)
	}
	return strings.Join(out, ", ")
}

func TestBuildRules(t *testing.T) {
	prd := lbl("env", "prd")
	tests := []struct {
		name           string
		policy         string
		apps           []App
		wantPlacement  string
		wantViolations string
		wantMessage    string // a substring of the first violation's message
	}{
		{
			name:   "first matching wave wins and waves keep policy order",
			policy: head + "  - {name: b, selector: {matchLabels: {tier: web}}}\n  - {name: a, selector: {}}\n",
			apps: []App{app("x", "c1", prd, lbl("tier", "web")), app("y", "c1", prd, nil),
				app("z", "c2", prd, lbl("tier", "web"))},
			wantPlacement: "b: [x z] | a: [y]",
		},
		{
			name:           "uncovered app",
			policy:         head + "  - {name: prod, selector: {matchLabels: {env: prd}}}\n",
			apps:           []App{app("x", "c1", prd, nil), app("stray", "c2", lbl("env", "dev"), nil)},
			wantPlacement:  "prod: [x]",
			wantViolations: "uncovered stray",
			wantMessage:    `no wave selects app "stray" on cluster "c2" (app labels: none; cluster labels: env=dev)`,
		},
		{
			name:          "application label wins over cluster label on a shared key",
			policy:        head + "  - {name: canary, selector: {matchLabels: {env: canary}}}\n  - {name: prod, selector: {matchLabels: {env: prd}}}\n",
			apps:          []App{app("x", "c1", prd, lbl("env", "canary")), app("y", "c1", prd, nil)},
			wantPlacement: "canary: [x] | prod: [y]",
		},
		{
			name: "matchExpressions operators",
			policy: head + `  - name: w
    selector:
      matchExpressions:
        - {key: env, operator: In, values: [prd, stg]}
        - {key: tier, operator: NotIn, values: [db]}
        - {key: region, operator: Exists}
        - {key: legacy, operator: DoesNotExist}
  - {name: rest, selector: {}}
`,
			apps: []App{
				app("ok", "c1", lbl("env", "stg", "region", "eu"), nil),
				app("ok-tier", "c2", lbl("env", "prd", "region", "eu"), lbl("tier", "web")),
				app("bad-env", "c3", lbl("env", "dev", "region", "eu"), nil),
				app("bad-tier", "c4", lbl("env", "prd", "region", "eu"), lbl("tier", "db")),
				app("no-region", "c5", lbl("env", "prd"), nil),
				app("legacy", "c6", lbl("env", "prd", "region", "eu"), lbl("legacy", "")),
			},
			wantPlacement: "w: [ok ok-tier] | rest: [bad-env bad-tier no-region legacy]", // by cluster c3..c6
		},
		{
			name:   "automated sync is a violation by default",
			policy: head + "  - {name: all-apps, selector: {}}\n",
			apps: []App{app("manual", "c1", nil, nil),
				{Name: "auto", Cluster: "c1", AutomatedSync: true}},
			wantPlacement:  "all-apps: [auto manual]",
			wantViolations: "automated-sync auto",
			wantMessage:    `app "auto" has automated sync enabled: Argo CD would sync it as soon as the change merges`,
		},
		{
			name:          "automated sync allowed when the bot may disable it",
			policy:        head + "  - {name: all-apps, selector: {}}\nautomatedSync: disable-during-rollout\n",
			apps:          []App{{Name: "auto", Cluster: "c1", AutomatedSync: true}},
			wantPlacement: "all-apps: [auto]",
		},
		{
			name:           "maxParallel 0 is unsatisfiable",
			policy:         head + "  - {name: w, selector: {}, maxParallel: 0}\n",
			apps:           []App{app("x", "c1", nil, nil), app("y", "c2", nil, nil)},
			wantPlacement:  "w: [x] [y]",
			wantViolations: "unsatisfiable-limits x, unsatisfiable-limits y",
			wantMessage:    `wave "w" cannot roll out app "x" on cluster "c1": maxParallel 0 admits no cluster`,
		},
		{
			name:           "maxPerLabel 0 is unsatisfiable for labelled clusters",
			policy:         head + "  - {name: w, selector: {}, maxPerLabel: {region: 0}}\n",
			apps:           []App{app("x", "c1", lbl("region", "eu"), nil)},
			wantPlacement:  "w: [x]",
			wantViolations: "unsatisfiable-limits x",
			wantMessage:    `maxPerLabel region: 0 admits no cluster labelled region`,
		},
		{
			name:           "a cluster without a maxPerLabel label is unsatisfiable in a policy file",
			policy:         head + "  - {name: w, selector: {}, maxPerLabel: {region: 1}}\n",
			apps:           []App{app("x", "c1", lbl("region", "eu"), nil), app("y", "c2", nil, nil)},
			wantPlacement:  "w: [x y]",
			wantViolations: "unsatisfiable-limits y",
			wantMessage:    `cluster "c2" has no "region" label, which maxPerLabel needs`,
		},
		{
			name: "canary-first: production wave with a kind no earlier wave had",
			policy: head + `  - {name: canary, selector: {matchLabels: {env: test}}}
  - {name: prod, selector: {matchLabels: {env: prd}}, production: true}
requireCanary: true
`,
			apps: []App{app("guestbook-test", "test", lbl("env", "test"), nil),
				app("guestbook-prd-1", "prd-1", prd, nil), app("billing-prd-1", "prd-1", prd, nil)},
			wantPlacement:  "canary: [guestbook-test] | prod: [billing-prd-1 guestbook-prd-1]",
			wantViolations: "canary-first billing-prd-1",
			wantMessage:    `app "billing-prd-1" (kind "billing") reaches production wave "prod" but no earlier wave has an app of that kind`,
		},
		{
			name: "canary-first per wave, kinds from appKindLabel",
			policy: head + `  - {name: canary, selector: {matchLabels: {env: test}}}
  - {name: prod, selector: {matchLabels: {env: prd}}, requireCanary: true}
appKindLabel: app.kubernetes.io/name
`,
			apps: []App{app("gb-canary", "test", lbl("env", "test"), lbl("app.kubernetes.io/name", "guestbook")),
				app("gb-eu", "prd-1", prd, lbl("app.kubernetes.io/name", "guestbook")),
				app("api-eu", "prd-1", prd, lbl("app.kubernetes.io/name", "api"))},
			wantPlacement:  "canary: [gb-canary] | prod: [api-eu gb-eu]",
			wantViolations: "canary-first api-eu",
		},
		{
			name: "canary-first off when not asked",
			policy: head + `  - {name: canary, selector: {matchLabels: {env: test}}}
  - {name: prod, selector: {matchLabels: {env: prd}}, production: true}
`,
			apps:          []App{app("billing-prd-1", "prd-1", prd, nil)},
			wantPlacement: "prod: [billing-prd-1]",
		},
		{
			name:          "apps on one cluster move together",
			policy:        head + "  - {name: w, selector: {}, maxParallel: 1}\n",
			apps:          []App{app("a1", "c1", nil, nil), app("b2", "c2", nil, nil), app("c1", "c1", nil, nil), app("d2", "c2", nil, nil)},
			wantPlacement: "w: [a1 c1] [b2 d2]",
		},
		{
			name:   "clusters are identified by server when unnamed",
			policy: head + "  - {name: w, selector: {}, maxParallel: 1}\n",
			apps: []App{{Name: "a", Server: "https://one"}, {Name: "b", Server: "https://two"},
				{Name: "c", Server: "https://one"}},
			wantPlacement: "w: [a c] [b]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(parse(t, tt.policy), tt.apps)
			if got := placement(p); got != tt.wantPlacement {
				t.Errorf("placement = %s\nwant        %s", got, tt.wantPlacement)
			}
			if got := violations(p); got != tt.wantViolations {
				t.Errorf("violations = %q, want %q", got, tt.wantViolations)
			}
			if p.OK() != (tt.wantViolations == "") {
				t.Errorf("OK() = %v with violations %q", p.OK(), violations(p))
			}
			if tt.wantMessage != "" && (len(p.Violations) == 0 || !strings.Contains(p.Violations[0].Message, tt.wantMessage)) {
				t.Errorf("first violation %+v does not say %q", p.Violations, tt.wantMessage)
			}
		})
	}
}

func TestBuildGates(t *testing.T) {
	p := parse(t, head+`  - {name: a, selector: {matchLabels: {env: test}}, failureThreshold: 2}
  - {name: b, selector: {}, failureThreshold: 25%, onFailure: pause, approval: {}}
onFailure: rollback
`)
	var apps []App
	for i := range 10 {
		apps = append(apps, app(fmt.Sprintf("app-%d", i), fmt.Sprintf("c%d", i), nil, nil))
	}
	apps = append(apps, app("t", "t", lbl("env", "test"), nil))
	plan := Build(p, apps)
	a, b := plan.Waves[0].Gates, plan.Waves[1].Gates
	if a.OnFailure != OnFailureRollback || a.ToleratedFailures != 2 || a.Approval != nil {
		t.Errorf("wave a gates = %+v, want the policy's rollback and 2 tolerated failures", a)
	}
	if b.OnFailure != OnFailurePause || b.ToleratedFailures != 2 || b.Approval == nil || !b.Approval.Required {
		t.Errorf("wave b gates = %+v, want pause, 25%% of 10 apps = 2 tolerated, approval required", b)
	}
}

func TestDefaultPolicyCanaryChoice(t *testing.T) {
	tests := []struct {
		name string
		apps []App
		want string
	}{
		{"first by name", []App{app("b", "c2", nil, nil), app("a", "c1", nil, nil)}, "a"},
		{"env=dev cluster", []App{app("a", "c1", nil, nil), app("z", "c9", lbl("env", "dev"), nil)}, "z"},
		{"test beats dev", []App{app("a", "c1", lbl("env", "dev"), nil), app("z", "c9", lbl("environment", "test"), nil)}, "z"},
		{"canary app label beats test cluster", []App{app("a", "c1", lbl("env", "test"), nil),
			app("z", "c9", lbl("env", "prd"), lbl("env", "canary"))}, "z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Build(nil, tt.apps)
			if len(p.Waves) == 0 || p.Waves[0].Name != "canary" || p.Waves[0].AppCount() != 1 {
				t.Fatalf("plan = %s", placement(p))
			}
			if got := p.Waves[0].Batches[0].Apps[0].Name; got != tt.want {
				t.Errorf("canary = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDefaultPolicyRollout(t *testing.T) {
	// 12 clusters in 3 regions plus 2 unlabelled: 25% of the 13 clusters left after the canary = 4 per batch,
	// one per region, unlabelled clusters unconstrained.
	var apps []App
	for i := range 12 {
		r := []string{"eu", "us", "ap"}[i%3]
		apps = append(apps, app(fmt.Sprintf("app-%02d", i), fmt.Sprintf("c%02d", i), lbl("region", r), nil))
	}
	apps = append(apps, app("x-1", "bare-1", nil, nil), app("x-2", "bare-2", nil, nil))
	p := Build(DefaultPolicy(), apps)
	if !p.OK() {
		t.Fatalf("violations: %s", violations(p))
	}
	roll := p.Waves[1]
	if roll.Limits.MaxClusters != 4 {
		t.Errorf("maxClusters = %d, want 4", roll.Limits.MaxClusters)
	}
	checkBatches(t, roll, 4, []LabelLimit{{Key: "region", Max: 1}})
	if got := len(roll.Batches); got != 4 { // 11 labelled clusters at ≤ 3 labelled per batch, plus 2 bare
		t.Errorf("%d batches, want 4: %s", got, placement(p))
	}
}

// checkBatches asserts the batch limits of one wave.
func checkBatches(t testing.TB, w Wave, maxClusters int, limits []LabelLimit) {
	t.Helper()
	for bi, b := range w.Batches {
		if len(b.Clusters) > maxClusters {
			t.Errorf("wave %s batch %d has %d clusters, limit %d", w.Name, bi+1, len(b.Clusters), maxClusters)
		}
		labels := map[string]map[string]string{}
		for _, a := range b.Apps {
			labels[a.Cluster] = a.ClusterLabels
		}
		for _, l := range limits {
			count := map[string]int{}
			for _, c := range b.Clusters {
				if v, ok := labels[c][l.Key]; ok {
					count[v]++
					if count[v] > l.Max {
						t.Errorf("wave %s batch %d has %d clusters with %s=%s, limit %d", w.Name, bi+1, count[v], l.Key, v, l.Max)
					}
				}
			}
		}
	}
}

func TestKindFromName(t *testing.T) {
	tests := []struct{ name, cluster, want string }{
		{"guestbook-prd-eu-1", "prd-eu-1", "guestbook"},
		{"prd-eu-1-guestbook", "prd-eu-1", "guestbook"},
		{"api-prd-eu-1-v2", "prd-eu-1", "api-v2"},
		{"guestbook", "in-cluster", "guestbook"},
		{"guestbook-PRD_EU", "PRD_EU", "guestbook-PRD_EU"}, // names are lowercase in Argo CD; no match here
		{"guestbook-prd-eu", "PRD_EU", "guestbook"},
		{"prd-eu-1", "prd-eu-1", "prd-eu-1"}, // nothing left: keep the name
		{"eu-1-api-eu-1", "eu-1", "eu-1-api"},
		{"guestbook", "", "guestbook"},
	}
	for _, tt := range tests {
		if got := kindFromName(tt.name, tt.cluster); got != tt.want {
			t.Errorf("kindFromName(%q, %q) = %q, want %q", tt.name, tt.cluster, got, tt.want)
		}
	}
}

func TestImportRollingSync(t *testing.T) {
	tests := []struct {
		maxUpdate string
		clusters  int
		want      int // resolved clusters per batch; -1 = no limit
	}{
		{"", 10, -1},
		{"3", 10, 3},
		{"10%", 10, 1},
		{"25%", 10, 2}, // Argo CD rounds down
		{"5%", 10, 1},  // but at least 1 above 0%
		{"0%", 10, 0},
		{"0", 10, 0},
		{"00%", 10, 1}, // Argo CD only special-cases the exact string "0%"
		{"abc", 10, 1}, // unreadable: 1, as Argo CD
		{"150%", 10, 10},
	}
	for _, tt := range tests {
		q := maxUpdate(tt.maxUpdate)
		got := -1
		if q != nil {
			got = q.Of(tt.clusters)
		}
		if got != tt.want {
			t.Errorf("maxUpdate %q of %d = %d, want %d", tt.maxUpdate, tt.clusters, got, tt.want)
		}
	}

	// Selection: Application labels only; In fails on a missing key, NotIn and unknown operators pass on it.
	p := ImportRollingSync([]RollingSyncStep{
		{MatchExpressions: []Requirement{{Key: "env", Operator: OpIn, Values: []string{"dev"}}}},
		{MatchExpressions: []Requirement{{Key: "env", Operator: OpNotIn, Values: []string{"prd"}}, {Key: "tier", Operator: OpExists}}},
		{MatchExpressions: []Requirement{{Key: "env", Operator: OpIn, Values: []string{"prd"}}}, MaxUpdate: "1"},
	})
	apps := []App{
		app("dev-on-label", "c1", nil, lbl("env", "dev")),
		app("dev-on-cluster", "c2", lbl("env", "dev"), nil),             // cluster labels do not count: step 2 (env absent)
		app("stg-with-tier", "c3", nil, lbl("env", "stg", "tier", "x")), // Exists with key present: fails step 2
		app("prd-1", "c4", nil, lbl("env", "prd")),
		app("prd-2", "c5", nil, lbl("env", "prd")),
	}
	plan := Build(p, apps)
	if got, want := placement(plan), "step-1: [dev-on-label] | step-2: [dev-on-cluster] | step-3: [prd-1] [prd-2]"; got != want {
		t.Errorf("placement = %s\nwant        %s", got, want)
	}
	if got := violations(plan); got != "uncovered stg-with-tier" {
		t.Errorf("violations = %s", got)
	}
}

func TestDefaultPolicyGroupsApplicationSets(t *testing.T) {
	stepsA := []RollingSyncStep{{MatchExpressions: []Requirement{{Key: "env", Operator: OpIn, Values: []string{"dev"}}}},
		{MatchExpressions: []Requirement{{Key: "env", Operator: OpIn, Values: []string{"prd"}}}}}
	stepsB := []RollingSyncStep{{MatchExpressions: []Requirement{{Key: "env", Operator: OpNotIn, Values: []string{"dev"}}}}}
	apps := []App{
		{Name: "a-dev", Cluster: "dev", Labels: lbl("env", "dev"), Source: "appset:alpha", RollingSyncSteps: stepsA, AutomatedSync: true},
		{Name: "a-prd", Cluster: "prd", Labels: lbl("env", "prd"), Source: "appset:alpha", RollingSyncSteps: stepsA},
		{Name: "b-prd", Cluster: "prd", Labels: lbl("env", "prd"), Source: "appset:beta", RollingSyncSteps: stepsB},
		{Name: "plain", Cluster: "prd"},
	}
	p := Build(nil, apps)
	want := "alpha-step-1: [a-dev] | alpha-step-2: [a-prd] | beta-step-1: [b-prd] | canary: [plain]"
	if got := placement(p); got != want {
		t.Errorf("placement = %s\nwant        %s", got, want)
	}
	if !p.OK() {
		t.Errorf("violations: %s (automated sync is off under RollingSync)", violations(p))
	}
}

func TestAllowed(t *testing.T) {
	p := mustPolicy(t, "full.yaml")
	sre := []string{"acme/sre"}
	tests := []struct {
		command, wave string
		actor         Actor
		want          bool
		why           string
	}{
		{"pause", "", Actor{Permission: PermTriage}, true, ""},
		{"pause", "", Actor{Permission: PermRead}, false, "/pause needs triage permission"},
		{"abort", "", Actor{Permission: PermWrite}, false, "/abort needs maintain permission"},
		{"abort", "", Actor{Permission: PermAdmin}, true, ""},
		{"rollback", "", Actor{Permission: PermAdmin}, false, "/rollback needs membership of acme/sre"},
		{"rollback", "", Actor{Teams: []string{"ACME/SRE"}}, true, ""},
		{"approve", "canary", Actor{Permission: PermWrite}, true, ""},
		{"approve", "production", Actor{Permission: PermWrite}, false, `wave "production" may only be approved by acme/sre, acme/release-managers`},
		{"approve", "production", Actor{Permission: PermRead, Teams: sre}, false, "/approve needs write permission or membership of acme/release-managers"},
		{"approve", "production", Actor{Teams: []string{"acme/release-managers"}}, true, ""},
		{"help", "", Actor{}, true, ""},
	}
	for _, tt := range tests {
		ok, why := p.Allowed(tt.command, tt.wave, tt.actor)
		if ok != tt.want || why != tt.why {
			t.Errorf("Allowed(%s, %q, %+v) = %v, %q; want %v, %q", tt.command, tt.wave, tt.actor, ok, why, tt.want, tt.why)
		}
	}
	// Commands the policy does not mention get the defaults.
	d := DefaultPolicy()
	if ok, _ := d.Allowed("resume", "", Actor{Permission: PermWrite}); !ok {
		t.Error("write may not resume under the defaults")
	}
	if ok, _ := d.Allowed("plan", "", Actor{Permission: PermRead}); ok {
		t.Error("read may recompute the plan under the defaults")
	}
}

// TestPlanJSONContract checks the field names docs/contract.md fixes, and that the plan survives a JSON round trip.
func TestPlanJSONContract(t *testing.T) {
	plan := Build(mustPolicy(t, "sketch.yaml"), exampleApps())
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Waves []struct {
			Name    *string         `json:"name"`
			Gates   json.RawMessage `json:"gates"`
			Batches []struct {
				Apps []map[string]json.RawMessage `json:"apps"`
			} `json:"batches"`
		} `json:"waves"`
		Violations []map[string]json.RawMessage `json:"violations"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Waves) != 3 || len(doc.Violations) != 2 {
		t.Fatalf("waves %d violations %d", len(doc.Waves), len(doc.Violations))
	}
	for _, w := range doc.Waves {
		if w.Name == nil || len(w.Gates) == 0 || w.Gates[0] != '{' {
			t.Errorf("wave without name or gates object: %s", b)
		}
		for _, bt := range w.Batches {
			for _, a := range bt.Apps {
				for _, k := range []string{"name", "cluster", "clusterLabels", "labels"} {
					if v, ok := a[k]; !ok || string(v) == "null" {
						t.Errorf("app %s lacks %q", a["name"], k)
					}
				}
			}
		}
	}
	for _, v := range doc.Violations {
		for _, k := range []string{"app", "rule", "message"} {
			if _, ok := v[k]; !ok {
				t.Errorf("violation lacks %q: %v", k, v)
			}
		}
	}
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Digest() != plan.Digest() {
		t.Error("the plan does not survive a JSON round trip")
	}
	empty, _ := json.Marshal(Build(DefaultPolicy(), nil))
	if string(empty) != `{"policy":"default","waves":[],"skippedWaves":["canary","rollout"],"violations":[]}` {
		t.Errorf("empty plan = %s", empty)
	}
}

func TestSelectorString(t *testing.T) {
	s := Selector{MatchLabels: lbl("env", "prd"), MatchExpressions: []Requirement{
		{Key: "region", Operator: OpNotIn, Values: []string{"us", "eu"}}, {Key: "x", Operator: OpDoesNotExist}}}
	if got := s.String(); got != "env=prd,region notin (eu,us),!x" {
		t.Errorf("String() = %q", got)
	}
	if !slices.Equal(s.MatchExpressions[0].Values, []string{"us", "eu"}) {
		t.Error("String() reordered the selector's own values")
	}
}
