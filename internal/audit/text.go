package audit

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fleetwave/fleetwave/internal/kit/text"
)

// JSONLines returns an emit function that writes each record as one line of JSON to w.
func JSONLines(w io.Writer) func(Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return func(r Record) error { return enc.Encode(r) }
}

// TextLines returns an emit function that writes each record as one readable line (Text) to w.
func TextLines(w io.Writer) func(Record) error {
	return func(r Record) error {
		_, err := io.WriteString(w, Text(r)+"\n")
		return err
	}
}

// Text is a record as one line for people:
//
//	2026-03-14T15:09:26Z  #3 octo/fleet#42 1b1b1b1  bob  approve  wave production  ok
//	2026-03-14T15:10:02Z  #3 octo/fleet#42 1b1b1b1  fleetwave  app-sync  argocd/web-eu (prd-eu-1) @1b1b1b1 in production  synced
func Text(r Record) string {
	var b strings.Builder
	b.WriteString(r.At.UTC().Format(time.RFC3339))
	b.WriteString("  #" + strconv.FormatInt(r.Rollout.ID, 10))
	if r.Rollout.Repo != "" {
		b.WriteString(" " + r.Rollout.Repo)
		if r.Rollout.PR > 0 {
			b.WriteString("#" + strconv.Itoa(r.Rollout.PR))
		}
		b.WriteString(" " + text.ShortRev(r.Rollout.MergeSHA))
	}
	b.WriteString("  " + r.Actor + "  " + r.Action)
	switch {
	case r.App != nil:
		b.WriteString("  " + r.App.String())
		if r.App.Cluster != "" {
			b.WriteString(" (" + r.App.Cluster + ")")
		}
		if r.App.Revision != "" {
			b.WriteString(" @" + text.ShortRev(r.App.Revision))
		}
		if r.Wave != "" {
			b.WriteString(" in " + r.Wave)
		}
	case r.Wave != "":
		b.WriteString("  wave " + r.Wave)
	case r.Target != "":
		b.WriteString("  " + r.Target)
	}
	if r.Result != "" {
		b.WriteString("  " + r.Result)
	}
	if r.Message != "" {
		b.WriteString(": " + text.OneLine(r.Message))
	}
	return b.String()
}
