// Package limits is the one statement of GitHub's size limits that fleetwave's output must fit: the GitHub
// adapter (internal/edge/github) enforces them on what it sends, the presentations (internal/report's comment parts,
// internal/checkrun's check-runs) size their output below them, and the fake GitHub of the tests
// (internal/edge/github/fakegithub) refuses what exceeds them as GitHub does. It has no dependencies.
package limits

// GitHub's limits. GitHub states them in characters; fleetwave applies them in bytes, which is never fewer, so a
// body it sends is accepted whichever way GitHub counts.
const (
	// CommentBody is the longest issue or pull request comment body GitHub accepts: the REST API answers a
	// longer one with 422 "Body is too long (maximum is 65536 characters)"
	// (https://docs.github.com/en/rest/issues/comments#create-an-issue-comment).
	CommentBody = 65536

	// CheckRunText is the longest check-run output summary or text GitHub accepts ("Maximum length: 65535
	// characters", https://docs.github.com/en/rest/checks/runs#create-a-check-run, output.summary and output.text).
	CheckRunText = 65535

	// AnnotationsPerRequest is how many annotations one check-run request may carry ("The Checks API limits the
	// number of annotations to a maximum of 50 per API request", same page, output.annotations); more go in
	// successive updates.
	AnnotationsPerRequest = 50

	// CheckRunActions is how many action buttons a check run may carry ("A maximum of three actions are
	// accepted", same page, actions).
	CheckRunActions = 3
)
