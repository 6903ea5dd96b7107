package argocdsim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	argohttp "github.com/argoproj/pkg/grpc/http"
	"github.com/grpc-ecosystem/grpc-gateway/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// TestFieldFilterMatchesArgoproj holds the stream's `fields` filter to the code Argo CD runs: argoproj/pkg's
// grpc/http marshaler, reached through its UnaryForwarder (the stream forwarder filters each message with the
// same marshaler). Both filter a watch event of every corpus app in several states; the results must be the
// same JSON value (Argo CD's has its keys sorted).
func TestFieldFilterMatchesArgoproj(t *testing.T) {
	s := newCorpus(t, Config{SyncDuration: 20 * time.Millisecond, ReconcileDelay: 5 * time.Millisecond})
	var apps []*v1alpha1.Application
	snapshot := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, n := range s.sortedNamesLocked() {
			apps = append(apps, s.apps[n].app.DeepCopy())
		}
	}
	snapshot()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, name := range CorpusApps {
		resp, err := srv.Client().Post(srv.URL+"/api/v1/applications/"+name+"/sync", "application/json", strings.NewReader(`{"revision":"`+revA+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	snapshot()
	time.Sleep(100 * time.Millisecond)
	snapshot()
	apps[0].ManagedFields = nil // a key with an escape, at the top
	apps[0].Labels["a<b"] = "x"

	for _, fields := range []string{
		// fleetwave's stream
		"-application.metadata.managedFields,application.status.resources,application.status.operationState.syncResult.resources,application.status.summary",
		// Argo CD's UI (ui/src/app/applications/components/applications-list/applications-list.tsx APP_WATCH_FIELDS)
		"type,application.metadata.name,application.metadata.namespace,application.metadata.annotations,application.metadata.labels," +
			"application.spec,application.status.sync.status,application.status.sync.revision,application.status.health," +
			"application.status.operationState.phase,application.status.operationState.finishedAt,application.status.resources",
		"application.status.syncResult",              // walked into by string prefix: status.sync is kept, empty
		"-application.status.history.revision",       // arrays are transparent
		"application.status.resources.name,type",     // into arrays, keeping only some keys
		"application.metadata.labels.a<b",            // a key written with an escape
		"-application",                               // everything but the application
		"-",                                          // nothing removed
		"-nothing.here,application.spec.source.helm", // a path that is absent
	} {
		for i, app := range apps {
			ev := &v1alpha1.ApplicationWatchEvent{Type: watch.Modified, Application: *app}
			msg, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseFieldFilter(fields).apply(msg)
			if err != nil {
				t.Fatalf("%s: %v", fields, err)
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/api/v1/x?fields="+url.QueryEscape(fields), nil)
			argohttp.UnaryForwarder(context.Background(), runtime.NewServeMux(), nil, rec, req, ev)
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("%s: filtered message is not JSON: %v\n%s", fields, err, got)
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil {
				t.Fatalf("argoproj: %v\n%s", err, rec.Body.String())
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("fields %q, app %d (%s):\ngot      %s\nargoproj %s", fields, i, app.Name, got, rec.Body.String())
			}
		}
	}
}

func TestFieldFilterMalformed(t *testing.T) {
	f := parseFieldFilter("-a.b")
	for _, msg := range []string{``, `{`, `{"a":`, `{"a":{"b":1}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `"abc`, `{"a":1} x`, `{a:1}`} {
		if out, err := f.apply([]byte(msg)); err == nil {
			t.Errorf("%q: no error (got %s)", msg, out)
		}
	}
	for msg, want := range map[string]string{
		` { "a" : { "b" : [1, 2], "c" : "x\"}" } , "d":null } `: `{"a":{"c":"x\"}"},"d":null}`,
		`[]`:                         `[]`,
		`{}`:                         `{}`,
		`{"a":{}}`:                   `{"a":{}}`,
		`{"a":[{"b":1},{"c":true}]}`: `{"a":[{},{"c":true}]}`,
	} {
		out, err := f.apply([]byte(msg))
		if err != nil || string(out) != want {
			t.Errorf("%q: got %s, %v; want %s", msg, out, err, want)
		}
	}
}

// BenchmarkFieldFilter filters the stream message of a synced app the way fleetwave's stream asks, for the
// corpus app (2 resources) and for one with 200, reporting the message's size before and after.
func BenchmarkFieldFilter(b *testing.B) {
	for _, n := range []int{2, 200} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			s := newCorpus(b, Config{SyncDuration: time.Millisecond, Manifests: func(a *v1alpha1.Application, rev string) ([]string, error) {
				docs := make([]string, n)
				for i := range docs {
					docs[i] = fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%s-%03d","namespace":"web"}}`, a.Name, i)
				}
				return docs, nil
			}})
			s.mu.Lock()
			ev, _, err := s.eventLocked(watch.Modified, s.apps["synced"])
			s.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
			f := parseFieldFilter("-result.application.metadata.managedFields,result.application.status.resources," +
				"result.application.status.operationState.syncResult.resources,result.application.status.summary")
			b.SetBytes(int64(len(ev.msg)))
			var out []byte
			for b.Loop() {
				if out, err = f.apply(ev.msg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(ev.msg)), "bytes-in")
			b.ReportMetric(float64(len(out)), "bytes-out")
		})
	}
}
