// Package report formats a preview — the per-app diffs of a change and, for `plan`, its wave plan — as text for a
// terminal, as the JSON contract of docs/contract.md, and as the pull-request comment: a hidden marker, the summary
// line, the wave plan (the plan's own markdown), a collapsed section per app with a ```diff block, hooks listed
// apart, Secret keys named but never their values. Over GitHub's 65,536-character limit the comment is split into
// numbered parts, the summary first and repeated in each part; an app section is never cut in two.
//
// The package is pure: it holds the report model, which the preview pipeline fills, and writes it. It knows the
// plan only through the small Plan interface.
package report
