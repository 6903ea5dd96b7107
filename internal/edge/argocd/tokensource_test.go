package argocd

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestTokenSourcePerRequest: TokenSource is asked before every request and wins over Token; its error fails the
// call at once (no retry, nothing sent) and reaches the caller as one line.
func TestTokenSourcePerRequest(t *testing.T) {
	st, srv := serve(t, answer{status: 200, body: appJSON})
	tokens := []string{"first-token", "second-token"}
	calls := 0
	var srcErr error
	c := newTestClient(t, srv, func(o *Options) {
		o.TokenSource = func() (string, error) {
			if srcErr != nil {
				return "", srcErr
			}
			tok := tokens[min(calls, len(tokens)-1)]
			calls++
			return tok, nil
		}
	})
	ctx := context.Background()
	for range 2 {
		if _, err := c.GetApplication(ctx, "web", ""); err != nil {
			t.Fatal(err)
		}
	}
	reqs := st.requests()
	if len(reqs) != 2 || reqs[0].auth != "Bearer first-token" || reqs[1].auth != "Bearer second-token" {
		t.Fatalf("requests %+v: want the source's token on each, s3cr3t-token on none", reqs)
	}
	srcErr = errors.New("reading token file /run/token: no such file or directory")
	_, err := c.GetApplication(ctx, "web", "")
	if err == nil || !strings.Contains(err.Error(), "argo cd token: reading token file /run/token") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v", err)
	}
	if n := len(st.requests()); n != 2 {
		t.Errorf("%d requests after the token source failed, want 2 (nothing sent, no retry)", n)
	}
}
