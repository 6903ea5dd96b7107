package fleetview

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/fleetwave/fleetwave/internal/edge/store"
)

// TestHistoryNeedsTheToken: the audit trail's endpoint is behind the view's sign-in, and an API refuses a
// request without the token with 401 (never the sign-in form, which a script cannot fill in).
func TestHistoryNeedsTheToken(t *testing.T) {
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "fleetwave.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	history := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}\n")) })
	h, err := New(st, Options{Token: testToken, History: history})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u := srv.URL + "/fleet/api/history?since=1d"
	for _, tc := range []struct {
		name   string
		header map[string]string
		code   int
		body   string
	}{
		{"no token", nil, 401, "unauthorized\n"},
		{"wrong bearer", map[string]string{"Authorization": "Bearer " + testToken + "x"}, 401, "unauthorized\n"},
		{"bearer", map[string]string{"Authorization": "Bearer " + testToken}, 200, "{}\n"},
	} {
		resp, body := get(t, noRedirect(), u, tc.header)
		if resp.StatusCode != tc.code || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, resp.StatusCode, body, tc.code, tc.body)
		}
	}
	// Without a History handler there is no such route.
	h, _ = New(st, Options{Token: testToken})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/fleet/api/history", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	h.ServeHTTP(rec, req)
	if rec.Code != 404 {
		t.Errorf("no History: %d, want 404", rec.Code)
	}
}
