package diff

import (
	"reflect"
	"testing"

	"github.com/fleetwave/fleetwave/internal/testkit/objtest"
)

func TestImageChanges(t *testing.T) {
	cron := func(img string) string {
		return `{apiVersion: batch/v1, kind: CronJob, metadata: {name: c, namespace: p}, spec: {jobTemplate: {spec: {template: {spec: {initContainers: [{name: setup, image: "busybox:1"}], containers: [{name: run, image: "` + img + `"}]}}}}}}`
	}
	for _, tc := range []struct {
		name       string
		base, head string // "" = absent
		want       []ImageChange
	}{
		{"bump", deployV1, deployV2, []ImageChange{{Container: "web", From: "web:1.0", To: "web:1.1"}}},
		{"unchanged image", cm, cm, nil},
		{"added resource", "", deployV1, []ImageChange{{Container: "web", To: "web:1.0"}}},
		{"removed resource", deployV1, "", []ImageChange{{Container: "web", From: "web:1.0"}}},
		{"nested pod template", cron("r:1"), cron("r:2"), []ImageChange{{Container: "run", From: "r:1", To: "r:2"}}},
		{"init container kept apart", cron("r:1"), cron("r:1"), nil},
		{"container added", deployV1,
			`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: prod}, spec: {template: {spec: {containers: [{name: web, image: "web:1.0"}, {name: proxy, image: "envoy:1"}]}}}}`,
			[]ImageChange{{Container: "proxy", To: "envoy:1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b, h []string
			if tc.base != "" {
				b = []string{tc.base}
			}
			if tc.head != "" {
				h = []string{tc.head}
			}
			res, err := Compare(objtest.Objs(t, b...), objtest.Objs(t, h...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []ImageChange
			for _, r := range res.Resources {
				got = append(got, r.Images...)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("images = %+v, want %+v", got, tc.want)
			}
		})
	}
}
