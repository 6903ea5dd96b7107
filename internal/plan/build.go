package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Build plans apps under policy p (DefaultPolicy when p is nil). It is deterministic: the order of apps and of
// map iteration never shows in the plan. Each app lands in the first wave that selects it; waves keep the
// policy's order; each wave is split into batches of whole clusters that honour maxParallel and every
// maxPerLabel at once. Rule violations are recorded in the plan, never returned as errors. apps are the apps a
// change affects (unchanged apps are not planned); Build does not modify them, and the plan shares their label
// maps.
func Build(p *Policy, apps []App) *Plan {
	if p == nil {
		p = DefaultPolicy()
	}
	b := builder{policy: p, apps: sortedApps(apps)}
	b.waves, b.groups = p.effectiveWaves(b.apps)
	b.chooseTracks()
	b.assign()
	return b.plan()
}

// chooseTracks picks each app's track and puts a wave for each oneWave track some app takes before the
// policy's waves.
func (b *builder) chooseTracks() {
	p := b.policy
	b.track = make([]int, len(b.apps))
	b.why = make([]*Risk, len(b.apps))
	used := make([]bool, len(p.Tracks))
	for ai, a := range b.apps {
		b.track[ai], b.why[ai] = p.trackOf(a)
		if ti := b.track[ai]; ti >= 0 {
			used[ti] = true
		}
	}
	var first []WavePolicy
	for ti, t := range p.Tracks {
		if t.OneWave && used[ti] {
			first = append(first, WavePolicy{Name: t.Name, Line: t.Line, oneWaveTrack: t.Name})
		}
	}
	if len(first) > 0 {
		b.waves = append(first, b.waves...)
	}
}

type builder struct {
	policy *Policy
	apps   []*App // sorted
	waves  []WavePolicy
	groups []string // per app: its rollingSync group key ("" = none or not importing)
	wave   []int    // per app: index in waves, -1 uncovered
	track  []int    // per app: index in policy.Tracks, -1 the standard track
	why    []*Risk  // per app: the risk that chose its track (nil: no class)
}

// compareApps is the total order of apps that makes plans independent of input order.
func compareApps(a, b *App) int {
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := cmp.Compare(a.clusterID(), b.clusterID()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Project, b.Project); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	if a.AutomatedSync != b.AutomatedSync {
		if a.AutomatedSync {
			return 1
		}
		return -1
	}
	if c := compareLabels(a.Labels, b.Labels); c != 0 {
		return c
	}
	if c := compareLabels(a.ClusterLabels, b.ClusterLabels); c != 0 {
		return c
	}
	return cmp.Compare(stepsKey(a.RollingSyncSteps), stepsKey(b.RollingSyncSteps))
}

func compareLabels(a, b map[string]string) int {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	return cmp.Compare(labelString(a), labelString(b))
}

func sortedApps(apps []App) []*App {
	out := make([]*App, len(apps))
	for i := range apps {
		out[i] = &apps[i]
	}
	slices.SortFunc(out, compareApps)
	return out
}

// effectiveWaves is p's waves, or for DefaultPolicy the imported rollingSync groups followed by the default
// canary and rollout waves. groups holds each app's rollingSync group key.
func (p *Policy) effectiveWaves(apps []*App) ([]WavePolicy, []string) {
	groups := make([]string, len(apps))
	if !p.isDefault {
		return p.Waves, groups
	}
	type group struct {
		key     string
		steps   []RollingSyncStep
		sources []string
	}
	var order []*group
	byKey := map[string]*group{}
	for i, a := range apps {
		if len(a.RollingSyncSteps) == 0 {
			continue
		}
		k := stepsKey(a.RollingSyncSteps)
		groups[i] = k
		g := byKey[k]
		if g == nil {
			g = &group{key: k, steps: a.RollingSyncSteps}
			byKey[k] = g
			order = append(order, g) // apps are sorted, so groups come in a deterministic order
		}
		if !slices.Contains(g.sources, a.Source) {
			g.sources = append(g.sources, a.Source)
		}
	}
	var waves []WavePolicy
	used := map[string]bool{}
	for gi, g := range order {
		prefix := ""
		if len(order) > 1 {
			prefix = fmt.Sprintf("rollingsync-%d-", gi+1)
			if len(g.sources) == 1 {
				if name, ok := strings.CutPrefix(g.sources[0], "appset:"); ok && validWaveName(fmt.Sprintf("%s-step-%d", name, len(g.steps))) && !used[name] {
					prefix = name + "-"
				}
			}
		}
		used[strings.TrimSuffix(prefix, "-")] = true
		for _, w := range importWaves(g.steps, prefix) {
			w.group = g.key
			waves = append(waves, w)
		}
	}
	return append(waves, p.Waves...), groups
}

// assign puts every app in the first wave that selects it.
func (b *builder) assign() {
	b.wave = make([]int, len(b.apps))
	remaining := make([]int, len(b.apps))
	for i := range remaining {
		b.wave[i] = -1
		remaining[i] = i
	}
	for wi := range b.waves {
		w := &b.waves[wi]
		if w.oneWaveTrack != "" {
			remaining = slices.DeleteFunc(remaining, func(ai int) bool {
				if b.policy.trackName(b.track[ai]) == w.oneWaveTrack {
					b.wave[ai] = wi
					return true
				}
				return false
			})
			continue
		}
		m := w.Selector.compile()
		if w.pickOne {
			best, bestRank := -1, 0
			for _, ai := range remaining {
				if b.groups[ai] != w.group || !m.matches(b.apps[ai]) {
					continue
				}
				if r := canaryRank(b.apps[ai]); best < 0 || r < bestRank {
					best, bestRank = ai, r
				}
			}
			if best >= 0 {
				b.wave[best] = wi
				remaining = slices.DeleteFunc(remaining, func(ai int) bool { return ai == best })
			}
			continue
		}
		remaining = slices.DeleteFunc(remaining, func(ai int) bool {
			if b.groups[ai] == w.group && m.matches(b.apps[ai]) {
				b.wave[ai] = wi
				return true
			}
			return false
		})
	}
}

// canaryRank orders canary candidates: env=canary, then test, then dev, then anything (keys env, environment).
func canaryRank(a *App) int {
	best := 3
	for _, key := range []string{"env", "environment"} {
		v, _ := a.label(key)
		switch strings.ToLower(v) {
		case "canary":
			best = min(best, 0)
		case "test":
			best = min(best, 1)
		case "dev":
			best = min(best, 2)
		}
	}
	return best
}

func (b *builder) plan() *Plan {
	p := b.policy
	out := &Plan{Policy: p.Source, Waves: []Wave{}, Violations: []Violation{}}
	perWave := make([][]int, len(b.waves))
	for ai, wi := range b.wave {
		if wi < 0 {
			out.Violations = append(out.Violations, b.uncovered(ai))
			continue
		}
		perWave[wi] = append(perWave[wi], ai)
	}
	covered := map[string]bool{} // app kinds in earlier waves, tracked only when some wave checks them
	needKinds := false
	for wi := range b.waves {
		needKinds = needKinds || b.requiresCanary(wi)
	}
	for wi := range b.waves {
		w := &b.waves[wi]
		members := perWave[wi]
		if len(members) == 0 {
			out.SkippedWaves = append(out.SkippedWaves, w.Name)
			continue
		}
		wave, viol := b.planWave(w, members)
		out.Waves = append(out.Waves, wave)
		out.Violations = append(out.Violations, viol...)
		if b.requiresCanary(wi) {
			for _, ai := range members {
				a := b.apps[ai]
				if kind := p.AppKind(a); !covered[kind] {
					out.Violations = append(out.Violations, b.violation(a, w.Name, RuleCanaryFirst, fmt.Sprintf(
						"app %q (kind %q) reaches production wave %q but no earlier wave has an app of that kind "+
							"(hint: include a canary or staging instance of it in this change, or set appKindLabel "+
							"if app names do not carry the kind)", a.Name, kind, w.Name)))
				}
			}
		}
		if needKinds {
			for _, ai := range members {
				covered[p.AppKind(b.apps[ai])] = true
			}
		}
	}
	if p.AutomatedSync != AutomatedSyncDisableDuringRollout {
		for ai, a := range b.apps {
			if !a.AutomatedSync {
				continue
			}
			if wi := b.wave[ai]; b.groups[ai] != "" || (wi >= 0 && b.waves[wi].rollingSync) {
				continue // Argo CD's ApplicationSet controller turns automated sync off under RollingSync
			}
			wave := ""
			if wi := b.wave[ai]; wi >= 0 {
				wave = b.waves[wi].Name
			}
			out.Violations = append(out.Violations, b.violation(a, wave, RuleAutomatedSync, fmt.Sprintf(
				"app %q has automated sync enabled: Argo CD would sync it as soon as the change merges, bypassing "+
					"the waves (hint: remove spec.syncPolicy.automated, or set automatedSync: disable-during-rollout "+
					"in the policy: fleetwave then switches its automated sync off when the plan check passes, before "+
					"the merge can land, and back on when the rollout ends or the PR closes)", a.Name)))
		}
	}
	out.Tracks = b.trackUses()
	slices.SortStableFunc(out.Violations, func(x, y Violation) int {
		if c := cmp.Compare(ruleOrder(x.Rule), ruleOrder(y.Rule)); c != 0 {
			return c
		}
		if c := cmp.Compare(x.App, y.App); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(x.Cluster, y.Cluster)
	})
	return out
}

func (b *builder) requiresCanary(wi int) bool {
	w := &b.waves[wi]
	if w.RequireCanary != nil {
		return *w.RequireCanary
	}
	return b.policy.RequireCanary && w.Production
}

func (b *builder) uncovered(ai int) Violation {
	a := b.apps[ai]
	if b.groups[ai] != "" {
		return b.violation(a, "", RuleUncovered, fmt.Sprintf(
			"no rollingSync step of its ApplicationSet selects app %q (labels: %s): Argo CD would leave it for a "+
				"manual sync (hint: add a step whose matchExpressions match its labels, or add a .fleetwave.yaml)",
			a.Name, labelString(a.Labels)))
	}
	return b.violation(a, "", RuleUncovered, fmt.Sprintf(
		"no wave selects app %q on cluster %q (app labels: %s; cluster labels: %s) (hint: add a wave whose "+
			"selector matches it, or end the policy with a wave whose selector is {})",
		a.Name, a.clusterID(), labelString(a.Labels), labelString(a.ClusterLabels)))
}

func (b *builder) violation(a *App, wave, rule, msg string) Violation {
	return Violation{App: a.Name, Namespace: a.Namespace, Cluster: a.clusterID(), Wave: wave, Rule: rule, Message: msg}
}

// planWave groups a wave's apps by cluster, resolves its limits, batches the clusters and checks the limits.
func (b *builder) planWave(w *WavePolicy, members []int) (Wave, []Violation) {
	p := b.policy
	var units []clusterUnit
	index := map[string]int{}
	for _, ai := range members {
		a := b.apps[ai]
		k := a.clusterID()
		ui, ok := index[k]
		if !ok {
			ui = len(units)
			index[k] = ui
			units = append(units, clusterUnit{key: k, labels: a.ClusterLabels})
		}
		units[ui].apps = append(units[ui].apps, ai)
	}
	slices.SortFunc(units, func(x, y clusterUnit) int { return cmp.Compare(x.key, y.key) })

	onFailure := w.OnFailure
	if onFailure == "" {
		onFailure = cmp.Or(p.OnFailure, OnFailurePause)
	}
	wave := Wave{
		Name:       w.Name,
		Production: w.Production,
		Gates: Gates{
			Soak:              w.Soak,
			Metrics:           w.Gates,
			FailureThreshold:  w.FailureThreshold,
			ToleratedFailures: w.FailureThreshold.Floor(len(members)),
			OnFailure:         onFailure,
		},
	}
	if w.Approval.Required {
		approval := w.Approval
		approval.When = cmp.Or(approval.When, ApprovalBefore)
		approval.Approvers = b.policy.Approvers(w)
		wave.Gates.Approval = &approval
	}
	b.applyTracks(w, &wave, members)

	var viol []Violation
	unsatisfiable := map[int]string{} // app -> reason (first one wins)
	maxClusters := len(units)
	if w.MaxParallel != nil {
		maxClusters = w.MaxParallel.Of(len(units))
	}
	wave.Limits = Limits{MaxParallel: w.MaxParallel, MaxClusters: maxClusters}
	if maxClusters == 0 {
		reason := cmp.Or(w.unsatisfiableNote, fmt.Sprintf("maxParallel %s admits no cluster", w.MaxParallel))
		for _, ai := range members {
			unsatisfiable[ai] = reason
		}
		maxClusters = 1 // the plan still shows the clusters, one at a time
	}
	limits := make([]LabelLimit, 0, len(w.MaxPerLabel))
	if len(w.MaxPerLabel) > 0 {
		wave.Limits.MaxPerLabel = make(map[string]int, len(w.MaxPerLabel))
	}
	for _, l := range w.MaxPerLabel {
		wave.Limits.MaxPerLabel[l.Key] = l.Max
		for _, u := range units {
			_, has := u.labels[l.Key]
			var reason string
			switch {
			case has && l.Max <= 0:
				reason = fmt.Sprintf("maxPerLabel %s: %d admits no cluster labelled %s", l.Key, l.Max, l.Key)
			case !has && !w.lenientLabels:
				reason = fmt.Sprintf("cluster %q has no %q label, which maxPerLabel needs (hint: add the label to the "+
					"cluster, e.g. on its Argo CD cluster Secret, or narrow the wave's selector)", u.key, l.Key)
			default:
				continue
			}
			for _, ai := range u.apps {
				if _, seen := unsatisfiable[ai]; !seen {
					unsatisfiable[ai] = reason
				}
			}
		}
		limits = append(limits, LabelLimit{Key: l.Key, Max: max(l.Max, 1)})
	}
	for _, ai := range members { // members are sorted, so violations come in a stable order
		if reason, ok := unsatisfiable[ai]; ok {
			a := b.apps[ai]
			viol = append(viol, b.violation(a, w.Name, RuleUnsatisfiableLimits,
				fmt.Sprintf("wave %q cannot roll out app %q on cluster %q: %s", w.Name, a.Name, a.clusterID(), reason)))
		}
	}

	for _, picked := range batchClusters(units, maxClusters, limits) {
		slices.Sort(picked) // units are sorted by cluster key
		batch := Batch{Clusters: make([]string, 0, len(picked))}
		n := 0
		for _, ui := range picked {
			n += len(units[ui].apps)
		}
		batch.Apps = make([]PlannedApp, 0, n)
		for _, ui := range picked {
			batch.Clusters = append(batch.Clusters, units[ui].key)
			for _, ai := range units[ui].apps {
				pa := planned(b.apps[ai])
				if len(b.policy.Tracks) > 0 {
					pa.Track = b.policy.trackName(b.track[ai])
				}
				batch.Apps = append(batch.Apps, pa)
			}
		}
		wave.Batches = append(wave.Batches, batch)
	}
	return wave, viol
}

func planned(a *App) PlannedApp {
	return PlannedApp{
		Name:          a.Name,
		Namespace:     a.Namespace,
		Instance:      a.Instance,
		Project:       a.Project,
		Cluster:       a.clusterKey(),
		Server:        a.Server,
		ClusterLabels: nonNil(a.ClusterLabels),
		Labels:        nonNil(a.Labels),
		AutomatedSync: a.AutomatedSync,
		Source:        a.Source,
	}
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// labelString writes labels as "k=v, k2=v2" in key order, "none" when empty.
func labelString(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(m[k])
	}
	return sb.String()
}

// AppKind is what the canary-first check compares across waves: the value of the policy's AppKindLabel on
// the Application when set, else the Application's name with its destination cluster's name removed
// ("guestbook-prd-eu-1" on cluster "prd-eu-1" is kind "guestbook"; so is "prd-eu-1-guestbook").
func (p *Policy) AppKind(a *App) string {
	if p.AppKindLabel != "" {
		if v := a.Labels[p.AppKindLabel]; v != "" {
			return v
		}
	}
	return kindFromName(a.Name, a.Cluster)
}

// kindFromName removes the last occurrence of the cluster name, as whole '-'-separated words, from name.
func kindFromName(name, cluster string) string {
	if cluster == "" {
		return name
	}
	norm := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, cluster)
	words := strings.Split(name, "-")
	cw := strings.Split(norm, "-")
	for start := len(words) - len(cw); start >= 0; start-- {
		if slices.Equal(words[start:start+len(cw)], cw) {
			rest := slices.Concat(words[:start], words[start+len(cw):])
			if len(rest) == 0 {
				return name
			}
			return strings.Join(rest, "-")
		}
	}
	return name
}
