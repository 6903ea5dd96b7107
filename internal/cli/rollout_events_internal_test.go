package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRolloutEventsNameTheInstance: with several Argo CD instances the same app name can run on each; an app's
// event says which (text and JSON), and an instance that stops answering is an event of its own. A fleet of one
// prints what it printed before.
func TestRolloutEventsNameTheInstance(t *testing.T) {
	batch := 0
	for _, tc := range []struct {
		ev       rolloutEvent
		text     string
		jsonPart string
	}{
		{rolloutEvent{Event: "app-syncing", Wave: "test", Batch: &batch, App: "web", Instance: "b", Cluster: "staging-eu-1", Revision: "0123456789abcdef"},
			"  b/web (staging-eu-1): syncing 0123456789", `"app":"web","instance":"b","cluster":"staging-eu-1"`},
		{rolloutEvent{Event: "app-syncing", Wave: "test", Batch: &batch, App: "web", Cluster: "staging-eu-1", Revision: "0123456789abcdef"},
			"  web (staging-eu-1): syncing 0123456789", `"app":"web","cluster":"staging-eu-1"`},
		{rolloutEvent{Event: "instance-unreachable", Rollout: 2, Instance: "b", Message: "instance b: context deadline exceeded"},
			"rollout #2: instance-unreachable: instance b: context deadline exceeded", `"instance":"b"`},
	} {
		if got := eventText(tc.ev); !strings.HasPrefix(got, tc.text) {
			t.Errorf("eventText = %q, want it to start with %q", got, tc.text)
		}
		b, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.jsonPart) {
			t.Errorf("JSON %s lacks %s", b, tc.jsonPart)
		}
	}
}
