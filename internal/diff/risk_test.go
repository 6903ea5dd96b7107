package diff

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/objtest"
)

// Compare puts the risk classes on each changed resource, none on hooks, and classifies Secrets from the masked
// pair: a finding names keys, never values.
func TestCompareSetsRisks(t *testing.T) {
	secretV1 := `{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: prod}, stringData: {password: hunter2-old, user: app}}`
	secretV2 := `{apiVersion: v1, kind: Secret, metadata: {name: db, namespace: prod}, stringData: {password: hunter2-new, user: app}}`
	base := objtest.Objs(t, deployV1, cm, job, secretV1)
	head := objtest.Objs(t, deployV2, jobV2, secretV2)
	res, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Resources {
		for _, f := range r.Risks {
			got = append(got, fmt.Sprintf("%s: %s: %s", r.Key, f.Class, f.Detail))
		}
	}
	want := []string{
		"ConfigMap prod/cfg: removed: ConfigMap cfg",
		"Secret prod/db: secret-keys: key password",
		"apps/Deployment prod/web: image: web: web:1.0 → web:1.1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("risks =\n%q\nwant\n%q", got, want)
	}
	for _, h := range res.Hooks {
		if h.Risks != nil {
			t.Errorf("hook %s has risks %v: hooks are classed per app", h.Key, h.Risks)
		}
	}
	if s := fmt.Sprint(res.Resources); strings.Contains(s, "hunter2") {
		t.Fatal("a Secret value reached the result")
	}
}
