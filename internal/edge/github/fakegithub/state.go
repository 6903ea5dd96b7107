package fakegithub

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// PullRequest is a pull request the fake knows (seed it with AddPullRequest).
type PullRequest struct {
	Number         int
	Title          string
	Author         string
	State          string // open (default) or closed
	Draft          bool
	Merged         bool
	MergeCommitSHA string
	HeadSHA        string
	HeadRef        string
	HeadRepo       string // owner/name, default: the base repository
	BaseSHA        string
	BaseRef        string
	Files          []File
	// Labels are the names of its labels, in the order they were added.
	Labels []string
}

// File is a file a pull request changes.
type File struct {
	Filename         string
	PreviousFilename string
	Status           string // added, removed, modified, renamed, ...
	Additions        int
	Deletions        int
}

// Comment is an issue comment in the fake's state.
type Comment struct {
	ID        int64
	Repo      string
	Number    int
	Body      string
	User      string
	UserType  string // "Bot" for what installation tokens create, "User" for seeded ones
	CreatedAt time.Time
	UpdatedAt time.Time
	Edits     int
}

// CheckRun is a check run in the fake's state.
type CheckRun struct {
	ID          int64
	Repo        string
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	ExternalID  string
	DetailsURL  string
	StartedAt   time.Time
	CompletedAt time.Time
	Title       string
	Summary     string
	Text        string
	Annotations []map[string]any // as sent, accumulated over updates
	Actions     []map[string]any
	History     []string // statuses in order
	Updates     int
	// AppID is the GitHub App that created the run: 0 for the fake's own App (the one the client is), another id
	// for a run another App (or a workflow) created (AddCheckRun).
	AppID int64
}

// Reaction is a reaction to an issue comment.
type Reaction struct {
	ID        int64
	CommentID int64
	Content   string
	User      string
}

// AddPullRequest registers pull request pr on repo ("owner/name"); comments need the pull request to exist.
func (s *Server) AddPullRequest(repo string, pr PullRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr.State == "" {
		pr.State = "open"
	}
	if pr.HeadRepo == "" {
		pr.HeadRepo = repo
	}
	if pr.Author == "" {
		pr.Author = "octocat"
	}
	if pr.Title == "" {
		pr.Title = fmt.Sprintf("Change %d", pr.Number)
	}
	if pr.HeadRef == "" {
		pr.HeadRef = fmt.Sprintf("change-%d", pr.Number)
	}
	if pr.BaseRef == "" {
		pr.BaseRef = "main"
	}
	p := pr
	s.pulls[fmt.Sprintf("%s#%d", repo, pr.Number)] = &p
}

// AddComment adds a comment by user (a person) to pull request number, as if posted on GitHub.
func (s *Server) AddComment(repo string, number int, user, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.now()
	c := &Comment{ID: s.id(), Repo: repo, Number: number, Body: body, User: user, UserType: "User", CreatedAt: now, UpdatedAt: now}
	s.comments[c.ID] = c
	return c.ID
}

// AddCheckRun adds a check run to repo as another GitHub App would create it (cr.AppID, "other-app"; a zero AppID
// is the fake's own App), and returns its id.
func (s *Server) AddCheckRun(repo string, cr CheckRun) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr.ID, cr.Repo = s.id(), repo
	if cr.Status == "" {
		cr.Status = "completed"
	}
	if cr.StartedAt.IsZero() {
		cr.StartedAt = s.o.now()
	}
	if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = s.o.now()
	}
	s.checkRuns[cr.ID] = &cr
	return cr.ID
}

// SetPermission gives user a role on repo: admin, maintain, write, triage, read or none.
func (s *Server) SetPermission(repo, user, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.permissions[repo+":"+strings.ToLower(user)] = role
}

// SetTeamMembership makes user a member of team "org/slug" in state active or pending.
func (s *Server) SetTeamMembership(team, user, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.teams[team] == nil {
		s.teams[team] = map[string]string{}
	}
	s.teams[team][strings.ToLower(user)] = state
}

// Comments returns the comments on pull request number, oldest first.
func (s *Server) Comments(repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commentsOn(repo, number)
}

func (s *Server) commentsOn(repo string, number int) []Comment {
	var out []Comment
	for _, c := range s.comments {
		if c.Repo == repo && c.Number == number {
			out = append(out, *c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// CheckRuns returns the check runs on repo, oldest first.
func (s *Server) CheckRuns(repo string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.checkRuns {
		if c.Repo == repo {
			cp := *c
			cp.Annotations = append([]map[string]any(nil), c.Annotations...)
			cp.History = append([]string(nil), c.History...)
			out = append(out, cp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Reactions returns the reactions to comment id.
func (s *Server) Reactions(commentID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions[commentID]...)
}

// Labels returns the names of the labels on pull request number, in the order they were added.
func (s *Server) Labels(repo string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr, ok := s.pulls[fmt.Sprintf("%s#%d", repo, number)]; ok {
		return append([]string(nil), pr.Labels...)
	}
	return nil
}
