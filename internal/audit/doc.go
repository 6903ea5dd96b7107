// Package audit is the audit trail out of the store (#37): every rollout's events — who merged, the plan, each
// wave's start and end, gates passed, approvals, pauses, resumes, aborts, rollbacks, each app's result — as
// records of one stable format, a JSON object per line (Record; docs/audit.md documents every field), or a
// readable line of text (Text). Export reads them page by page from the store alone, so nothing held in a
// process's memory is needed and nothing is lost on restart; Handler serves them over HTTP (serve's
// /fleet/api/history, behind the fleet view's sign-in) paged by event id so a consumer resumes where it stopped;
// Retention deletes the finished rollouts older than the configured age (FLEETWAVE_HISTORY_RETENTION).
package audit
