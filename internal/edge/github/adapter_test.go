package github

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fleetwave/fleetwave/internal/edge/github/fakegithub"
)

const (
	testRepo  = "acme/gitops"
	testAppID = 99
	testInst  = 42
	headSHA   = "0123456789abcdef0123456789abcdef01234567"
)

func testKey() *rsa.PrivateKey { k, _ := fakegithub.AppKey(); return k }

func testKeyPEM() []byte { _, p := fakegithub.AppKey(); return p }

// sleeps records the waits of the retry policy instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

type env struct {
	fake   *fakegithub.Server
	app    *App
	client *Client
	sleeps *sleeps
}

// newEnv starts a fake GitHub that checks the App's JWT, with pull request #7, and an App pointed at it.
func newEnv(t *testing.T, fakeOpts ...fakegithub.Option) *env {
	t.Helper()
	fakeOpts = append([]fakegithub.Option{fakegithub.WithApp(testAppID, &testKey().PublicKey)}, fakeOpts...)
	fake := fakegithub.New(t, fakeOpts...)
	fake.AddPullRequest(testRepo, fakegithub.PullRequest{Number: 7, HeadSHA: headSHA, BaseSHA: strings.Repeat("b", 40)})
	sl := &sleeps{}
	app, err := NewApp(AppConfig{
		AppID: testAppID, PrivateKey: testKeyPEM(), APIURL: fake.URL(), Transport: fake.Client().Transport,
		Retry:         RetryPolicy{Sleep: sl.sleep},
		ClientOptions: []ClientOption{WithBotLogin(fake.BotLogin())},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Client(testInst)
	if err != nil {
		t.Fatal(err)
	}
	return &env{fake: fake, app: app, client: c, sleeps: sl}
}

// ops counts the requests per operation id.
func ops(reqs []fakegithub.Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[r.Operation]++
	}
	return out
}

func stickyBodies(e *env) []string {
	var out []string
	for _, c := range e.fake.Comments(testRepo, 7) {
		if c.User == e.fake.BotLogin() {
			out = append(out, c.Body)
		}
	}
	return out
}

func TestUpsertCommentLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// People talk on the PR, one even quoting the marker; more than a page of comments.
	for i := range 130 {
		e.fake.AddComment(testRepo, 7, "alice", fmt.Sprintf("comment %d", i))
	}
	quoted := e.fake.AddComment(testRepo, 7, "mallory", CommentMarker+"\n<!-- fleetwave:part 1 -->\nfake report")

	steps := []struct {
		parts []string
		ops   map[string]int // requests besides listing
	}{
		{[]string{"summary v1"}, map[string]int{"issues/create-comment": 1}},
		{[]string{"summary v1"}, map[string]int{}}, // unchanged: nothing sent
		{[]string{"summary v2"}, map[string]int{"issues/update-comment": 1}},
		{[]string{"summary v3", "apps 1", "apps 2"}, map[string]int{"issues/update-comment": 1, "issues/create-comment": 2}},
		{[]string{"summary v4"}, map[string]int{"issues/update-comment": 1, "issues/delete-comment": 2}},
		{nil, map[string]int{"issues/delete-comment": 1}},
	}
	var firstID int64
	for i, st := range steps {
		before := len(e.fake.Requests())
		got, err := e.client.UpsertComment(ctx, testRepo, 7, st.parts)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		sent := ops(e.fake.Requests()[before:])
		delete(sent, "issues/list-comments")
		delete(sent, "apps/create-installation-access-token")
		if fmt.Sprint(sent) != fmt.Sprint(st.ops) {
			t.Errorf("step %d: sent %v, want %v", i, sent, st.ops)
		}
		bodies := stickyBodies(e)
		if len(bodies) != len(st.parts) || len(got) != len(st.parts) {
			t.Fatalf("step %d: %d sticky comments, want %d", i, len(bodies), len(st.parts))
		}
		for j, b := range bodies {
			want := fmt.Sprintf("%s\n<!-- fleetwave:part %d -->\n%s", CommentMarker, j+1, st.parts[j])
			if b != want || got[j].Part != j+1 {
				t.Errorf("step %d part %d: %q", i, j+1, b)
			}
		}
		if len(got) > 0 {
			if firstID == 0 {
				firstID = got[0].ID
			}
			if got[0].ID != firstID {
				t.Errorf("step %d: the summary moved from comment %d to %d", i, firstID, got[0].ID)
			}
		}
	}
	for _, c := range e.fake.Comments(testRepo, 7) {
		if c.ID == quoted && (c.Edits != 0 || !strings.HasSuffix(c.Body, "fake report")) {
			t.Error("a person's comment quoting the marker was touched")
		}
	}
	if n := len(e.fake.Comments(testRepo, 7)); n != 131 {
		t.Errorf("%d comments left, want the 131 people wrote", n)
	}
}

func TestUpsertCommentRemovesDuplicateParts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.client.UpsertComment(ctx, testRepo, 7, []string{"one", "two"}); err != nil {
		t.Fatal(err)
	}
	// A crash between two runs, or two racing runs, left a second copy of part 2.
	if _, err := e.client.Reply(ctx, testRepo, 7, CommentMarker+"\n<!-- fleetwave:part 2 -->\nstale two"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.UpsertComment(ctx, testRepo, 7, []string{"one", "two"}); err != nil {
		t.Fatal(err)
	}
	bodies := stickyBodies(e)
	if len(bodies) != 2 || !strings.HasSuffix(bodies[1], "\ntwo") {
		t.Fatalf("sticky comments %q", bodies)
	}
}

func TestCommentsNeverExceedGitHubsLimit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var diff strings.Builder
	diff.WriteString("## Summary\n<details><summary>guestbook</summary>\n\n```diff\n")
	for i := 0; diff.Len() < 200_000; i++ {
		fmt.Fprintf(&diff, "+  replicas: %d # ✅ ünïcödé\n", i)
	}
	parts := []string{diff.String(), strings.Repeat("🚀", 70_000), strings.Repeat("x", MaxCommentPart)}
	got, err := e.client.UpsertComment(ctx, testRepo, 7, parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d parts", len(got))
	}
	bodies := stickyBodies(e)
	for i, b := range bodies {
		if len(b) > MaxCommentBody || !utf8.ValidString(b) {
			t.Errorf("part %d: %d bytes, valid UTF-8 %v", i+1, len(b), utf8.ValidString(b))
		}
	}
	if !strings.Contains(bodies[0], "truncated") || strings.Count(bodies[0], "```")%2 != 0 || !strings.Contains(bodies[0], "</details>") {
		t.Errorf("truncated part 1 does not close its code fence and <details> or lacks the note:\n%s", bodies[0][len(bodies[0])-300:])
	}
	if strings.Contains(bodies[2], "truncated") {
		t.Error("a part of exactly MaxCommentPart bytes was truncated")
	}
	if _, err := e.client.Reply(ctx, testRepo, 7, strings.Repeat("y", 3*MaxCommentBody)); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.fake.Requests() {
		if r.Operation != "issues/create-comment" && r.Operation != "issues/update-comment" {
			continue
		}
		var body struct{ Body string }
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if n := utf8.RuneCountInString(body.Body); n > MaxCommentBody || r.Status >= 300 {
			t.Errorf("%s sent %d characters, answered %d", r.Operation, n, r.Status)
		}
	}
}

func TestCheckRuns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var anns []Annotation
	for i := range 120 {
		anns = append(anns, Annotation{Path: fmt.Sprintf("apps/app-%03d/values.yaml", i), StartLine: i + 1, Message: "does not render"})
	}
	anns[0].StartCol, anns[0].EndCol = 3, 9
	run := CheckRun{
		Name: "fleetwave/diff", HeadSHA: headSHA, Status: StatusInProgress,
		Output: &CheckOutput{Title: "3 apps fail to render", Summary: "summary", Text: strings.Repeat("t", 100_000), Annotations: anns},
		Actions: []CheckAction{{Label: "Approve", Description: "Approve the next wave", Identifier: "approve"},
			{Label: "Pause", Description: "Pause the rollout", Identifier: "pause"},
			{Label: "Roll back", Description: "Roll back every app", Identifier: "rollback"}},
	}
	before := len(e.fake.Requests())
	id, err := e.client.CreateCheckRun(ctx, testRepo, run)
	if err != nil {
		t.Fatal(err)
	}
	if got := ops(e.fake.Requests()[before:]); got["checks/create"] != 1 || got["checks/update"] != 2 {
		t.Errorf("requests %v: want one create and two updates carrying 50+20 more annotations", got)
	}
	if err := e.client.UpdateCheckRun(ctx, testRepo, id, CheckRun{Name: run.Name, Conclusion: ConclusionFailure,
		Output: &CheckOutput{Title: "done", Summary: strings.Repeat("s", 70_000)}}); err != nil {
		t.Fatal(err)
	}
	runs := e.fake.CheckRuns(testRepo)
	if len(runs) != 1 {
		t.Fatalf("%d check runs", len(runs))
	}
	cr := runs[0]
	if len(cr.Annotations) != 120 || len(cr.Actions) != 3 || cr.Conclusion != ConclusionFailure ||
		strings.Join(cr.History, ">") != "in_progress>completed" || cr.CompletedAt.IsZero() {
		t.Errorf("check run: %d annotations, %d actions, conclusion %q, history %v", len(cr.Annotations), len(cr.Actions), cr.Conclusion, cr.History)
	}
	if len(cr.Text) > MaxCheckRunText || len(cr.Summary) > MaxCheckRunText || !strings.Contains(cr.Text, "truncated") {
		t.Errorf("text %d, summary %d bytes", len(cr.Text), len(cr.Summary))
	}
	if _, ok := cr.Annotations[0]["start_column"]; !ok {
		t.Error("single-line annotation lost its columns")
	}

	// Programming errors are refused before anything is sent.
	before = len(e.fake.Requests())
	bad := []CheckRun{
		{Name: "x", HeadSHA: headSHA, Status: StatusCompleted},
		{Name: "x", HeadSHA: headSHA, Actions: make([]CheckAction, 4)},
		{Name: "x", HeadSHA: headSHA, Actions: []CheckAction{{Label: "A label far too long!", Description: "d", Identifier: "i"}}},
		{Name: "x", HeadSHA: headSHA, Conclusion: "green"},
		{Name: "x", HeadSHA: headSHA, Output: &CheckOutput{Title: "t"}},
		{Name: "x", HeadSHA: headSHA, Output: &CheckOutput{Title: "t", Summary: "s", Annotations: []Annotation{{Path: "a"}}}},
		{Name: "x"},
		{HeadSHA: headSHA},
	}
	for i, b := range bad {
		if _, err := e.client.CreateCheckRun(ctx, testRepo, b); err == nil {
			t.Errorf("bad run %d accepted", i)
		}
	}
	if n := len(e.fake.Requests()) - before; n != 0 {
		t.Errorf("%d requests sent for invalid check runs", n)
	}

	// Listing, by name, on the head SHA and on the branch.
	if _, err := e.client.CreateCheckRun(ctx, testRepo, CheckRun{Name: "fleetwave/plan", HeadSHA: headSHA}); err != nil {
		t.Fatal(err)
	}
	all, err := e.client.ListCheckRuns(ctx, testRepo, headSHA, "")
	if err != nil || len(all) != 2 {
		t.Fatalf("list: %v %v", all, err)
	}
	plan, err := e.client.ListCheckRuns(ctx, testRepo, "change-7", "fleetwave/plan")
	if err != nil || len(plan) != 1 || plan[0].Status != StatusQueued || plan[0].HeadSHA != headSHA {
		t.Fatalf("list by name on the branch: %+v %v", plan, err)
	}
	if err := e.client.UpdateCheckRun(ctx, testRepo, 424242, CheckRun{Name: "fleetwave/plan", Status: StatusInProgress}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of an unknown run: %v", err)
	}
}

func TestPullRequestAndFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var files []fakegithub.File
	for i := range 250 {
		files = append(files, fakegithub.File{Filename: fmt.Sprintf("apps/a%03d/values.yaml", i), Status: "modified", Additions: 1})
	}
	files[3] = fakegithub.File{Filename: "apps/new/values.yaml", PreviousFilename: "apps/old/values.yaml", Status: "renamed"}
	e.fake.AddPullRequest(testRepo, fakegithub.PullRequest{Number: 9, HeadSHA: headSHA, BaseSHA: strings.Repeat("c", 40),
		HeadRepo: "mallory/gitops", HeadRef: "evil", Author: "mallory", Files: files})
	pr, err := e.client.PullRequest(ctx, testRepo, 9)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 9 || pr.HeadSHA != headSHA || pr.HeadRef != "evil" || pr.BaseRepo != testRepo || !pr.FromFork() ||
		pr.Author != "mallory" || pr.HeadCloneURL != "https://github.com/mallory/gitops.git" {
		t.Errorf("pull request %+v", pr)
	}
	got, err := e.client.PullRequestFiles(ctx, testRepo, 9)
	if err != nil || len(got) != 250 {
		t.Fatalf("%d files, %v", len(got), err)
	}
	if got[3].PreviousPath != "apps/old/values.yaml" || got[249].Path != "apps/a249/values.yaml" {
		t.Errorf("files %+v ... %+v", got[3], got[249])
	}
	if _, err := e.client.PullRequest(ctx, testRepo, 404); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown pull request: %v", err)
	}
}

func TestAccessChecks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for user, role := range map[string]string{"root": "admin", "lead": "maintain", "dev": "write", "triager": "triage", "reader": "read"} {
		e.fake.SetPermission(testRepo, user, role)
	}
	for _, tt := range []struct {
		user, want string
		write      bool
	}{
		{"root", "admin", true}, {"lead", "write", true}, {"dev", "write", true}, {"triager", "read", false},
		{"reader", "read", false}, {"stranger", "none", false},
	} {
		got, err := e.client.Permission(ctx, testRepo, tt.user)
		if err != nil || got != tt.want || PermissionAtLeast(got, "write") != tt.write {
			t.Errorf("%s: %q %v", tt.user, got, err)
		}
	}
	e.fake.SetTeamMembership("acme/sre", "alice", "active")
	e.fake.SetTeamMembership("acme/sre", "bob", "pending")
	for user, want := range map[string]bool{"alice": true, "Alice": true, "bob": false, "carol": false} {
		if got, err := e.client.IsTeamMember(ctx, "acme/sre", user); err != nil || got != want {
			t.Errorf("%s in acme/sre: %v %v", user, got, err)
		}
	}
	if _, err := e.client.IsTeamMember(ctx, "SRE team", "alice"); err == nil {
		t.Error("a team display name was accepted")
	}
}

func TestReactAndReply(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cmd := e.fake.AddComment(testRepo, 7, "alice", "/pause")
	for range 2 {
		if err := e.client.React(ctx, testRepo, cmd, "eyes"); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.fake.Reactions(cmd); len(r) != 1 || r[0].Content != "eyes" || r[0].User != e.fake.BotLogin() {
		t.Errorf("reactions %+v", r)
	}
	id, err := e.client.Reply(ctx, testRepo, 7, "Paused the rollout.")
	if err != nil || id == 0 {
		t.Fatal(err)
	}
	if err := e.client.React(ctx, testRepo, 999999, "eyes"); !errors.Is(err, ErrNotFound) {
		t.Errorf("reaction to an unknown comment: %v", err)
	}
}

func TestRetriesAndRateLimits(t *testing.T) {
	ctx := context.Background()
	t.Run("5xx then success, token request included", func(t *testing.T) {
		e := newEnv(t)
		e.fake.InjectServerErrors(2) // the first two requests: the token request, then its retry
		if _, err := e.client.PullRequest(ctx, testRepo, 7); err != nil {
			t.Fatal(err)
		}
		if n := len(e.sleeps.got()); n != 2 {
			t.Errorf("%d backoffs, want 2", n)
		}
		if got := ops(e.fake.Requests()); got["apps/create-installation-access-token"] != 3 || got["pulls/get"] != 1 {
			t.Errorf("requests %v", got)
		}
	})
	t.Run("secondary rate limit honours Retry-After", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.app.Token(ctx, testInst); err != nil {
			t.Fatal(err)
		}
		e.fake.InjectSecondaryRateLimit(2, 7*time.Second)
		if _, err := e.client.UpsertComment(ctx, testRepo, 7, []string{"hello"}); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(e.sleeps.got()); got != "[7s 7s]" {
			t.Errorf("waits %s, want [7s 7s]", got)
		}
		if n := len(stickyBodies(e)); n != 1 {
			t.Errorf("%d comments after retries", n)
		}
	})
	t.Run("Retry-After beyond MaxWait is returned", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.app.Token(ctx, testInst); err != nil {
			t.Fatal(err)
		}
		e.fake.InjectSecondaryRateLimit(1, 10*time.Minute)
		before := len(e.fake.Requests())
		if _, err := e.client.PullRequest(ctx, testRepo, 7); err == nil {
			t.Fatal("no error")
		}
		if n := len(e.fake.Requests()) - before; n != 1 || len(e.sleeps.got()) != 0 {
			t.Errorf("%d requests, waits %v", n, e.sleeps.got())
		}
	})
	t.Run("other 4xx are not retried", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.app.Token(ctx, testInst); err != nil {
			t.Fatal(err)
		}
		before := len(e.fake.Requests())
		_, err := e.client.PullRequest(ctx, testRepo, 12345)
		if !errors.Is(err, ErrNotFound) || len(e.fake.Requests())-before != 1 || len(e.sleeps.got()) != 0 {
			t.Errorf("404: %v, %d requests", err, len(e.fake.Requests())-before)
		}
	})
}

func TestInstallationTokens(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	user, pass, err := e.app.GitCredentials(ctx, testInst)
	if err != nil || user != "x-access-token" || !strings.HasPrefix(pass, "ghs_") {
		t.Fatalf("credentials %q %q %v", user, pass, err)
	}
	if _, err := e.client.PullRequest(ctx, testRepo, 7); err != nil {
		t.Fatal(err)
	}
	again, _ := e.app.Token(ctx, testInst)
	if again != pass || ops(e.fake.Requests())["apps/create-installation-access-token"] != 1 {
		t.Errorf("token not cached: %v", ops(e.fake.Requests()))
	}
	if exp := e.app.TokenExpiry(testInst); time.Until(exp) < 50*time.Minute {
		t.Errorf("expiry %v", exp)
	}
	for _, r := range e.fake.Requests() {
		if r.Installation != 0 && r.Installation != testInst {
			t.Errorf("request %s authenticated as installation %d", r.Path, r.Installation)
		}
		if strings.Contains(string(r.Body), pass) {
			t.Errorf("the token leaked into the body of %s", r.Path)
		}
	}
	if _, err := e.app.Client(0); err == nil {
		t.Error("installation 0 accepted")
	}
}

func TestEnterpriseServerPrefix(t *testing.T) {
	e := newEnv(t, fakegithub.WithPathPrefix("/api/v3"))
	if !strings.HasSuffix(e.fake.URL(), "/api/v3/") {
		t.Fatal(e.fake.URL())
	}
	if _, err := e.client.UpsertComment(context.Background(), testRepo, 7, []string{"on GHES"}); err != nil {
		t.Fatal(err)
	}
}

func TestNewAppValidates(t *testing.T) {
	for name, cfg := range map[string]AppConfig{
		"no app id":   {PrivateKey: testKeyPEM()},
		"not PEM":     {AppID: 1, PrivateKey: []byte("hunter2")},
		"bad API URL": {AppID: 1, PrivateKey: testKeyPEM(), APIURL: "ftp://github.example.com"},
		"credentials": {AppID: 1, PrivateKey: testKeyPEM(), APIURL: "https://u:p@github.example.com/api/v3"},
	} {
		if _, err := NewApp(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the key leaked into %v", name, err)
		}
	}
}

// Labels go on a pull request in the body GitHub documents, names with spaces and colons are escaped in the
// path, a label already there stays once, and removing one that is not there is no error.
func TestLabels(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.client.AddLabels(ctx, testRepo, 7, []string{"risk: crd", "images"}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.AddLabels(ctx, testRepo, 7, []string{"Images"}); err != nil {
		t.Fatal(err)
	}
	pr, err := e.client.PullRequest(ctx, testRepo, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pr.Labels, ","); got != "risk: crd,images" {
		t.Errorf("labels %q, want risk: crd,images", got)
	}
	if err := e.client.RemoveLabel(ctx, testRepo, 7, "risk: crd"); err != nil {
		t.Fatal(err)
	}
	if err := e.client.RemoveLabel(ctx, testRepo, 7, "risk: crd"); err != nil {
		t.Errorf("removing a label not there: %v", err)
	}
	if got := e.fake.Labels(testRepo, 7); len(got) != 1 || got[0] != "images" {
		t.Errorf("labels %q, want images", got)
	}
	if err := e.client.AddLabels(ctx, testRepo, 99, []string{"x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("labelling a missing pull request: %v", err)
	}
	if got := ops(e.fake.Requests()); got["issues/add-labels"] != 3 || got["issues/remove-label"] != 2 {
		t.Errorf("requests %v", got)
	}
}
