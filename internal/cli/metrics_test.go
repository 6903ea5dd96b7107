package cli

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics from base in the text exposition format.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams
}

// value is the sum of a family's samples whose labels include want (counter, gauge, or histogram count).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// boundedLabels are the only labels fleetwave's series may carry, each with the values it may take: none grows
// with the fleet (no repository, PR, app, cluster, delivery or URL).
var boundedLabels = map[string]*regexp.Regexp{
	"service":  regexp.MustCompile(`^(github|argocd|charts)$`),
	"method":   regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE|HEAD|other)$`),
	"code":     regexp.MustCompile(`^([1-5]xx|error)$`),
	"event":    regexp.MustCompile(`^([a-z_]+)$`),
	"result":   regexp.MustCompile(`^(ok|error|handled|failed|dropped)$`),
	"outcome":  regexp.MustCompile(`^(accepted|duplicate|ignored|unauthorized|bad_request|unavailable)$`),
	"state":    regexp.MustCompile(`^[a-z_-]+$`),
	"kind":     regexp.MustCompile(`^[a-z0-9-]+$`),
	"resource": regexp.MustCompile(`^[a-z_]+$`),
	"trigger":  regexp.MustCompile(`^(pull_request|merge_group|other)$`),
	"status":   regexp.MustCompile(`^(changed|unchanged|added|removed|error|skipped|other)$`),
	"le":       regexp.MustCompile(`.`),
	// The inventory's (#37): the configured instances ("" the one of FLEETWAVE_ARGOCD_URL), Argo CD's codes.
	"instance": regexp.MustCompile(`^([a-z0-9]([a-z0-9-]*[a-z0-9])?)?$`),
	"sync":     regexp.MustCompile(`^(Synced|OutOfSync|Unknown)$`),
	"health":   regexp.MustCompile(`^(Healthy|Progressing|Degraded|Suspended|Missing|Unknown)$`),
}

// checkBounded fails on a fleetwave_ series with a label outside boundedLabels, or a value naming a thing of
// the fleet (forbidden).
func checkBounded(t *testing.T, fams map[string]*dto.MetricFamily, forbidden ...string) {
	t.Helper()
	series := 0
	for name, f := range fams {
		if !strings.HasPrefix(name, "fleetwave_") {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				re, ok := boundedLabels[l.GetName()]
				if !ok || !re.MatchString(l.GetValue()) {
					t.Errorf("%s{%s=%q}: label not bounded", name, l.GetName(), l.GetValue())
				}
				for _, f := range forbidden {
					if strings.Contains(l.GetValue(), f) {
						t.Errorf("%s{%s=%q} names %q", name, l.GetName(), l.GetValue(), f)
					}
				}
			}
		}
	}
	t.Logf("/metrics: %d fleetwave series, labels checked", series)
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
