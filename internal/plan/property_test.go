package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fleetSpec describes a random fleet.
type fleetSpec struct {
	apps, clusters, regions int
}

// randomFleet makes apps spread over clusters with random env/region/zone cluster labels (some missing) and
// random app labels (tier, sometimes an env override). App names are unique.
func randomFleet(r *rand.Rand, s fleetSpec) []App {
	type cl struct {
		name   string
		labels map[string]string
	}
	envs := []string{"test", "stg", "prd", "prd", "prd"}
	clusters := make([]cl, s.clusters)
	for i := range clusters {
		labels := map[string]string{"env": envs[r.IntN(len(envs))]}
		if r.IntN(20) != 0 { // 5% without a region
			labels["region"] = fmt.Sprintf("r%d", r.IntN(s.regions))
		}
		if r.IntN(3) != 0 {
			labels["zone"] = string(rune('a' + r.IntN(3)))
		}
		clusters[i] = cl{name: fmt.Sprintf("c%04d", i), labels: labels}
	}
	tiers := []string{"web", "db", "cache"}
	apps := make([]App, s.apps)
	for i := range apps {
		c := clusters[r.IntN(len(clusters))]
		if i < len(clusters) && s.apps >= s.clusters {
			c = clusters[i] // every cluster gets at least one app
		}
		labels := map[string]string{}
		if r.IntN(2) == 0 {
			labels["tier"] = tiers[r.IntN(len(tiers))]
		}
		if r.IntN(50) == 0 {
			labels["env"] = "canary"
		}
		apps[i] = App{Name: fmt.Sprintf("svc%d-%s-%d", r.IntN(20), c.name, i), Namespace: "argocd", Cluster: c.name,
			Server: "https://" + c.name, ClusterLabels: c.labels, Labels: labels, AutomatedSync: r.IntN(10) == 0}
	}
	return apps
}

// randomPolicy writes a random policy as YAML, so the parser is exercised too.
func randomPolicy(r *rand.Rand) string {
	var sb strings.Builder
	sb.WriteString("apiVersion: fleetwave/v1\n")
	if r.IntN(2) == 0 {
		sb.WriteString("automatedSync: disable-during-rollout\n")
	}
	sb.WriteString("waves:\n")
	keys := []string{"env", "region", "zone", "tier"}
	values := map[string][]string{"env": {"test", "stg", "prd", "canary"}, "region": {"r0", "r1", "r2", "r3"},
		"zone": {"a", "b", "c"}, "tier": {"web", "db", "cache"}}
	n := 1 + r.IntN(5)
	for i := range n {
		fmt.Fprintf(&sb, "  - name: w%d\n", i)
		switch r.IntN(4) {
		case 0:
			sb.WriteString("    selector: {}\n")
		case 1:
			k := keys[r.IntN(len(keys))]
			fmt.Fprintf(&sb, "    selector: {matchLabels: {%s: %s}}\n", k, values[k][r.IntN(len(values[k]))])
		default:
			sb.WriteString("    selector:\n      matchExpressions:\n")
			for range 1 + r.IntN(2) {
				k := keys[r.IntN(len(keys))]
				switch op := []string{"In", "NotIn", "Exists", "DoesNotExist"}[r.IntN(4)]; op {
				case "In", "NotIn":
					vals := slices.Clone(values[k])
					r.Shuffle(len(vals), func(a, b int) { vals[a], vals[b] = vals[b], vals[a] })
					fmt.Fprintf(&sb, "        - {key: %s, operator: %s, values: [%s]}\n", k, op, strings.Join(vals[:1+r.IntN(2)], ", "))
				default:
					fmt.Fprintf(&sb, "        - {key: %s, operator: %s}\n", k, op)
				}
			}
		}
		switch r.IntN(4) {
		case 0: // no limit
		case 1:
			fmt.Fprintf(&sb, "    maxParallel: %d\n", 1+r.IntN(60))
		default:
			fmt.Fprintf(&sb, "    maxParallel: %d%%\n", 1+r.IntN(100))
		}
		if r.IntN(3) != 0 {
			var parts []string
			if r.IntN(4) != 0 {
				parts = append(parts, fmt.Sprintf("region: %d", 1+r.IntN(3)))
			}
			if r.IntN(2) == 0 {
				parts = append(parts, fmt.Sprintf("zone: %d", 1+r.IntN(4)))
			}
			if len(parts) > 0 {
				fmt.Fprintf(&sb, "    maxPerLabel: {%s}\n", strings.Join(parts, ", "))
			}
		}
	}
	return sb.String()
}

// refMatches is an independent, naive selector evaluation over the merged labels (app labels win).
func refMatches(s Selector, a App) bool {
	merged := maps.Clone(a.ClusterLabels)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, a.Labels)
	for k, v := range s.MatchLabels {
		if got, ok := merged[k]; !ok || got != v {
			return false
		}
	}
	for _, e := range s.MatchExpressions {
		got, ok := merged[e.Key]
		in := ok && slices.Contains(e.Values, got)
		switch e.Operator {
		case OpIn:
			if !in {
				return false
			}
		case OpNotIn:
			if in {
				return false
			}
		case OpExists:
			if !ok {
				return false
			}
		case OpDoesNotExist:
			if ok {
				return false
			}
		}
	}
	return true
}

// checkPlan asserts every invariant of a plan built from a policy file.
func checkPlan(t *testing.T, pol *Policy, apps []App, plan *Plan) {
	t.Helper()
	byName := map[string]App{}
	for _, a := range apps {
		byName[a.Name] = a
	}
	waveIndex := map[string]int{}
	for i, w := range pol.Waves {
		waveIndex[w.Name] = i
	}
	uncovered := map[string]bool{}
	for _, v := range plan.Violations {
		if v.Rule == RuleUncovered {
			uncovered[v.App] = true
		}
	}
	seen := map[string]string{}
	last := -1
	for _, w := range plan.Waves {
		wi, ok := waveIndex[w.Name]
		if !ok || wi <= last {
			t.Fatalf("wave %s out of policy order", w.Name)
		}
		last = wi
		wp := pol.Waves[wi]
		// Clusters of the wave and the resolved limit.
		clusterLabels := map[string]map[string]string{}
		batchOf := map[string]int{}
		for bi, b := range w.Batches {
			if len(b.Clusters) == 0 {
				t.Errorf("wave %s batch %d is empty", w.Name, bi+1)
			}
			for _, c := range b.Clusters {
				if _, dup := batchOf[c]; dup {
					t.Errorf("wave %s: cluster %s in two batches", w.Name, c)
				}
				batchOf[c] = bi
			}
			for _, a := range b.Apps {
				if prev, dup := seen[a.Name]; dup {
					t.Fatalf("app %s planned twice (waves %s and %s)", a.Name, prev, w.Name)
				}
				seen[a.Name] = w.Name
				if batchOf[a.Cluster] != bi {
					t.Errorf("app %s in batch %d but its cluster %s is in batch %d", a.Name, bi+1, a.Cluster, batchOf[a.Cluster]+1)
				}
				clusterLabels[a.Cluster] = a.ClusterLabels
				// First match: the wave selects it and no earlier wave does.
				in := byName[a.Name]
				if !refMatches(wp.Selector, in) {
					t.Errorf("app %s in wave %s whose selector does not match it", a.Name, w.Name)
				}
				for _, earlier := range pol.Waves[:wi] {
					if refMatches(earlier.Selector, in) {
						t.Errorf("app %s in wave %s but earlier wave %s selects it", a.Name, w.Name, earlier.Name)
					}
				}
			}
		}
		want := len(clusterLabels)
		if wp.MaxParallel != nil {
			q := *wp.MaxParallel
			if q.Percent {
				want = max((q.Value*len(clusterLabels)+99)/100, 1)
			} else {
				want = q.Value
			}
		}
		if w.Limits.MaxClusters != want {
			t.Errorf("wave %s maxClusters = %d, want %d", w.Name, w.Limits.MaxClusters, want)
		}
		checkBatches(t, w, w.Limits.MaxClusters, wp.MaxPerLabel)
		// Maximality: no cluster of a later batch would have fitted in an earlier one.
		for bi, b := range w.Batches {
			full := len(b.Clusters) >= w.Limits.MaxClusters
			if full {
				continue
			}
			counts := map[string]int{}
			for _, c := range b.Clusters {
				for _, l := range wp.MaxPerLabel {
					if v, ok := clusterLabels[c][l.Key]; ok {
						counts[l.Key+"="+v]++
					}
				}
			}
			for _, later := range w.Batches[bi+1:] {
				for _, c := range later.Clusters {
					fits := true
					for _, l := range wp.MaxPerLabel {
						if v, ok := clusterLabels[c][l.Key]; ok && counts[l.Key+"="+v] >= l.Max {
							fits = false
						}
					}
					if fits {
						t.Fatalf("wave %s: cluster %s (batch after %d) would have fitted in batch %d", w.Name, c, bi+1, bi+1)
					}
				}
			}
		}
	}
	for _, a := range apps {
		_, planned := seen[a.Name]
		if planned == uncovered[a.Name] {
			t.Fatalf("app %s: planned %v, reported uncovered %v", a.Name, planned, uncovered[a.Name])
		}
		if uncovered[a.Name] {
			for _, w := range pol.Waves {
				if refMatches(w.Selector, a) {
					t.Errorf("app %s reported uncovered but wave %s selects it", a.Name, w.Name)
				}
			}
		}
	}
}

// shuffled returns apps in another order with fresh label maps, so neither slice nor map order can leak.
func shuffled(r *rand.Rand, apps []App) []App {
	out := make([]App, len(apps))
	for i, a := range apps {
		a.Labels = maps.Clone(a.Labels)
		a.ClusterLabels = maps.Clone(a.ClusterLabels)
		out[i] = a
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func planJSON(t testing.TB, p *Plan) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildProperties(t *testing.T) {
	specs := []fleetSpec{
		{apps: 1, clusters: 1, regions: 1},
		{apps: 30, clusters: 10, regions: 3},
		{apps: 200, clusters: 50, regions: 2},
		{apps: 500, clusters: 500, regions: 40},
		{apps: 2000, clusters: 300, regions: 8},
		{apps: 10_000, clusters: 1000, regions: 12},
	}
	seeds := []uint64{1, 2, 3, 42}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		for _, spec := range specs {
			t.Run(fmt.Sprintf("seed%d/%dapps-%dclusters", seed, spec.apps, spec.clusters), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, uint64(spec.apps)))
				apps := randomFleet(r, spec)
				src := randomPolicy(r)
				pol, err := ParsePolicy("random.yaml", []byte(src))
				if err != nil {
					t.Fatalf("random policy rejected: %v\n%s", err, src)
				}
				plan := Build(pol, apps)
				checkPlan(t, pol, apps, plan)
				if t.Failed() {
					t.Logf("policy:\n%s", src)
					return
				}
				again := Build(pol, shuffled(r, apps))
				if !bytes.Equal(planJSON(t, plan), planJSON(t, again)) {
					t.Fatalf("shuffled input gave another plan; policy:\n%s", src)
				}
			})
		}
	}
}

func TestDefaultPolicyProperties(t *testing.T) {
	for _, seed := range []uint64{7, 8, 9} {
		r := rand.New(rand.NewPCG(seed, 0))
		apps := randomFleet(r, fleetSpec{apps: 3000, clusters: 400, regions: 10})
		plan := Build(nil, apps)
		if len(plan.Waves) != 2 || plan.Waves[0].AppCount() != 1 {
			t.Fatalf("seed %d: want one canary app then the rollout, got %d waves", seed, len(plan.Waves))
		}
		roll := plan.Waves[1]
		n := roll.ClusterCount()
		if want := (25*n + 99) / 100; roll.Limits.MaxClusters != want {
			t.Errorf("seed %d: rollout maxClusters %d, want %d", seed, roll.Limits.MaxClusters, want)
		}
		checkBatches(t, roll, roll.Limits.MaxClusters, []LabelLimit{{Key: "region", Max: 1}})
		if got := plan.AppCount(); got != len(apps) {
			t.Errorf("seed %d: %d apps planned of %d", seed, got, len(apps))
		}
		for _, v := range plan.Violations {
			if v.Rule != RuleAutomatedSync {
				t.Errorf("seed %d: unexpected violation %+v", seed, v)
			}
		}
		if !bytes.Equal(planJSON(t, plan), planJSON(t, Build(nil, shuffled(r, apps)))) {
			t.Fatalf("seed %d: shuffled input gave another plan", seed)
		}
	}
}

// TestBatchCountNearLowerBound guards the packing quality: on fleets where only maxParallel and one label limit
// bind, the greedy packing must reach the lower bound max(ceil(C/maxParallel), max over values ceil(n/limit)).
func TestBatchCountNearLowerBound(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 99))
		nClusters, regions := 20+r.IntN(300), 1+r.IntN(15)
		maxPar, perRegion := 1+r.IntN(40), 1+r.IntN(3)
		var units []clusterUnit
		count := map[string]int{}
		unlabelled := seed%2 == 0 && r.IntN(2) == 0 // sometimes a big group without the label
		for i := range nClusters {
			reg := fmt.Sprintf("r%d", r.IntN(regions))
			if r.IntN(4) == 0 {
				reg = "r0" // a skewed region
			}
			labels := map[string]string{"region": reg}
			if unlabelled && r.IntN(3) != 0 {
				labels = nil
			} else {
				count[reg]++
			}
			units = append(units, clusterUnit{key: fmt.Sprintf("c%04d", i), labels: labels})
		}
		bound := (nClusters + maxPar - 1) / maxPar
		for _, n := range count {
			bound = max(bound, (n+perRegion-1)/perRegion)
		}
		got := len(batchClusters(units, maxPar, []LabelLimit{{Key: "region", Max: perRegion}}))
		if got != bound {
			t.Errorf("seed %d: %d clusters, %d regions, maxParallel %d, %d per region: %d batches, lower bound %d",
				seed, nClusters, regions, maxPar, perRegion, got, bound)
		}
	}
}
