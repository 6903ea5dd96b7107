package github

import (
	"context"
	"strings"
	"testing"
)

// TestIssues: open, list (only the App's issues with the marker, every page), edit, close with a comment; and
// the limits GitHub puts on a title and a body.
func TestIssues(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const marker = "<!-- fleetwave:drift -->"
	e.fake.AddIssue(testRepo, "alice", "Quoting the marker", marker+"\nnot the App's")
	var opened []Issue
	for i := 0; i < 3; i++ {
		is, err := e.client.CreateIssue(ctx, testRepo, "Drift: argocd/web-"+string(rune('a'+i)), marker+"\nOutOfSync")
		if err != nil {
			t.Fatalf("CreateIssue: %v", err)
		}
		if is.Number == 0 || is.State != "open" || !is.ByApp || !strings.Contains(is.URL, "/issues/") {
			t.Fatalf("CreateIssue = %+v", is)
		}
		opened = append(opened, is)
	}
	if _, err := e.client.CreateIssue(ctx, testRepo, "Unrelated", "no marker"); err != nil {
		t.Fatal(err)
	}
	if opened[0].Number <= 7 {
		t.Errorf("issue number %d: issues and pull requests (#7) share numbers", opened[0].Number)
	}
	list, err := e.client.OpenIssues(ctx, testRepo, marker)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Number != opened[0].Number || list[2].Number != opened[2].Number {
		t.Fatalf("OpenIssues = %+v; want the App's three, oldest first", list)
	}

	if err := e.client.EditIssue(ctx, testRepo, opened[1].Number, "Drift: argocd/web-b", marker+"\nDegraded"); err != nil {
		t.Fatalf("EditIssue: %v", err)
	}
	if err := e.client.CloseIssue(ctx, testRepo, opened[0].Number, "Converged."); err != nil {
		t.Fatalf("CloseIssue: %v", err)
	}
	if err := e.client.CloseIssue(ctx, testRepo, 999, "Converged."); err != nil {
		t.Errorf("closing an issue that is gone: %v", err)
	}
	byNumber := map[int]string{}
	for _, is := range e.fake.Issues(testRepo) {
		byNumber[is.Number] = is.State + " " + is.Body
	}
	if got := byNumber[opened[0].Number]; got != "closed "+marker+"\nOutOfSync" {
		t.Errorf("closed issue: %q", got)
	}
	if got := byNumber[opened[1].Number]; got != "open "+marker+"\nDegraded" {
		t.Errorf("edited issue: %q", got)
	}
	if cms := e.fake.Comments(testRepo, opened[0].Number); len(cms) != 1 || cms[0].Body != "Converged." {
		t.Errorf("comments on the closed issue: %+v", cms)
	}
	list, err = e.client.OpenIssues(ctx, testRepo, marker)
	if err != nil || len(list) != 2 {
		t.Fatalf("OpenIssues after closing one = %+v, %v", list, err)
	}

	// Limits: a long title is cut to GitHub's 256 characters, a long body truncated with a note.
	long, err := e.client.CreateIssue(ctx, testRepo, strings.Repeat("é", 300), marker+"\n"+strings.Repeat("x\n", MaxCommentBody))
	if err != nil {
		t.Fatalf("CreateIssue of a long title and body: %v", err)
	}
	if n := len([]rune(long.Title)); n > 256 {
		t.Errorf("title of %d characters sent", n)
	}

	// Pages: more than 100 of the App's issues are all listed.
	for i := 0; i < 101; i++ {
		e.fake.AddIssue(testRepo, e.fake.BotLogin(), "seeded", marker+"\nseeded")
	}
	list, err = e.client.OpenIssues(ctx, testRepo, marker)
	if err != nil || len(list) != 2+1+101 {
		t.Fatalf("OpenIssues over pages: %d issues, %v; want 104", len(list), err)
	}

	if _, err := NewClient(Services{}).CreateIssue(ctx, testRepo, "t", "b"); err == nil {
		t.Error("a client without an issue tracker opened an issue")
	}
}
