package github

import (
	"strings"
	"unicode/utf8"

	"github.com/fleetwave/fleetwave/internal/edge/github/limits"
)

// GitHub's size limits, as internal/edge/github/limits states them (with GitHub's documentation). GitHub states them
// in characters; the adapter applies them in bytes, which is never fewer, so a body it sends is accepted
// whichever way GitHub counts.
const (
	// MaxCommentBody is the longest issue or pull request comment body GitHub accepts.
	MaxCommentBody = limits.CommentBody
	// MaxCheckRunText is the longest check-run output summary or text GitHub accepts.
	MaxCheckRunText = limits.CheckRunText
	// MaxCommentPart is the longest part UpsertComment takes without truncating it: MaxCommentBody minus the
	// room kept for the hidden markers. Split a long report into parts no longer than this (in bytes).
	MaxCommentPart = MaxCommentBody - markerRoom

	// MaxAnnotationsPerRequest is how many annotations GitHub takes in one check-run request; the adapter
	// sends more in successive updates.
	MaxAnnotationsPerRequest = limits.AnnotationsPerRequest
	// MaxCheckRunActions is how many action buttons a check run may carry.
	MaxCheckRunActions = limits.CheckRunActions
)

// truncate returns s if it fits in limit bytes, else a prefix cut at a line (or at least a UTF-8) boundary,
// with any Markdown code fence or <details> block it leaves open closed, followed by note. The result never
// exceeds limit bytes.
func truncate(s string, limit int, note string) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	note = "\n\n" + note + "\n"
	const closersRoom = 64 // "\n```" and a few "</details>"
	budget := limit - len(note) - closersRoom
	if budget < 0 {
		budget = 0
	}
	for budget > 0 && !utf8.RuneStart(s[budget]) { // s[budget] exists: len(s) > limit >= budget
		budget--
	}
	cut := s[:budget]
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i]
	}
	var b strings.Builder
	b.WriteString(cut)
	if strings.Count("\n"+cut, "\n```")%2 == 1 {
		b.WriteString("\n```")
	}
	open := strings.Count(cut, "<details") - strings.Count(cut, "</details>")
	for i := 0; i < open && b.Len()+len("\n</details>")+len(note) <= limit; i++ {
		b.WriteString("\n</details>")
	}
	b.WriteString(note)
	out := b.String()
	if len(out) > limit { // cannot happen with the room kept above; never send an over-long body
		for limit > 0 && !utf8.RuneStart(out[limit]) {
			limit--
		}
		out = out[:limit]
	}
	return out, true
}
