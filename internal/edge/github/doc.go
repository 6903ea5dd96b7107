// Package github is fleetwave's GitHub adapter: the App's identity, and what the use cases do on GitHub.
//
// # Identity
//
// App holds the App ID and private key. ghinstallation signs an App JWT with the key and trades it for an
// installation token, which it caches and refreshes a minute before expiry; App.Client(installationID) returns
// one Client per installation (built once), App.GitCredentials the "x-access-token" basic-auth pair for
// cloning over https. AppConfig.APIURL points at GitHub.com (default), GitHub Enterprise Server
// ("https://HOST/api/v3/") or a test server.
//
// # Operations
//
// Client methods take repositories as "owner/name":
//
//   - UpsertComment keeps one sticky comment per pull request, possibly split into parts. Each part starts
//     with CommentMarker and "<!-- fleetwave:part N -->"; parts are found by listing the comments (all pages)
//     and keeping those with the marker written by the App's bot (WithBotLogin) or, without it, by any Bot
//     account — never a person quoting the marker. Parts are edited in place, created when missing, deleted
//     when no longer needed; unchanged parts are not sent. Bodies are capped at MaxCommentBody (a part
//     longer than MaxCommentPart is cut at a line, its open code fence and <details> closed, and a note added).
//   - CreateCheckRun / UpdateCheckRun validate the run first (status/conclusion rules, ≤ 3 actions with
//     GitHub's label sizes, annotations with a path and line), cap summary and text at MaxCheckRunText, and
//     send annotations MaxAnnotationsPerRequest at a time in successive updates (GitHub appends them).
//     ListCheckRuns lists the runs on a ref.
//   - CreateIssue, EditIssue, CloseIssue (after a comment) and OpenIssues (the App's open issues that carry a
//     marker, every page): the drift reports (internal/drift), through Services.IssueTracker.
//   - PullRequest, PullRequestFiles (all pages), Permission (admin/write/read/none), IsTeamMember
//     ("org/team-slug", active members only), React (👀 on a command), Reply.
//
// Errors name the action and the repository and wrap go-github's error; a 404 also wraps ErrNotFound.
//
// # Retries
//
// Every request, token requests included, goes through a retrying transport (RetryPolicy): 5xx answers and
// transport errors are retried with exponential backoff and jitter; rate-limit answers (403/429 with
// Retry-After, X-RateLimit-Remaining: 0, or a "secondary rate limit" message) after the wait GitHub asks for,
// when it is at most RetryPolicy.MaxWait. Other 4xx answers are returned at once. A POST that GitHub carried
// out but answered with a 5xx can thus be repeated; the sticky comment repairs a duplicated part on its next
// update.
//
// # Testing
//
// The Client is built on narrow interfaces that go-github's services satisfy (IssuesAPI, ChecksAPI, ...), so
// unit tests can use value fakes; the adapter's own tests run it against fakegithub, a fake GitHub that
// validates every request and response against GitHub's OpenAPI description when that description is beside
// the repository (internal/testkit/sharedtest).
package github
