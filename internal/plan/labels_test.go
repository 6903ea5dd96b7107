package plan

import (
	"os"
	"reflect"
	"testing"

	"github.com/fleetwave/fleetwave/internal/diff/risk"
)

func TestPullRequestLabels(t *testing.T) {
	data, err := os.ReadFile("testdata/policies/tracks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := parse(t, string(data))
	if got, want := pol.Labels, []ClassLabel{{"crd-removed", "risk: crd", 20}, {"crd", "risk: crd", 19}, {"image", "images", 21}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Labels = %+v, want %+v", got, want)
	}
	managed := []string{"risk: crd", "images"}
	tests := []struct {
		name    string
		classes []risk.Class
		want    []string
	}{
		{"nothing changed", nil, nil},
		{"a class without a label", []risk.Class{risk.Metadata}, nil},
		{"image", []risk.Class{risk.Image, risk.Metadata}, []string{"images"}},
		{"two classes, one label", []risk.Class{risk.CRDRemoved, risk.CRD}, []string{"risk: crd"}},
		{"both labels", []risk.Class{risk.CRD, risk.Image}, []string{"risk: crd", "images"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, gotManaged := pol.PullRequestLabels(tt.classes)
			if !reflect.DeepEqual(want, tt.want) || !reflect.DeepEqual(gotManaged, managed) {
				t.Errorf("PullRequestLabels(%v) = %q, %q; want %q, %q", tt.classes, want, gotManaged, tt.want, managed)
			}
		})
	}
	if want, managed := parse(t, "apiVersion: fleetwave/v1\nwaves:\n  - {name: a, selector: {}}\n").PullRequestLabels([]risk.Class{risk.CRD}); want != nil || managed != nil {
		t.Errorf("a policy without labels manages %q, wants %q", managed, want)
	}
}

func TestNeedAcknowledgement(t *testing.T) {
	data, err := os.ReadFile("testdata/policies/tracks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := parse(t, string(data))
	if got := pol.Acknowledge; !reflect.DeepEqual(got, []string{"crd", "rbac-widened"}) {
		t.Fatalf("Acknowledge = %q, want most serious first", got)
	}
	for _, tt := range []struct {
		classes []risk.Class
		want    []risk.Class
	}{
		{nil, nil},
		{[]risk.Class{risk.Image, risk.Metadata}, nil},
		{[]risk.Class{risk.RBACWidened, risk.Image, risk.CRD}, []risk.Class{risk.CRD, risk.RBACWidened}},
	} {
		if got := pol.NeedAcknowledgement(tt.classes); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("NeedAcknowledgement(%v) = %v, want %v", tt.classes, got, tt.want)
		}
	}
	if got := pol.Who("acknowledge"); got != "membership of org/platform" {
		t.Errorf("Who(acknowledge) = %q", got)
	}
	if got := DefaultPolicy().Who("acknowledge"); got != "write permission" {
		t.Errorf("default Who(acknowledge) = %q", got)
	}
}
