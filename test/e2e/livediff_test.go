package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/livediff"
	"github.com/fleetwave/fleetwave/internal/preview"
	"github.com/fleetwave/fleetwave/internal/testkit/gittest"
)

const (
	ldApp       = "ld-main"
	ldNamespace = "e2e-livediff"
	// Secret values: they must never appear in fleetwave's comparison.
	ldBaseToken = "base-token-7f3a"
	ldLiveToken = "live-token-9c1e"
)

func ldDeployment(name, image string) string {
	return ldDeploymentWith(name, image, 1, "")
}

// ldDeploymentWith is a Deployment with replicas and, when not empty, the sync-options annotation.
func ldDeploymentWith(name, image string, replicas int, syncOptions string) string {
	meta := "{name: " + name + "}"
	if syncOptions != "" {
		meta = "{name: " + name + ", annotations: {argocd.argoproj.io/sync-options: '" + syncOptions + "'}}"
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: %[3]s
spec:
  replicas: %[4]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: app, image: %[2]s}]
`, name, image, meta, replicas)
}

func ldSecret(name, token string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: %s}\ntype: Opaque\ndata: {token: %s}\n", name, base64.StdEncoding.EncodeToString([]byte(token)))
}

// ldManifests is the app's directory at base (head: the untouched Deployment's image changes, and the
// replicas of the Deployments the trusted manager scales go from 1 to 2).
func ldManifests(image string, replicas int) map[string]string {
	return map[string]string{
		"deployments.yaml": strings.Join([]string{ldDeploymentWith("scaled", "registry.k8s.io/pause:3.10", replicas, ""),
			ldDeploymentWith("scaled-ssa", "registry.k8s.io/pause:3.10", replicas, "ServerSideApply=true"),
			ldDeployment("scaled-untrusted", "registry.k8s.io/pause:3.10"), ldDeployment("edited", "registry.k8s.io/pause:3.10"),
			ldDeployment("untouched", image)}, "---\n"),
		"configmaps.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
data: {color: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: tuned}
data: {color: blue, e2e-ignored: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: untouched-cm}
data: {a: b, e2e-ignored: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: gone}
data: {a: b}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: labelled
  labels: {e2e.fleetwave.io/ignored: a}
data: {a: b}
`,
		"secrets.yaml": ldSecret("creds", ldBaseToken) + "---\n" + ldSecret("creds-same", ldBaseToken),
	}
}

// ldCase is one live change (or none) and the resource it is about.
type ldCase struct {
	key    string // fleetwave's key: group/Kind namespace/name
	change string
	do     [][]string // kubectl arguments
	stdin  string
}

// TestLiveDiffAgainstRealArgoCD syncs an app at base, changes its live objects in several ways, and requires
// fleetwave's live comparison (internal/edge/argocd/livediff, reading the same Argo CD's API) to agree with Argo CD's own
// status.resources, resource by resource: OutOfSync is fleetwave's drift (or an extraneous resource Argo CD
// ignores), requiresPruning its extraneous ones.
func TestLiveDiffAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	kubectl, kubeconfig := findKubectl(t)
	ctx := context.Background()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}

	// A file:// repository with the app at base and at head.
	work := t.TempDir()
	checkout, bare := filepath.Join(work, "src"), filepath.Join(work, "livediff.git")
	write := func(files map[string]string) {
		for name, body := range files {
			p := filepath.Join(checkout, "app", name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, checkout, "init", "-q", "-b", "main")
	baseFiles, headFiles := ldManifests("registry.k8s.io/pause:3.10", 1), ldManifests("registry.k8s.io/pause:3.9", 2)
	write(baseFiles)
	gittest.Run(t, checkout, "add", "-A")
	gittest.Run(t, checkout, "commit", "-q", "-m", "base")
	baseSHA := gittest.Run(t, checkout, "rev-parse", "HEAD")
	write(headFiles)
	gittest.Run(t, checkout, "commit", "-q", "-am", "head")
	gittest.Run(t, work, "clone", "-q", "--bare", checkout, bare)

	// The app, at base, trusting the field manager e2e-scaler with Deployment "scaled" only.
	app := &v1alpha1.Application{}
	app.Name, app.Namespace = ldApp, "argocd"
	app.Labels = map[string]string{"suite": "livediff"}
	app.Spec = v1alpha1.ApplicationSpec{
		Project:     "default",
		Source:      &v1alpha1.ApplicationSource{RepoURL: "file://" + bare, Path: "app", TargetRevision: baseSHA},
		Destination: v1alpha1.ApplicationDestination{Server: v1alpha1.KubernetesInternalAPIServerAddr, Namespace: ldNamespace},
		SyncPolicy:  &v1alpha1.SyncPolicy{SyncOptions: v1alpha1.SyncOptions{"CreateNamespace=true"}},
		IgnoreDifferences: []v1alpha1.ResourceIgnoreDifferences{
			{Group: "apps", Kind: "Deployment", Name: "scaled", ManagedFieldsManagers: []string{"e2e-scaler"}},
			{Group: "apps", Kind: "Deployment", Name: "scaled-ssa", ManagedFieldsManagers: []string{"e2e-scaler"}},
		},
	}
	body, err := json.Marshal(app)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, e, http.MethodPost, "/api/v1/applications?upsert=true&validate=false", body, nil); err != nil {
		t.Fatalf("creating %s: %v", ldApp, err)
	}
	t.Cleanup(func() {
		if os.Getenv("FLEETWAVE_E2E_KEEP") == "1" {
			return
		}
		_ = call(context.Background(), e, http.MethodDelete, "/api/v1/applications/"+ldApp+"?cascade=true&appNamespace=argocd", nil, nil)
	})
	syncAndWait(t, c, "argocd/"+ldApp, baseSHA)

	tracking := func(kind, name string) string { return ldApp + ":/" + kind + ":" + ldNamespace + "/" + name }
	extraCM := func(name, compareOptions string) string {
		anns := map[string]string{"argocd.argoproj.io/tracking-id": tracking("ConfigMap", name)}
		if compareOptions != "" {
			anns["argocd.argoproj.io/compare-options"] = compareOptions
		}
		b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ldNamespace, "annotations": anns}, "data": map[string]string{"a": "b"}})
		return string(b)
	}
	liveToken := base64.StdEncoding.EncodeToString([]byte(ldLiveToken))
	ns := []string{"-n", ldNamespace}
	cases := []ldCase{
		{key: "apps/Deployment " + ldNamespace + "/scaled", change: "scaled to 4 by field manager e2e-scaler, which the app trusts (managedFieldsManagers)",
			do: [][]string{append(ns, "patch", "deployment", "scaled", "--subresource=scale", "--type=merge", "-p", `{"spec":{"replicas":4}}`, "--field-manager=e2e-scaler")}},
		{key: "apps/Deployment " + ldNamespace + "/scaled-ssa", change: "applied server-side (no last-applied), scaled to 4 by trusted e2e-scaler",
			do: [][]string{append(ns, "patch", "deployment", "scaled-ssa", "--subresource=scale", "--type=merge", "-p", `{"spec":{"replicas":4}}`, "--field-manager=e2e-scaler")}},
		{key: "apps/Deployment " + ldNamespace + "/scaled-untrusted", change: "scaled to 4 by e2e-scaler, not trusted for this Deployment",
			do: [][]string{append(ns, "patch", "deployment", "scaled-untrusted", "--subresource=scale", "--type=merge", "-p", `{"spec":{"replicas":4}}`, "--field-manager=e2e-scaler")}},
		{key: "apps/Deployment " + ldNamespace + "/edited", change: "replicas set to 3 by hand (manager e2e-editor)",
			do: [][]string{append(ns, "patch", "deployment", "edited", "--type=merge", "-p", `{"spec":{"replicas":3}}`, "--field-manager=e2e-editor")}},
		{key: "apps/Deployment " + ldNamespace + "/untouched", change: "none (head changes its image)"},
		{key: "ConfigMap " + ldNamespace + "/plain", change: "data.color changed",
			do: [][]string{append(ns, "patch", "configmap", "plain", "--type=merge", "-p", `{"data":{"color":"red"}}`)}},
		{key: "ConfigMap " + ldNamespace + "/tuned", change: "data.e2e-ignored changed (argocd-cm ignoreDifferences.ConfigMap)",
			do: [][]string{append(ns, "patch", "configmap", "tuned", "--type=merge", "-p", `{"data":{"e2e-ignored":"2"}}`)}},
		{key: "ConfigMap " + ldNamespace + "/untouched-cm", change: "none (has the system-ignored key)"},
		{key: "ConfigMap " + ldNamespace + "/labelled", change: "label e2e.fleetwave.io/ignored changed (argocd-cm ignoreDifferences.all)",
			do: [][]string{append(ns, "label", "configmap", "labelled", "e2e.fleetwave.io/ignored=b", "--overwrite")}},
		{key: "ConfigMap " + ldNamespace + "/gone", change: "deleted",
			do: [][]string{append(ns, "delete", "configmap", "gone", "--wait=true")}},
		{key: "ConfigMap " + ldNamespace + "/scratch", change: "created live, tracked, IgnoreExtraneous",
			do: [][]string{{"create", "-f", "-"}}, stdin: extraCM("scratch", "IgnoreExtraneous")},
		{key: "ConfigMap " + ldNamespace + "/leftover", change: "created live, tracked (Argo CD would prune it)",
			do: [][]string{{"create", "-f", "-"}}, stdin: extraCM("leftover", "")},
		{key: "Secret " + ldNamespace + "/creds", change: "data.token value changed",
			do: [][]string{append(ns, "patch", "secret", "creds", "--type=merge", "-p", `{"data":{"token":"`+liveToken+`"}}`)}},
		{key: "Secret " + ldNamespace + "/creds-same", change: "none"},
	}
	for _, cs := range cases {
		for _, args := range cs.do {
			cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
			if cs.stdin != "" {
				cmd.Stdin = strings.NewReader(cs.stdin)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	}

	// Argo CD's verdict after it saw the changes: refresh (the answer comes after that reconcile) until two
	// reconciles in a row agree.
	var argo *v1alpha1.Application
	var prev string
	for i := 0; ; i++ {
		time.Sleep(2 * time.Second)
		a, err := c.GetApplication(ctx, "argocd/"+ldApp, v1alpha1.RefreshTypeNormal)
		if err != nil {
			t.Fatal(err)
		}
		cur := statusKey(a.Status.Resources)
		if cur == prev && strings.Contains(cur, "leftover") && strings.Contains(cur, "scratch") {
			argo = a
			break
		}
		if i > 30 {
			t.Fatalf("Argo CD's status.resources never settled: %s", cur)
		}
		prev = cur
	}

	// fleetwave's comparison, through the same API, with the renders of base and head.
	parse := func(files map[string]string) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		names := make([]string, 0, len(files))
		for n := range files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			for _, doc := range strings.Split(files[n], "---\n") {
				var m map[string]any
				if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
					t.Fatal(err)
				}
				if m != nil {
					out = append(out, &unstructured.Unstructured{Object: m})
				}
			}
		}
		return out
	}
	lives, err := livediff.New(c, livediff.Options{Server: e.ArgoCDURL}).CompareLive(ctx, []preview.LiveApp{{
		App: app, Base: parse(baseFiles), Head: parse(headFiles), BaseNamespace: ldNamespace, HeadNamespace: ldNamespace,
		RepoURLs: []string{"file://" + bare}, // this repository: the app's source
	}})
	if err != nil {
		t.Fatal(err)
	}
	l := lives[0]
	if l == nil || l.Missing || l.Error != "" {
		t.Fatalf("fleetwave's live comparison: %+v", l)
	}
	js, _ := json.Marshal(l)
	for _, v := range []string{ldBaseToken, ldLiveToken, base64.StdEncoding.EncodeToString([]byte(ldBaseToken)), liveToken} {
		if strings.Contains(string(js), v) {
			t.Fatalf("fleetwave's comparison holds a Secret value:\n%s", js)
		}
	}

	in := func(list []string, k string) bool {
		for _, x := range list {
			if x == k {
				return true
			}
		}
		return false
	}
	status := map[string]v1alpha1.ResourceStatus{}
	for _, r := range argo.Status.Resources {
		k := r.Kind + " " + r.Namespace + "/" + r.Name
		if r.Group != "" {
			k = r.Group + "/" + k
		}
		status[k] = r
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-45s %-80s %-26s %-26s %s\n", "resource", "live change", "Argo CD", "fleetwave", "agree")
	agree, outOfSync, drift := 0, 0, 0
	for _, cs := range cases {
		r, ok := status[cs.key]
		argoSays := "absent"
		if ok {
			argoSays = string(r.Status)
			if r.RequiresPruning {
				argoSays += " (prune)"
			}
		}
		fw := "Synced"
		switch {
		case in(l.IgnoredExtraneous, cs.key):
			fw = "IgnoredExtraneous"
		case in(l.Extraneous, cs.key):
			fw = "Drift (extraneous)"
		case in(l.Drift, cs.key):
			fw = "Drift"
			if sk := l.DriftSecretKeys[cs.key]; len(sk) > 0 {
				fw += " " + strings.Join(sk, ",")
			}
		}
		argoOut := ok && r.Status == v1alpha1.SyncStatusCodeOutOfSync
		fwOut := fw != "Synced"
		ok2 := argoOut == fwOut && (ok && r.RequiresPruning) == (in(l.Extraneous, cs.key) || in(l.IgnoredExtraneous, cs.key))
		if argoOut {
			outOfSync++
		}
		if fwOut {
			drift++
		}
		mark := "yes"
		if ok2 {
			agree++
		} else {
			mark = "NO"
		}
		fmt.Fprintf(&table, "%-45s %-80s %-26s %-26s %s\n", cs.key, cs.change, argoSays, fw, mark)
	}
	fmt.Fprintf(&table, "agreement: %d of %d cases (Argo CD OutOfSync %d, fleetwave drift or extraneous %d); app sync status %s\n",
		agree, len(cases), outOfSync, drift, argo.Status.Sync.Status)
	t.Log(table.String())
	if agree != len(cases) {
		t.Errorf("fleetwave's live comparison disagrees with Argo CD in %d of %d cases; fleetwave: %s", len(cases)-agree, len(cases), js)
	}
	// Every resource Argo CD lists must be one of the cases (nothing unaccounted for).
	for k := range status {
		found := false
		for _, cs := range cases {
			found = found || cs.key == k
		}
		if !found {
			t.Errorf("Argo CD lists %s, which no case covers", k)
		}
	}
	// The live diff of the head (replicas 1 → 2 there): e2e-scaler owns the replicas of the trusted
	// Deployments, so a sync leaves them at 4 and the live diff must not show them.
	for _, r := range l.LiveDiff {
		if (r.Key.Name == "scaled" || r.Key.Name == "scaled-ssa") && strings.Contains(r.Diff, "replicas") {
			t.Errorf("the live diff shows replicas of %s, which e2e-scaler owns:\n%s", r.Key.Name, r.Diff)
		}
	}
}

// statusKey summarises status.resources for "did it settle".
func statusKey(rs []v1alpha1.ResourceStatus) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s/%s/%s=%s,%v", r.Kind, r.Namespace, r.Name, r.Status, r.RequiresPruning))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// findKubectl returns the kubectl hack/e2e/build.sh built and the admin kubeconfig up.sh wrote.
func findKubectl(t *testing.T) (string, string) {
	t.Helper()
	root := repoRoot(t)
	matches, _ := filepath.Glob(filepath.Join(root, ".cache", "e2e", "bin", "kubernetes-*", "kubectl"))
	if len(matches) == 0 {
		t.Fatal("no kubectl under .cache/e2e/bin (make e2e-build)")
	}
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		kc = filepath.Join(root, ".cache", "e2e", "run", "admin.kubeconfig")
	}
	return matches[len(matches)-1], kc
}
