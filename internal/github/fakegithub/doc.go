// Package fakegithub is a fake GitHub REST API for tests, on httptest, faithful where it matters to the bot.
//
// Every request is routed by path (refs and file paths may contain "/") to an operation of GitHub's OpenAPI
// description — testdata/bot-subset.json (the operations the bot calls, from octokit/openapi 23.0.2) merged
// with testdata/extra-operations.json (teams/get-membership-for-user-in-org, extracted from the full
// description by TestExtraOperations -update) — and validated with kin-openapi's openapi3filter. An invalid
// request is answered 422 as GitHub would, recorded, and fails the test (unless AllowInvalidRequests). A
// request outside the description fails the test. Every response the fake is about to serve is validated
// against the description too, and an invalid one fails the test: the fake cannot drift from GitHub's shapes.
// Responses start from the description's own examples (two of which GitHub gets wrong and the fake repairs:
// pulls/get's requested_teams, the collaborator's role_name).
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
// State is a small state machine: pull requests (AddPullRequest), comments with ids and updated_at (created
// by the App's bot "<slug>[bot]" or seeded with AddComment), check runs with their status history, reactions,
// collaborators' roles (SetPermission), team memberships (SetTeamMembership). Requests records every request
// as sent, body included, so tests can check that no Secret value ever left the bot.
package fakegithub
