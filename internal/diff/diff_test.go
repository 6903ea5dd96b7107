package diff

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/golden"
	"github.com/fleetwave/fleetwave/internal/testkit/objtest"
)

const (
	deployV1 = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: prod}, spec: {replicas: 2, template: {spec: {containers: [{name: web, image: "web:1.0"}]}}}}`
	deployV2 = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: prod}, spec: {replicas: 3, template: {spec: {containers: [{name: web, image: "web:1.1"}]}}}}`
	svc      = `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: prod}, spec: {ports: [{port: 80}]}}`
	cm       = `{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: prod}, data: {a: "1"}}`
	job      = `{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: prod, annotations: {argocd.argoproj.io/hook: PreSync}}, spec: {template: {spec: {containers: [{name: m, image: "m:1"}]}}}}`
	jobV2    = `{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: prod, annotations: {argocd.argoproj.io/hook: PreSync}}, spec: {template: {spec: {containers: [{name: m, image: "m:2"}]}}}}`
	helmTest = `{apiVersion: v1, kind: Pod, metadata: {name: t, namespace: prod, annotations: {helm.sh/hook: post-install}}}`
)

func TestCompareClassifiesAndOrders(t *testing.T) {
	base := objtest.Objs(t, svc, deployV1, cm, job)
	head := objtest.Objs(t, deployV2, svc, helmTest, jobV2, `{apiVersion: v1, kind: ConfigMap, metadata: {name: new, namespace: prod}, data: {b: "2"}}`)
	res, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Resources {
		got = append(got, fmt.Sprintf("%s %s", r.Change, r.Key))
	}
	want := []string{
		"removed ConfigMap prod/cfg",
		"added ConfigMap prod/new",
		"modified apps/Deployment prod/web",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resources = %q\nwant %q", got, want)
	}
	if res.Summary != (Summary{Added: 1, Modified: 1, Removed: 1, Unchanged: 1}) {
		t.Fatalf("summary = %+v", res.Summary)
	}
	var hooks []string
	for _, h := range res.Hooks {
		hooks = append(hooks, fmt.Sprintf("%s %s %v", h.Change, h.Key, h.HookTypes))
	}
	wantHooks := []string{"added Pod prod/t [PostSync]", "modified batch/Job prod/migrate [PreSync]"}
	if !reflect.DeepEqual(hooks, wantHooks) {
		t.Fatalf("hooks = %q\nwant %q", hooks, wantHooks)
	}
	if !res.Summary.Changed() {
		t.Fatal("Changed() = false")
	}
}

func TestCompareUnchangedHooksAreListedButNotCounted(t *testing.T) {
	res, err := Compare(objtest.Objs(t, job, svc), objtest.Objs(t, svc, job), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 0 || res.Summary.Changed() {
		t.Fatalf("resources = %+v, summary %+v", res.Resources, res.Summary)
	}
	if len(res.Hooks) != 1 || res.Hooks[0].Change != Unchanged || res.Hooks[0].Diff != "" {
		t.Fatalf("hooks = %+v", res.Hooks)
	}
}

func TestCompareDuplicateKeysLastWinsWithWarning(t *testing.T) {
	cm2 := strings.Replace(cm, `a: "1"`, `a: "2"`, 1)
	res, err := Compare(objtest.Objs(t, cm), objtest.Objs(t, cm, cm2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 1 || !strings.Contains(res.Resources[0].Diff, `+  a: "2"`) {
		t.Fatalf("resources = %+v", res.Resources)
	}
	if want := []string{"Resource ConfigMap prod/cfg appeared 2 times among application resources."}; !reflect.DeepEqual(res.Warnings, want) {
		t.Fatalf("warnings = %q", res.Warnings)
	}
}

func TestCompareDefaultsNamespaces(t *testing.T) {
	noNS := `{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}, data: {a: "1"}}`
	nsWithNS := `{apiVersion: v1, kind: Namespace, metadata: {name: team, namespace: oops}}`
	crd := `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}`
	res, err := Compare(nil, objtest.Objs(t, noNS, nsWithNS, crd), Options{Namespace: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Resources {
		got = append(got, r.Key.String())
	}
	want := []string{"ConfigMap prod/cfg", "Namespace team", "example.com/Widget prod/w"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("keys = %q, want %q", got, want)
	}
	// Unchanged objects compare equal whatever the namespace defaulting.
	res, err = Compare(objtest.Objs(t, noNS), objtest.Objs(t, strings.Replace(noNS, "{name: cfg}", "{name: cfg, namespace: prod}", 1)), Options{Namespace: "prod"})
	if err != nil || len(res.Resources) != 0 {
		t.Fatalf("explicit and defaulted namespace differ: %+v %v", res.Resources, err)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func secret(data, stringData map[string]string, annotations map[string]string) string {
	o := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "prod"}}
	if annotations != nil {
		o["metadata"].(map[string]any)["annotations"] = annotations
	}
	if data != nil {
		d := map[string]any{}
		for k, v := range data {
			d[k] = b64(v)
		}
		o["data"] = d
	}
	if stringData != nil {
		o["stringData"] = stringData
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// The values used in Secret fixtures; none may appear in any output, plain or base64.
var fixtureSecrets = []string{"s3cr3t-old-password", "s3cr3t-new-password", "s3cr3t-same-user", "s3cr3t-gone-token", "s3cr3t-new-key"}

func assertNoSecrets(t *testing.T, what, text string) {
	t.Helper()
	for _, v := range fixtureSecrets {
		for _, form := range []string{v, b64(v)} {
			if strings.Contains(text, form) {
				t.Fatalf("%s leaks a secret value (%q):\n%s", what, form, text)
			}
		}
	}
}

func TestSecretsAreMasked(t *testing.T) {
	cases := []struct {
		name       string
		base, head []string
		wantKeys   []SecretKey
		wantLines  []string
	}{
		{
			name: "data change, key added and removed",
			base: []string{secret(map[string]string{"password": "s3cr3t-old-password", "user": "s3cr3t-same-user", "token": "s3cr3t-gone-token"}, nil, nil)},
			head: []string{secret(map[string]string{"password": "s3cr3t-new-password", "user": "s3cr3t-same-user", "apikey": "s3cr3t-new-key"}, nil, nil)},
			wantKeys: []SecretKey{
				{Key: "data.apikey", Change: "added"}, {Key: "data.password", Change: "changed"}, {Key: "data.token", Change: "removed"},
			},
			wantLines: []string{"+  apikey: <added>", "-  password: <previous value>", "+  password: <changed>", "-  token: <removed>", "   user: <unchanged>"},
		},
		{
			name:      "stringData on one side, same value in data on the other",
			base:      []string{secret(map[string]string{"password": "s3cr3t-old-password"}, nil, nil)},
			head:      []string{secret(nil, map[string]string{"password": "s3cr3t-old-password"}, nil)},
			wantKeys:  nil,
			wantLines: nil,
		},
		{
			name:      "stringData change",
			base:      []string{secret(nil, map[string]string{"password": "s3cr3t-old-password"}, nil)},
			head:      []string{secret(nil, map[string]string{"password": "s3cr3t-new-password"}, nil)},
			wantKeys:  []SecretKey{{Key: "data.password", Change: "changed"}},
			wantLines: []string{"+  password: <changed>"},
		},
		{
			name: "last-applied annotation",
			base: []string{secret(map[string]string{"user": "s3cr3t-same-user"}, nil, map[string]string{lastApplied: `{"data":{"password":"` + b64("s3cr3t-old-password") + `"}}`})},
			head: []string{secret(map[string]string{"user": "s3cr3t-same-user"}, nil, map[string]string{lastApplied: `{"data":{"password":"` + b64("s3cr3t-new-password") + `"}}`})},
			wantKeys: []SecretKey{
				{Key: "metadata.annotations." + lastApplied, Change: "changed"},
			},
			wantLines: []string{"+    kubectl.kubernetes.io/last-applied-configuration: <changed>"},
		},
		{
			name:      "secret added",
			head:      []string{secret(map[string]string{"password": "s3cr3t-new-password"}, nil, nil)},
			wantKeys:  []SecretKey{{Key: "data.password", Change: "added"}},
			wantLines: []string{"+  password: <added>"},
		},
		{
			name:      "secret removed",
			base:      []string{secret(nil, map[string]string{"password": "s3cr3t-old-password"}, nil)},
			wantKeys:  []SecretKey{{Key: "data.password", Change: "removed"}},
			wantLines: []string{"-  password: <removed>"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Compare(objtest.Objs(t, tc.base...), objtest.Objs(t, tc.head...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(res)
			assertNoSecrets(t, "result", string(out))
			if len(tc.wantKeys) == 0 {
				if len(res.Resources) != 0 {
					t.Fatalf("want no change, got %+v", res.Resources)
				}
				return
			}
			if len(res.Resources) != 1 {
				t.Fatalf("resources = %+v", res.Resources)
			}
			r := res.Resources[0]
			if !reflect.DeepEqual(r.SecretKeys, tc.wantKeys) {
				t.Errorf("secret keys = %+v\nwant %+v", r.SecretKeys, tc.wantKeys)
			}
			for _, l := range tc.wantLines {
				if !strings.Contains(r.Diff, l+"\n") {
					t.Errorf("diff lacks %q:\n%s", l, r.Diff)
				}
			}
			if strings.Contains(r.Diff, "stringData") {
				t.Errorf("stringData not folded into data:\n%s", r.Diff)
			}
		})
	}
}

func TestNormalizeIsStableAndMasked(t *testing.T) {
	a, err := Normalize(objtest.Objs(t, deployV1, secret(map[string]string{"password": "s3cr3t-old-password"}, nil, nil), svc))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Normalize(objtest.Objs(t, svc, deployV1, secret(map[string]string{"password": "s3cr3t-old-password"}, nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("order-dependent:\n%s\n---\n%s", a, b)
	}
	assertNoSecrets(t, "Normalize", a)
	golden.Assert(t, "normalize.golden.yaml", a)
}

func TestUnifiedGolden(t *testing.T) {
	res, err := Compare(objtest.Objs(t, deployV1, svc, job), objtest.Objs(t, deployV2, jobV2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range append(res.Resources, res.Hooks...) {
		b.WriteString(r.Diff)
	}
	golden.Assert(t, "compare.golden.diff", b.String())
}

// TestUnifiedMatchesGNUDiff checks the hunk layout against diff(1) on random line edits.
func TestUnifiedMatchesGNUDiff(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("diff(1) not installed")
	}
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	for n := 0; n < 60; n++ {
		var a []string
		for i := 0; i < 5+rng.Intn(40); i++ {
			a = append(a, fmt.Sprintf("line %d", rng.Intn(1000)))
		}
		b := append([]string(nil), a...)
		for e := 0; e < 1+rng.Intn(4); e++ {
			p := rng.Intn(len(b) + 1)
			switch rng.Intn(3) {
			case 0:
				b = append(b[:p], append([]string{fmt.Sprintf("new %d", rng.Intn(1000))}, b[p:]...)...)
			case 1:
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			default:
				if p < len(b) {
					b[p] = fmt.Sprintf("changed %d", rng.Intn(1000))
				}
			}
		}
		at, bt := strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n"
		for _, c := range []int{3, 1} {
			got := Unified(at, bt, "a", "b", c)
			af, bf := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			_ = os.WriteFile(af, []byte(at), 0o644)
			_ = os.WriteFile(bf, []byte(bt), 0o644)
			out, _ := exec.Command("diff", fmt.Sprintf("-U%d", c), "--label", "a", "--label", "b", af, bf).Output()
			// Both are minimal diffs but may pick different equal-cost alignments; compare the counts of
			// removed and added lines and the number of hunks, which must agree.
			if stat(got) != stat(string(out)) {
				t.Fatalf("case %d context %d:\nours:\n%s\ndiff(1):\n%s", n, c, got, out)
			}
		}
	}
}

func stat(d string) string {
	var hunks, minus, plus int
	for _, l := range strings.Split(d, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			hunks++
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
		case strings.HasPrefix(l, "-"):
			minus++
		case strings.HasPrefix(l, "+"):
			plus++
		}
	}
	return fmt.Sprintf("%d hunks -%d +%d", hunks, minus, plus)
}

func TestUnifiedEdges(t *testing.T) {
	if got := Unified("a\n", "a\n", "x", "y", 3); got != "" {
		t.Fatalf("equal texts: %q", got)
	}
	want := "--- /dev/null\n+++ head\n@@ -0,0 +1,2 @@\n+a\n+b\n"
	if got := Unified("", "a\nb\n", "/dev/null", "head", 3); got != want {
		t.Fatalf("added:\n%q\nwant\n%q", got, want)
	}
	want = "--- base\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"
	if got := Unified("a\n", "", "base", "/dev/null", 3); got != want {
		t.Fatalf("removed:\n%q\nwant\n%q", got, want)
	}
}
