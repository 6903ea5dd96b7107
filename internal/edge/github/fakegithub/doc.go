// Package fakegithub is a fake GitHub REST API for tests, on httptest, faithful where it matters to the bot.
//
// The fake serves exactly the GitHub REST operations the bot calls (routes.go: GitHub's operationId, method and
// path template; refs may contain "/"), and answers with objects written here (objects.go): GitHub's
// documented shape — every field its description marks required, with its type — and values of our own,
// derived from the fake's state. Nothing of GitHub's is copied into the repository.
//
// GitHub's REST description (octokit/openapi 23.0.2, MIT) is third-party material kept beside the repository:
// New looks for github/openapi in the shared folder (internal/testkit/sharedtest: $FLEETWAVE_SHARED_DIR, else
// "shared" next to the checkout) and, when it is there, loads bot-subset.json plus the operations it lacks
// (teams/get-membership-for-user-in-org, apps/get-repo-installation), extracted at load time from
// api.github.com.json.gz with every component they reference. Each of the fake's operations must be in it
// under the same method and path, or New fails the test. Every request is then validated with kin-openapi's
// openapi3filter: an invalid one is answered 422 as GitHub would, recorded, and fails the test (unless
// AllowInvalidRequests). Every response the fake is about to serve is validated too, and an invalid one
// fails the test: the fake cannot drift from GitHub's shapes. The conformance tests check the same against
// the description directly (the routes, every kind of answer in each of its states).
//
// Without the description (a bare clone) the fake serves the same answers unchecked and says so in one line
// of the test's log (Validating reports it); under FLEETWAVE_REQUIRE_SHARED=1, as in CI, New fails the test
// instead, and so does a shared folder with an incomplete copy. Tests of the validation itself are skipped
// without the description. A request outside the fake's operations fails the test either way.
//
// Where the description is silent, the fake behaves like GitHub:
//   - comment bodies over 65,536 characters and blank bodies are refused (422 Validation Failed);
//   - check-run summary/text over 65,535 characters, more than 50 annotations or 3 actions per request, and
//     columns on multi-line annotations are refused; a conclusion completes a run; "completed" needs a
//     conclusion; annotations accumulate over updates; a completed run cannot go back to queued/in_progress
//     (stricter than GitHub may be: fleetwave never needs it);
//   - installation tokens are minted for an App JWT (RS256, verified with WithApp's key, issuer and a 10-minute
//     window) and expire (WithTokenTTL); other requests need a live token;
//   - lists paginate with per_page (≤ 100) and Link headers; pull request files stop at 3,000;
//   - InjectSecondaryRateLimit answers 403 with Retry-After, InjectServerErrors 502, SetLatency delays.
//
// State is a small state machine: pull requests (AddPullRequest), issues that share their numbers (opened by the
// App, or seeded with AddIssue; listed with the pull requests, as GitHub does; closed with a state reason), comments with ids and updated_at (created
// by the App's bot "<slug>[bot]" or seeded with AddComment), check runs with their status history, reactions,
// collaborators' roles (SetPermission), team memberships (SetTeamMembership). Requests records every request
// as sent, body included, so tests can check that no Secret value ever left the bot.
package fakegithub
