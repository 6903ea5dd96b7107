package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParsePolicyExamples(t *testing.T) {
	tests := []struct {
		file  string
		waves []string
		check func(t *testing.T, p *Policy)
	}{
		{file: "sketch.yaml", waves: []string{"canary", "staging", "production"}, check: func(t *testing.T, p *Policy) {
			prod := p.Waves[2]
			if prod.MaxParallel == nil || *prod.MaxParallel != (Quantity{Value: 5}) {
				t.Errorf("production maxParallel = %v, want 5", prod.MaxParallel)
			}
			if len(prod.MaxPerLabel) != 1 || prod.MaxPerLabel[0] != (LabelLimit{Key: "region", Max: 1}) {
				t.Errorf("production maxPerLabel = %v", prod.MaxPerLabel)
			}
			if !prod.Approval.Required || len(prod.Approval.Teams) != 1 || prod.Approval.Teams[0] != "org/sre" || !prod.Approval.Before() {
				t.Errorf("production approval = %+v", prod.Approval)
			}
			g := prod.Gates[0].Prometheus
			if g.URL != "http://prom:9090" || *g.Max != 0.01 || g.Min != nil || time.Duration(g.For) != 5*time.Minute {
				t.Errorf("production gate = %+v", g)
			}
			if prod.FailureThreshold != (Quantity{Value: 10, Percent: true}) {
				t.Errorf("failureThreshold = %v", prod.FailureThreshold)
			}
			if time.Duration(p.Waves[0].Soak) != 10*time.Minute {
				t.Errorf("canary soak = %v", p.Waves[0].Soak)
			}
			if p.Commands["rollback"].Teams[0] != "org/sre" || p.Commands["pause"].Permission != PermWrite {
				t.Errorf("commands = %+v", p.Commands)
			}
			if p.OnFailure != OnFailurePause || p.AutomatedSync != AutomatedSyncForbid || p.OnConflict != ConflictWait || p.Prune {
				t.Errorf("onFailure %q automatedSync %q onConflict %q prune %v", p.OnFailure, p.AutomatedSync, p.OnConflict, p.Prune)
			}
		}},
		{file: "minimal.yaml", waves: []string{"everything"}, check: func(t *testing.T, p *Policy) {
			if !p.Waves[0].Selector.Empty() || p.Waves[0].MaxParallel != nil {
				t.Errorf("wave = %+v", p.Waves[0])
			}
		}},
		{file: "full.yaml", waves: []string{"canary", "staging", "production", "stragglers"}, check: func(t *testing.T, p *Policy) {
			if p.OnFailure != OnFailureRollback || p.AutomatedSync != AutomatedSyncDisableDuringRollout ||
				!p.RequireCanary || p.AppKindLabel != "app.kubernetes.io/name" || p.OnConflict != ConflictSupersede || !p.Prune || p.OutOfPlanSync != OutOfPlanSyncContinue {
				t.Errorf("top level = %+v", p)
			}
			if got := p.Waves[0].Selector.String(); got != "!deprecated,env in (canary,test),region,tier!=critical" {
				t.Errorf("canary selector = %q", got)
			}
			prod := p.Waves[2]
			if !prod.Production || !prod.Approval.Required || len(prod.Approval.Teams) != 2 {
				t.Errorf("production = %+v", prod)
			}
			if len(prod.MaxPerLabel) != 2 || prod.MaxPerLabel[1] != (LabelLimit{Key: "zone", Max: 2}) {
				t.Errorf("maxPerLabel = %v", prod.MaxPerLabel)
			}
			if *prod.Gates[0].Prometheus.Min != 0.99 {
				t.Errorf("min = %v", *prod.Gates[0].Prometheus.Min)
			}
			if last := p.Waves[3]; *last.MaxParallel != (Quantity{Value: 3}) || last.RequireCanary == nil || *last.RequireCanary {
				t.Errorf("stragglers = %+v", last)
			}
			if len(p.Commands) != 6 || p.Commands["approve"].Teams[0] != "acme/release-managers" {
				t.Errorf("commands = %+v", p.Commands)
			}
		}},
		{file: "anchors.yaml", waves: []string{"canary", "prod-eu", "prod-rest"}, check: func(t *testing.T, p *Policy) {
			eu, rest := p.Waves[1], p.Waves[2]
			if *eu.MaxParallel != (Quantity{Value: 2}) || time.Duration(eu.Soak) != 20*time.Minute || len(eu.MaxPerLabel) != 1 {
				t.Errorf("prod-eu did not get the merged settings: %+v", eu)
			}
			if time.Duration(rest.Soak) != time.Hour {
				t.Errorf("prod-rest soak = %v, want the explicit 1h over the merged 20m", rest.Soak)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "policies", tt.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ParsePolicy(path, data)
			if err != nil {
				t.Fatalf("ParsePolicy: %v", err)
			}
			var names []string
			for _, w := range p.Waves {
				names = append(names, w.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.waves, ",") {
				t.Errorf("waves = %v, want %v", names, tt.waves)
			}
			if len(p.Warnings) != 0 {
				t.Errorf("unexpected warnings: %v", p.Warnings)
			}
			if p.Source != path {
				t.Errorf("Source = %q", p.Source)
			}
			tt.check(t, p)
		})
	}
}

// head is a valid start of a policy; wave bodies follow at two spaces of indent.
const head = "apiVersion: fleetwave/v1\nwaves:\n"

type parseErrorCase struct {
	name string
	yaml string
	want []string // each must be the String() of one diagnostic, in order
}

// parseErrorCases are invalid policies with the exact diagnostics they get; the schema test reuses them.
func parseErrorCases() []parseErrorCase {
	return []parseErrorCase{
		{"empty", "", []string{`p.yaml:1:1: the policy is empty (hint: start with apiVersion: fleetwave/v1 and a list of waves)`}},
		{"comments only", "# nothing yet\n", []string{`p.yaml:1:1: the policy is empty (hint: start with apiVersion: fleetwave/v1 and a list of waves)`}},
		{"duplicate through an alias", head + "  - &w {name: a, selector: {}}\n  - *w\n", []string{
			`p.yaml:4:5: duplicate wave name "a" (hint: first defined at line 3; wave names must be unique)`}},
		{"merge key referring to itself", head + "  - &w {name: a, selector: {}, <<: *w}\n", []string{
			`p.yaml:3:36: merge keys (<<) in wave "a" nest too deep or refer to themselves`}},
		{"syntax", head + "  - name: a\n    selector: {\n", []string{`p.yaml:4: invalid YAML: did not find expected node content (hint: check the indentation, and quote values that contain ': ' or start with special characters)`}},
		{"not a mapping", "- a\n- b\n", []string{`p.yaml:1:1: the policy must be a mapping, not a list`}},
		{"two documents", head + "  - {name: a, selector: {}}\n---\nfoo: 1\n", []string{
			`p.yaml:4:1: the policy file has more than one YAML document (hint: keep the policy in one document)`}},
		{"missing apiVersion and waves", "onFailure: pause\n", []string{
			`p.yaml:1:1: the policy has no apiVersion (hint: start the policy with apiVersion: fleetwave/v1)`,
			`p.yaml:1:1: the policy has no waves (hint: list the waves in rollout order, each with a name and a selector)`}},
		{"wrong apiVersion", "apiVersion: fleetwave/v2\nwaves: [{name: a, selector: {}}]\n", []string{
			`p.yaml:1:13: unsupported apiVersion "fleetwave/v2" (hint: this fleetwave reads apiVersion: fleetwave/v1)`}},
		{"empty waves", "apiVersion: fleetwave/v1\nwaves: []\n", []string{
			`p.yaml:2:8: waves is empty (hint: list the waves in rollout order, each with a name and a selector)`}},
		{"unknown top-level field", head + "  - {name: a, selector: {}}\nonFailur: pause\n", []string{
			`p.yaml:4:1: unknown field "onFailur" in the policy (hint: did you mean "onFailure"?)`}},
		{"unknown wave field", head + "  - name: prod\n    selector: {}\n    maxParalel: 2\n", []string{
			`p.yaml:5:5: unknown field "maxParalel" in wave "prod" (hint: did you mean "maxParallel"?)`}},
		{"unknown field far from any", head + "  - name: prod\n    selector: {}\n    colour: blue\n", []string{
			`p.yaml:5:5: unknown field "colour" in wave "prod" (hint: known fields: approval, failureThreshold, gates, ` +
				`maxParallel, maxPerLabel, name, onFailure, production, requireCanary, selector, soak)`}},
		{"duplicate key", head + "  - name: a\n    selector: {}\n    soak: 1m\n    soak: 2m\n", []string{
			`p.yaml:6:5: duplicate key "soak" in wave "a" (hint: first set at line 5)`}},
		{"missing name", head + "  - selector: {}\n", []string{
			`p.yaml:3:5: wave 1 has no name (hint: give every wave a unique name: it appears in check-runs and in /approve <wave>)`}},
		{"missing selector", head + "  - name: a\n", []string{
			`p.yaml:3:5: wave "a" has no selector (hint: use selector: {} to take every app no earlier wave took)`}},
		{"duplicate wave names", head + "  - {name: a, selector: {}}\n  - name: a\n    selector: {matchLabels: {env: prd}}\n", []string{
			`p.yaml:4:5: duplicate wave name "a" (hint: first defined at line 3; wave names must be unique)`}},
		{"wave names differing only in case", head + "  - {name: prod, selector: {}}\n  - name: PROD\n    selector: {matchLabels: {env: prd}}\n", []string{
			`p.yaml:4:5: duplicate wave name "PROD" (hint: first defined at line 3 as "prod"; wave names must be unique whatever their case)`}},
		{"bad wave name", head + "  - {name: 'prod eu', selector: {}}\n  - {name: all, selector: {}}\n", []string{
			`p.yaml:3:12: invalid wave name "prod eu" (hint: use 1 to 63 letters, digits, '.', '_' or '-' (the name appears in check-runs and in /approve <wave>; "all" is reserved))`,
			`p.yaml:4:12: invalid wave name "all" (hint: use 1 to 63 letters, digits, '.', '_' or '-' (the name appears in check-runs and in /approve <wave>; "all" is reserved))`}},
		{"bad duration", head + "  - {name: a, selector: {}, soak: 10 minutes}\n", []string{
			`p.yaml:3:35: wave "a" soak: "10 minutes" is not a duration (hint: write a Go duration such as 90s, 10m or 1h30m)`}},
		{"duration without unit", head + "  - {name: a, selector: {}, soak: 600}\n", []string{
			`p.yaml:3:35: wave "a" soak 600 has no unit (hint: write a Go duration such as 90s, 10m or 1h30m)`}},
		{"negative duration", head + "  - {name: a, selector: {}, soak: -5m}\n", []string{
			`p.yaml:3:35: wave "a" soak: "-5m" is negative (hint: write a Go duration such as 90s, 10m or 1h30m)`}},
		{"percentage over 100", head + "  - {name: a, selector: {}, maxParallel: 150%}\n", []string{
			`p.yaml:3:42: wave "a" maxParallel: percentage "150%" is outside 0%..100% (hint: write a count such as 5 or a percentage such as "25%" (0% to 100%))`}},
		{"percentage not a number", head + "  - {name: a, selector: {}, maxParallel: abc%}\n", []string{
			`p.yaml:3:42: wave "a" maxParallel: "abc%" is not a percentage (hint: write a count such as 5 or a percentage such as "25%" (0% to 100%))`}},
		{"fractional percentage", head + "  - {name: a, selector: {}, failureThreshold: 2.5%}\n", []string{
			`p.yaml:3:47: wave "a" failureThreshold: "2.5%" is not a percentage (hint: write a count such as 5 or a percentage such as "25%" (0% to 100%))`}},
		{"negative count", head + "  - {name: a, selector: {}, maxParallel: -1}\n", []string{
			`p.yaml:3:42: wave "a" maxParallel: count -1 is negative (hint: write a count such as 5 or a percentage such as "25%" (0% to 100%))`}},
		{"quantity as list", head + "  - {name: a, selector: {}, maxParallel: [1]}\n", []string{
			`p.yaml:3:42: wave "a" maxParallel must be a count or a percentage, not a list (hint: write a count such as 5 or a percentage such as "25%" (0% to 100%))`}},
		{"maxPerLabel not a number", head + "  - {name: a, selector: {}, maxPerLabel: {region: one}}\n", []string{
			`p.yaml:3:51: wave "a" maxPerLabel region must be a whole number of 0 or more, not "one" (hint: write a whole number such as 1)`}},
		{"unknown operator", head + "  - name: a\n    selector: {matchExpressions: [{key: env, operator: in, values: [prd]}]}\n", []string{
			`p.yaml:4:56: wave "a" selector matchExpressions[0]: unknown operator "in" (hint: operators are In, NotIn, Exists and DoesNotExist; did you mean "In"?)`}},
		{"In without values", head + "  - name: a\n    selector: {matchExpressions: [{key: env, operator: In}]}\n", []string{
			`p.yaml:4:35: wave "a" selector matchExpressions[0]: In without values (hint: In and NotIn need at least one value)`}},
		{"Exists with values", head + "  - name: a\n    selector: {matchExpressions: [{key: env, operator: Exists, values: [x]}]}\n", []string{
			`p.yaml:4:72: wave "a" selector matchExpressions[0]: Exists with values (hint: Exists and DoesNotExist take no values)`}},
		{"expression without key", head + "  - name: a\n    selector: {matchExpressions: [{operator: Exists}]}\n", []string{
			`p.yaml:4:35: wave "a" selector matchExpressions[0] has no key (hint: every expression needs a key)`}},
		{"selector with unknown field", head + "  - name: a\n    selector: {env: prd}\n", []string{
			`p.yaml:4:16: unknown field "env" in wave "a" selector (hint: known fields: instances, matchExpressions, matchLabels)`}},
		{"matchLabels null value", head + "  - name: a\n    selector: {matchLabels: {env: }}\n", []string{
			`p.yaml:4:35: wave "a" selector matchLabels env must be a value, not nothing (hint: write the label value, quoted ("") when empty)`}},
		{"bad onFailure", head + "  - {name: a, selector: {}, onFailure: retry}\nonFailure: stop\n", []string{
			`p.yaml:3:40: wave "a" onFailure: unknown action "retry" (hint: use pause or rollback)`,
			`p.yaml:4:12: onFailure: unknown action "stop" (hint: use pause or rollback)`}},
		{"bad automatedSync", head + "  - {name: a, selector: {}}\nautomatedSync: off\n", []string{
			`p.yaml:4:16: automatedSync: unknown mode "off" (hint: use forbid (the default) or disable-during-rollout)`}},
		{"bad outOfPlanSync", head + "  - {name: a, selector: {}}\noutOfPlanSync: ignore\n", []string{
			`p.yaml:4:16: outOfPlanSync: unknown mode "ignore" (hint: use pause (the default: the rollout pauses) or continue (the apps are only reported))`}},
		{"bad onConflict", head + "  - {name: a, selector: {}}\nonConflict: queue\nprune: 1\n", []string{
			`p.yaml:4:13: onConflict: unknown mode "queue" (hint: use wait (the default: the newer rollout queues) or supersede (the older one stops))`,
			`p.yaml:5:8: prune must be true or false, not "1" (hint: write true or false)`}},
		{"bool as string", head + "  - {name: a, selector: {}, production: yes}\n", []string{
			`p.yaml:3:41: wave "a" production must be true or false, not "yes" (hint: write true or false)`}},
		{"bad team", head + "  - {name: a, selector: {}, approval: {teams: [sre]}}\n", []string{
			`p.yaml:3:48: wave "a" approval teams: "sre" is not a team (hint: write teams as org/team-slug, e.g. acme/sre)`}},
		{"teams but not required", head + "  - {name: a, selector: {}, approval: {required: false, teams: [acme/sre]}}\n", []string{
			`p.yaml:3:40: wave "a" approval names teams but says approval is not required (hint: drop required: false to ask those teams for approval, or drop the teams)`}},
		{"bad approval timing", head + "  - {name: a, selector: {}, approval: {when: during}}\n", []string{
			`p.yaml:3:46: wave "a" approval when must be before or after, not "during" (hint: before: no app of the wave syncs until someone approves (the default); after: the wave syncs and passes its soak and gates, then waits for approval before the next wave)`}},
		{"gate without url and bounds", head + "  - name: a\n    selector: {}\n    gates: [{prometheus: {query: up}}]\n", []string{
			`p.yaml:5:26: wave "a" gates[0] prometheus has no url (hint: give the Prometheus base URL, e.g. http://prometheus.monitoring:9090)`,
			`p.yaml:5:26: wave "a" gates[0] prometheus has neither max nor min (hint: the gate passes while the query's value stays at most max and/or at least min)`}},
		{"gate bad url and min over max", head + "  - name: a\n    selector: {}\n    gates: [{prometheus: {url: 'prom:9090', query: up, min: 2, max: 1}}]\n", []string{
			`p.yaml:5:26: wave "a" gates[0] prometheus min 2 is above max 1 (hint: min must not exceed max)`,
			`p.yaml:5:32: wave "a" gates[0] prometheus url "prom:9090" is not an http(s) URL (hint: give the Prometheus base URL, e.g. http://prometheus.monitoring:9090)`}},
		{"gate unknown provider", head + "  - name: a\n    selector: {}\n    gates: [{datadog: {query: up}}]\n", []string{
			`p.yaml:5:14: unknown field "datadog" in wave "a" gates[0] (hint: known fields: prometheus)`}},
		{"gate threshold not a number", head + "  - name: a\n    selector: {}\n    gates: [{prometheus: {url: 'http://p', query: up, max: .inf}}]\n", []string{
			`p.yaml:5:60: wave "a" gates[0] prometheus max must be a finite number, not ".inf" (hint: write a number such as 0.01)`}},
		{"unknown command", head + "  - {name: a, selector: {}}\ncommands:\n  deploy: {permission: write}\n", []string{
			`p.yaml:5:3: unknown field "deploy" in commands (hint: known fields: abort, approve, pause, plan, resume, rollback)`}},
		{"bad permission and empty rule", head + "  - {name: a, selector: {}}\ncommands:\n  pause: {permission: owner}\n  abort: {}\n", []string{
			`p.yaml:5:23: commands.pause.permission: unknown permission "owner" (hint: use read, triage, write, maintain or admin)`,
			`p.yaml:6:3: commands.abort says nobody may run /abort (hint: give a permission (read, triage, write, maintain, admin) and/or teams)`}},
		{"requireCanary without production wave", head + "  - {name: a, selector: {}}\nrequireCanary: true\n", []string{
			`p.yaml:4:1: requireCanary is on but no wave is marked production (hint: mark the production waves with production: true, or set requireCanary on a wave)`}},
		{"first wave requires canary", head + "  - {name: a, selector: {}, requireCanary: true}\n", []string{
			`p.yaml:3: wave "a" is the first wave, so it can never have a canary before it (hint: add a canary wave before it, or set requireCanary: false on it)`}},
		{"bad appKindLabel", head + "  - {name: a, selector: {}}\nappKindLabel: 'has space'\n", []string{
			`p.yaml:4:15: appKindLabel: "has space" is not a label key (hint: name an Application label key such as app.kubernetes.io/name)`}},
		{"diff.ignore rules", head + "  - {name: a, selector: {}}\ndiff:\n  ignore:\n    - {kind: Deployment, jsonPointers: [spec/replicas]}\n    - {kind: '*', jqPathExpressions: ['.metadata.labels[']}\n    - {jsonPointers: [/spec]}\n    - {kind: ConfigMap}\n  showChartLabels: maybe\n", []string{
			`p.yaml:6:41: diff.ignore[0].jsonPointers: "spec/replicas" is not a JSON pointer (hint: a JSON pointer starts with /, e.g. /spec/replicas (RFC 6901; ~1 stands for / in a key))`,
			`p.yaml:7:39: diff.ignore[1].jqPathExpressions: ".metadata.labels[" is not a jq path expression: unexpected token ")" (hint: write a jq path, e.g. .spec.template.spec.containers[] | select(.name == "app") | .image)`,
			`p.yaml:8:7: diff.ignore[2] has no kind (hint: name the kind the rule applies to (a glob: "*" for every kind))`,
			`p.yaml:9:7: diff.ignore[3] ignores nothing (hint: list the fields to ignore under jsonPointers or jqPathExpressions)`,
			`p.yaml:10:20: diff.showChartLabels must be true or false, not "maybe" (hint: write true or false)`}},
		{"unknown track class", head + "  - {name: a, selector: {}}\ntracks:\n  - name: fast\n    classes: [metadata, labels]\n", []string{
			`p.yaml:6:25: track 1: unknown class "labels" (hint: classes are ` + classList() + `)`}},
		{"class on two tracks", head + "  - {name: a, selector: {}}\ntracks:\n  - {name: fast, classes: [metadata]}\n  - {name: slow, classes: [crd, metadata]}\n", []string{
			`p.yaml:6:33: track 2: class "metadata" is already on track "fast" (hint: a class takes one track; the strictest of an app's classes' tracks wins)`}},
		{"track without name", head + "  - {name: a, selector: {}}\ntracks:\n  - {classes: [metadata]}\n", []string{
			`p.yaml:5:5: track 1 has no name (hint: give the track a name: it names the wave of a oneWave track and says why in the plan)`}},
		{"track with both modes", head + "  - {name: a, selector: {}}\ntracks:\n  - {name: odd, classes: [crd], oneWave: true, approveEveryWave: true}\n", []string{
			`p.yaml:5:33: track 1: oneWave and approveEveryWave exclude each other (hint: a oneWave track has no approval; use one of the two)`}},
		{"duplicate track names", head + "  - {name: a, selector: {}}\ntracks:\n  - {name: fast, classes: [metadata]}\n  - {name: Fast, classes: [scale]}\n", []string{
			`p.yaml:6:5: duplicate track name "Fast" (hint: first defined at line 5; track names must be unique)`}},
		{"track named standard", head + "  - {name: a, selector: {}}\ntracks:\n  - {name: standard, classes: [metadata]}\n", []string{
			`p.yaml:5:5: track 1: the name "standard" is reserved (hint: the standard track is the policy's waves as written; name this track otherwise)`}},
		{"oneWave track named as a wave", head + "  - {name: a, selector: {}}\ntracks:\n  - {name: A, classes: [metadata], oneWave: true}\n", []string{
			`p.yaml:5:1: track "A" has the name of a wave (hint: a oneWave track's apps go in a wave of its name; name the track otherwise)`}},
		{"empty track classes", head + "  - {name: a, selector: {}}\ntracks:\n  - {name: fast, classes: []}\n", []string{
			`p.yaml:5:27: track 1: classes is empty (hint: name the risk classes that take this track)`}},
		{"empty instances", head + "  - {name: a, selector: {instances: []}}\n", []string{
			`p.yaml:3:37: wave "a" selector instances is empty (hint: name the Argo CD instances the wave takes (instances: [eu, us]), or leave instances out to take every instance's)`}},
		{"instances not a list", head + "  - {name: a, selector: {instances: eu}}\n", []string{
			`p.yaml:3:37: wave "a" selector instances must be a list, not "eu"`}},
		{"an empty instance name", head + "  - {name: a, selector: {instances: [eu, \"\"]}}\n", []string{
			`p.yaml:3:37: wave "a" selector instances: an empty name (hint: write each instance's name as the instances file names it)`}},
		{"several errors in file order", head + "  - name: a\n    selector: {}\n    soak: forever\n  - name: b\n    selectr: {}\n", []string{
			`p.yaml:5:11: wave "a" soak: "forever" is not a duration (hint: write a Go duration such as 90s, 10m or 1h30m)`,
			`p.yaml:6:5: wave "b" has no selector (hint: use selector: {} to take every app no earlier wave took)`,
			`p.yaml:7:5: unknown field "selectr" in wave "b" (hint: did you mean "selector"?)`}},
	}
}

func TestParsePolicyErrors(t *testing.T) {
	for _, tt := range parseErrorCases() {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy("p.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("ParsePolicy accepted the policy: %+v", p)
			}
			var pe *PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *PolicyError: %v", err, err)
			}
			var got []string
			for _, d := range pe.Diagnostics {
				got = append(got, d.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Error() spans lines: %q", err.Error())
			}
		})
	}
}

func TestPolicyErrorIsOneLine(t *testing.T) {
	_, err := ParsePolicy("p.yaml", []byte(head+"  - name: a\n    soak: x\n"))
	want := `p.yaml:3:5: wave "a" has no selector (hint: use selector: {} to take every app no earlier wave took) [and 1 more; run fleetwave validate p.yaml]`
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v\nwant %s", err, want)
	}
}

func TestParsePolicyWarnings(t *testing.T) {
	src := head + `  - {name: all-apps, selector: {}}
  - {name: never, selector: {matchLabels: {env: prd}}}
  - {name: zero, selector: {matchLabels: {env: x}}, maxParallel: 0%, maxPerLabel: {region: 0}}
  - {name: prd-bare, production: true, selector: {matchLabels: {env: y}}}
  - {name: prd-soaked, production: true, soak: 5m, selector: {matchLabels: {env: z}}}
  - {name: prd-approved, production: true, approval: {}, selector: {matchLabels: {env: w}}}
`
	p, err := ParsePolicy("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range p.Warnings {
		got = append(got, d.String())
	}
	want := []string{
		`p.yaml:4: warning: wave "never" can never receive an app: wave "all-apps" (line 3) comes first and selects every app it would (hint: reorder the waves or narrow the earlier selector)`,
		`p.yaml:5: warning: wave "zero": maxParallel 0% admits no cluster; its apps will be reported as unsatisfiable-limits (hint: use at least 1)`,
		`p.yaml:5: warning: wave "zero": maxPerLabel region: 0 admits no cluster labelled region; its apps there will be reported as unsatisfiable-limits (hint: use at least 1)`,
		`p.yaml:5: warning: wave "zero" can never receive an app: wave "all-apps" (line 3) comes first and selects every app it would (hint: reorder the waves or narrow the earlier selector)`,
		`p.yaml:6: warning: wave "prd-bare" is marked production but has neither an approval nor a soak: it starts as soon as the wave before it succeeds, and the next wave as soon as it has synced (hint: add approval: {} to hold it until someone approves, or soak: 10m to watch it before the next wave)`,
		`p.yaml:6: warning: wave "prd-bare" can never receive an app: wave "all-apps" (line 3) comes first and selects every app it would (hint: reorder the waves or narrow the earlier selector)`,
		`p.yaml:7: warning: wave "prd-soaked" can never receive an app: wave "all-apps" (line 3) comes first and selects every app it would (hint: reorder the waves or narrow the earlier selector)`,
		`p.yaml:8: warning: wave "prd-approved" can never receive an app: wave "all-apps" (line 3) comes first and selects every app it would (hint: reorder the waves or narrow the earlier selector)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParsePolicyLimits(t *testing.T) {
	big := make([]byte, MaxPolicyBytes+1)
	if _, err := ParsePolicy("big.yaml", big); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Errorf("oversized policy: %v", err)
	}
	// An alias bomb must be refused quickly, not expanded.
	bomb := "apiVersion: fleetwave/v1\nx-a: &a [{key: e, operator: Exists}, {key: e, operator: Exists}]\n"
	prev := "a"
	for i := range 12 {
		name := string(rune('b' + i))
		bomb += "x-" + name + ": &" + name + " [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]\n"
		prev = name
	}
	bomb += "waves:\n" + strings.Repeat("  - {name: w, selector: {matchExpressions: *"+prev+"}}\n", 1)
	start := time.Now()
	_, err := ParsePolicy("bomb.yaml", []byte(bomb))
	if err == nil {
		t.Fatal("alias bomb accepted")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("alias bomb took %v", d)
	}
}

func TestQuantity(t *testing.T) {
	tests := []struct {
		in          string
		total, want int
		floor       int
	}{
		{"5", 100, 5, 5},
		{"25%", 10, 3, 2}, // rounds up for limits, down for failure thresholds
		{"25%", 8, 2, 2},
		{"1%", 3, 1, 0}, // at least 1 cluster
		{"100%", 7, 7, 7},
		{"0%", 7, 0, 0},
		{"0", 7, 0, 0},
		{"50%", 0, 0, 0},
	}
	for _, tt := range tests {
		q, err := parseQuantity(tt.in)
		if err != nil {
			t.Fatalf("parseQuantity(%q): %v", tt.in, err)
		}
		if got := q.Of(tt.total); got != tt.want {
			t.Errorf("%s.Of(%d) = %d, want %d", tt.in, tt.total, got, tt.want)
		}
		if got := q.Floor(tt.total); got != tt.floor {
			t.Errorf("%s.Floor(%d) = %d, want %d", tt.in, tt.total, got, tt.floor)
		}
		if q.String() != tt.in {
			t.Errorf("String() = %q, want %q", q.String(), tt.in)
		}
	}
	for _, bad := range []string{"150%", "abc%", "-1", "1.5", "+3", "%", ""} {
		if _, err := parseQuantity(bad); err == nil {
			t.Errorf("parseQuantity(%q) accepted", bad)
		}
	}
}

func TestDurationString(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 90 * time.Second: "1m30s", 10 * time.Minute: "10m",
		time.Hour: "1h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s", 1500 * time.Millisecond: "1.5s"} {
		if got := Duration(d).String(); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

// An approval holds its wave before it starts unless it says when: after; the plan carries the timing and who
// may approve, and a plan stored before timings existed (no "when") keeps the meaning it had: after.
func TestApprovalTiming(t *testing.T) {
	tests := []struct {
		name, approval string
		wantBefore     bool
		wantApprovers  string
	}{
		{"default is before", "{}", true, "write permission"},
		{"explicit before with teams", "{when: before, teams: [acme/sre]}", true, "write permission, and membership of acme/sre"},
		{"after", "{when: after}", false, "write permission"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy("p.yaml", []byte(head+"  - {name: a, selector: {}, approval: "+tc.approval+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			pl := Build(p, []App{{Name: "x", Cluster: "c"}})
			a := pl.Waves[0].Gates.Approval
			if a == nil || a.Before() != tc.wantBefore || a.After() == tc.wantBefore || a.Approvers != tc.wantApprovers {
				t.Fatalf("approval = %+v, want before=%v approvers %q", a, tc.wantBefore, tc.wantApprovers)
			}
		})
	}
	legacy := &Approval{Required: true}
	if legacy.Before() || !legacy.After() {
		t.Errorf("a stored approval without when must keep its old meaning (after): %+v", legacy)
	}
}
