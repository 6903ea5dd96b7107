package argocd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	"github.com/fleetwave/fleetwave/internal/edge/argocd"
	"github.com/fleetwave/fleetwave/internal/edge/argocd/argocdsim"
)

const (
	revA = "1111111111111111111111111111111111111111"
	revB = "2222222222222222222222222222222222222222"
)

// decodeCorpus runs a simulated Argo CD through the states a rollout meets — never synced, synced, an
// operation running, failed, Degraded, multi-source, refreshed, conditions, history, resources — and returns
// what its API answered: the list of every app, and every message of the application stream meanwhile.
func decodeCorpus(t testing.TB) (list []byte, stream [][]byte) {
	t.Helper()
	sim := argocdsim.New(argocdsim.Config{SyncDuration: 20 * time.Millisecond, ReconcileDelay: 5 * time.Millisecond,
		ProgressingFor: 10 * time.Millisecond})
	defer sim.Close()
	sim.SetRef("HEAD", revA)
	if err := sim.AddCorpus(revB); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/stream/applications", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan []byte, 1024)
	go func() {
		defer close(lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()

	c, err := argocd.New(argocd.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sim.RefreshAll()
	for _, name := range []string{"synced", "fails", "degrades", "running", "multi"} {
		req := argocd.SyncRequest{Revision: revA}
		if name == "multi" {
			req = argocd.SyncRequest{SourcePositions: []int64{1, 2}, Revisions: []string{revA, revA}}
		}
		if _, err := c.Sync(ctx, name, req); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := c.GetApplication(ctx, "synced", v1alpha1.RefreshTypeNormal); err != nil {
		t.Fatal(err)
	}
	r, err := srv.Client().Get(srv.URL + "/api/v1/applications")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if list, err = io.ReadAll(r.Body); err != nil {
		t.Fatal(err)
	}
	cancel()
	for l := range lines {
		stream = append(stream, l)
	}
	return list, stream
}

// TestDecodeMatchesEncodingJSON holds the client's decoder (github.com/goccy/go-json) to encoding/json's
// results on Argo CD's objects, whole lists and stream messages alike.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	list, stream := decodeCorpus(t)
	var want, got v1alpha1.ApplicationList
	if err := json.Unmarshal(list, &want); err != nil {
		t.Fatal(err)
	}
	if err := argocd.DecodeJSON(list, &got); err != nil {
		t.Fatal(err)
	}
	if len(want.Items) != 6 {
		t.Fatalf("the corpus lists %d apps, want 6", len(want.Items))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the list decodes differently:\n got %+v\nwant %+v", got, want)
	}
	states := map[string]bool{}
	for _, msg := range stream {
		var want, got struct {
			Result v1alpha1.ApplicationWatchEvent `json:"result"`
		}
		if err := json.Unmarshal(msg, &want); err != nil {
			t.Fatal(err)
		}
		if err := argocd.DecodeJSON(msg, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("a stream message decodes differently:\n%s", msg)
		}
		if os := want.Result.Application.Status.OperationState; os != nil {
			states[string(os.Phase)] = true
		}
		states[string(want.Result.Application.Status.Health.Status)] = true
	}
	for _, s := range []string{"Running", "Succeeded", "Failed", "Healthy", "Degraded", "Progressing", "Missing"} {
		if !states[s] {
			t.Errorf("the corpus never shows %s (it has %v)", s, states)
		}
	}
	for _, bad := range []string{`{"metadata":`, `{"metadata":{"name":1}}`, `[1,2`} {
		var a v1alpha1.Application
		werr := json.Unmarshal([]byte(bad), &a)
		gerr := argocd.DecodeJSON([]byte(bad), &a)
		if werr == nil || gerr == nil || !strings.Contains(gerr.Error(), werr.Error()) {
			t.Errorf("%s: error %v, encoding/json says %v", bad, gerr, werr)
		}
	}
}

// BenchmarkDecodeApplication compares the client's decoder with encoding/json on a stream message of a synced
// app (about 2.6 KB).
func BenchmarkDecodeApplication(b *testing.B) {
	_, stream := decodeCorpus(b)
	msg := stream[len(stream)-1]
	for _, tc := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"client", argocd.DecodeJSON}, {"encoding-json", json.Unmarshal}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				var ev struct {
					Result v1alpha1.ApplicationWatchEvent `json:"result"`
				}
				if err := tc.decode(msg, &ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseEvent reads a stream message's envelope and metadata, as the stream does for every message.
func BenchmarkParseEvent(b *testing.B) {
	_, stream := decodeCorpus(b)
	msg := stream[len(stream)-1]
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := argocd.ParseEvent(msg); err != nil {
			b.Fatal(err)
		}
	}
}
