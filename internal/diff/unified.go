package diff

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

type lineOp struct {
	op   byte // ' ', '-', '+'
	text string
}

// Unified returns a unified diff of two texts (line mode of sergi/go-diff) with the given context, headed by
// "--- from" / "+++ to". Equal texts give "".
func Unified(a, b, from, to string, context int) string {
	if a == b {
		return ""
	}
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)

	var ops []lineOp
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, l := range splitLines(d.Text) {
			ops = append(ops, lineOp{op: op, text: l})
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	// Walk the changes, grouping those whose context overlaps into hunks.
	i := 0
	for i < len(ops) {
		if ops[i].op == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i // exclusive end of the hunk's last change
		for j := i; j < len(ops); j++ {
			if ops[j].op != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*context { // the gap to the next change is wider than two contexts
				break
			}
		}
		stop := min(end+context, len(ops))
		writeHunk(&out, ops, start, stop)
		i = stop
	}
	return out.String()
}

func writeHunk(out *strings.Builder, ops []lineOp, start, stop int) {
	// Line numbers are 1-based positions in each side.
	aLine, bLine := 1, 1
	for _, o := range ops[:start] {
		if o.op != '+' {
			aLine++
		}
		if o.op != '-' {
			bLine++
		}
	}
	aCount, bCount := 0, 0
	for _, o := range ops[start:stop] {
		if o.op != '+' {
			aCount++
		}
		if o.op != '-' {
			bCount++
		}
	}
	if aCount == 0 {
		aLine--
	}
	if bCount == 0 {
		bLine--
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", rangeOf(aLine, aCount), rangeOf(bLine, bCount))
	for _, o := range ops[start:stop] {
		out.WriteByte(o.op)
		out.WriteString(o.text)
		out.WriteByte('\n')
	}
}

func rangeOf(line, count int) string {
	if count == 1 {
		return fmt.Sprintf("%d", line)
	}
	return fmt.Sprintf("%d,%d", line, count)
}

// splitLines splits text into lines without their terminators; a final line without "\n" is kept.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}
