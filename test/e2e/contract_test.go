package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/contract"
)

// TestContractAgainstRealArgoCD runs the Argo CD contract suite (the one the simulator passes in the fast suite)
// against the real Argo CD of hack/e2e: when the simulator passes and this fails, the simulator is wrong.
func TestContractAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	contract.Run(t, func(t *testing.T) contract.Target {
		return contract.Target{
			Options:     argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"},
			ManualApp:   "guestbook",
			AutoApp:     "guestbook-auto",
			SlowApp:     "guestbook-slow",
			OldRevision: e.OldRevision,
			NewRevision: e.NewRevision,
			Selector:    "suite=contract",
			Timeout:     2 * time.Minute,
		}
	})
}

// TestDecodingAgainstRealArgoCD: the client decodes the real server's Applications (github.com/goccy/go-json) to
// exactly what encoding/json makes of the same answer. Two reads of the list are compared app by app where the
// app did not change between them (same resourceVersion).
func TestDecodingAgainstRealArgoCD(t *testing.T) {
	e := loadEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := argocd.New(argocd.Options{BaseURL: e.ArgoCDURL, Token: e.Token, UserAgent: "fleetwave-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.ArgoCDURL, "/")+"/api/v1/applications", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var want v1alpha1.ApplicationList
	if err := json.NewDecoder(resp.Body).Decode(&want); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("listing raw: %d, %v", resp.StatusCode, err)
	}
	got, err := c.ListApplications(ctx, argocd.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]v1alpha1.Application{}
	for _, a := range want.Items {
		byName[a.Namespace+"/"+a.Name] = a
	}
	compared := 0
	for _, a := range got.Items {
		w, ok := byName[a.Namespace+"/"+a.Name]
		if !ok || w.ResourceVersion != a.ResourceVersion {
			continue
		}
		compared++
		if !reflect.DeepEqual(a, w) {
			t.Errorf("%s decodes differently:\n got %+v\nwant %+v", a.Name, a, w)
		}
	}
	if compared < 3 {
		t.Fatalf("only %d of %d apps unchanged between the two reads", compared, len(got.Items))
	}
	t.Logf("%d apps decoded identically", compared)
}
