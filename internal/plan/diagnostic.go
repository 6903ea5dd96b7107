package plan

import (
	"fmt"
	"strings"
)

// Diagnostic is one problem found in a policy file, with its position (Column 0 when unknown).
type Diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Warning bool   `json:"warning,omitempty"`
}

// String is "file:line:col: message (hint: hint)", with "warning: " before the message of warnings.
func (d Diagnostic) String() string {
	var sb strings.Builder
	sb.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&sb, ":%d", d.Line)
		if d.Column > 0 {
			fmt.Fprintf(&sb, ":%d", d.Column)
		}
	}
	sb.WriteString(": ")
	if d.Warning {
		sb.WriteString("warning: ")
	}
	sb.WriteString(d.Message)
	if d.Hint != "" {
		sb.WriteString(" (hint: ")
		sb.WriteString(d.Hint)
		sb.WriteString(")")
	}
	return sb.String()
}

// PolicyError is an invalid policy: every error found, in file order.
type PolicyError struct {
	File        string
	Diagnostics []Diagnostic
}

// Error is the first diagnostic, and how many more there are: one line.
func (e *PolicyError) Error() string {
	if len(e.Diagnostics) == 0 {
		return e.File + ": invalid policy"
	}
	s := e.Diagnostics[0].String()
	if n := len(e.Diagnostics) - 1; n > 0 {
		s += fmt.Sprintf(" [and %d more; run fleetwave validate %s]", n, e.File)
	}
	return s
}
