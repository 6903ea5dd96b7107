// Package markdown writes plain text into GitHub-flavoured Markdown (PR comments, check-run summaries) so that
// it reads as the text it is: a name with underscores stays a name, a "|" stays inside its table cell, a "<"
// opens no HTML.
package markdown

import "strings"

// escaper precedes each character that would start markup with a backslash (the backslash itself first, so an
// escape in the text stays literal) and writes angle brackets as entities, so no HTML tag opens.
var escaper = strings.NewReplacer("\\", "\\\\", "|", "\\|", "<", "&lt;", ">", "&gt;", "*", "\\*", "_", "\\_",
	"`", "\\`", "[", "\\[", "]", "\\]")

// lineEscaper is escaper that also makes each line break a space.
var lineEscaper = strings.NewReplacer("\\", "\\\\", "|", "\\|", "<", "&lt;", ">", "&gt;", "*", "\\*", "_", "\\_",
	"`", "\\`", "[", "\\[", "]", "\\]", "\n", " ", "\r", " ")

// Escape is s as literal Markdown text: \ | * _ ` [ ] escaped, < and > written as entities. Line breaks stay.
func Escape(s string) string { return escaper.Replace(s) }

// EscapeLine is Escape for a place that must stay one line (a table cell, a sentence in a table's row): each
// line break is also made a space.
func EscapeLine(s string) string { return lineEscaper.Replace(s) }
