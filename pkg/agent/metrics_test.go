package agent_test

import (
	"bytes"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/outboxhq/outbox/pkg/agent"
)

// scrape fetches /metrics and parses it as Prometheus text.
func (h *harness) scrape() map[string]*dto.MetricFamily {
	h.t.Helper()
	r := h.get("/metrics")
	if r.code != http.StatusOK {
		h.t.Fatalf("/metrics = %d", r.code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		h.t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	if bytes.Contains(r.body, []byte("wk-secret")) {
		h.t.Fatalf("/metrics leaks the write key")
	}
	return mfs
}

// value returns the value of the series of family name whose labels include want; ok false
// when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for k, v := range want {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetrics_CountWhatHappened(t *testing.T) {
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk-secret"}}})
	ok := req{path: "/v1/batch", writeKey: "wk-secret",
		body: []byte(`{"batch":[{"type":"track","userId":"u","event":"A"},{"type":"track","userId":"u","event":"B"}]}`)}
	if r := h.do(ok); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	if r := h.do(req{path: "/v1/track", writeKey: "wk-secret", body: []byte(trackEvent)}); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	if r := h.do(req{path: "/v1/batch", writeKey: "wk-secret", body: []byte(`{"batch":[{}]}`)}); r.code != http.StatusBadRequest {
		t.Fatalf("bad batch: %d", r.code)
	}
	if r := h.do(req{path: "/v1/batch", writeKey: "nope", body: ok.body}); r.code != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d", r.code)
	}

	before := h.scrape()
	checks := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"queue holds the stored events", "outbox_queue_events", nil, 3},
		{"nothing uploaded before the flush", "outbox_events_uploaded_total", nil, 0},
	}
	for _, c := range checks {
		if got, ok := value(before, c.metric, c.labels); !ok || got != c.want {
			t.Errorf("before flush, %s: %s = %v (present %v), want %v", c.name, c.metric, got, ok, c.want)
		}
	}

	h.do(req{path: "/v1/flush?wait=10s", writeKey: "wk-secret"})
	after := h.scrape()
	checks = []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"enqueued counts accepted events", "outbox_events_enqueued_total", nil, 3},
		{"uploaded counts delivered events", "outbox_events_uploaded_total", nil, 3},
		{"nothing dead", "outbox_events_dead_total", nil, 0},
		{"queue drained", "outbox_queue_events", nil, 0},
		{"queue bytes drained", "outbox_queue_bytes", nil, 0},
		{"nothing pending (ingest answers once its events are committed)", "outbox_pending_events", nil, 0},
		{"no pending bytes", "outbox_pending_bytes", nil, 0},
		{"nothing in flight once flushed", "outbox_upload_in_flight", nil, 0},
		{"the concurrency limit is exported (auto starts at 1 and grows on good answers)", "outbox_upload_concurrency_limit", nil, 2},
		{"one upload request answered 200", "outbox_upload_requests_total", map[string]string{"code": "200"}, 1},
		{"one upload duration observed", "outbox_upload_duration_seconds", nil, 1},
		{"one batch size observed", "outbox_batch_events", nil, 1},
		{"no backoff retries", "outbox_retries_total", map[string]string{"path": "backoff"}, 0},
		{"one good batch request", "outbox_ingest_requests_total", map[string]string{"route": "/v1/batch", "code": "200"}, 1},
		{"one bad batch request", "outbox_ingest_requests_total", map[string]string{"route": "/v1/batch", "code": "400"}, 1},
		{"one unauthorised batch request", "outbox_ingest_requests_total", map[string]string{"route": "/v1/batch", "code": "401"}, 1},
		{"one track request", "outbox_ingest_requests_total", map[string]string{"route": "/v1/track", "code": "200"}, 1},
	}
	for _, c := range checks {
		if got, ok := value(after, c.metric, c.labels); !ok || got != c.want {
			t.Errorf("%s: %s%v = %v (present %v), want %v", c.name, c.metric, c.labels, got, ok, c.want)
		}
	}
	if got, ok := value(after, "outbox_store_commit_duration_seconds", nil); !ok || got < 2 {
		t.Errorf("store commits observed = %v, want at least the two ingest commits", got)
	}
	if got, ok := value(after, "outbox_last_upload_success_timestamp_seconds", nil); !ok || got <= 0 {
		t.Errorf("last upload success = %v, want a timestamp", got)
	}
	for _, name := range []string{"outbox_store_file_bytes", "outbox_dead_events", "outbox_queue_oldest_age_seconds",
		"outbox_retry_wait_seconds_total"} {
		if _, ok := after[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
}

func TestMetrics_DroppedSeriesExistAtZeroBeforeTheFirstDrop(t *testing.T) {
	h := start(t, setup{})
	mfs := h.scrape()
	for _, reason := range []string{"drop_oldest", "dead_overflow", "checksum", "suppressed", "purged", "source_full"} {
		if got, ok := value(mfs, "outbox_events_dropped_total", map[string]string{"reason": reason}); !ok || got != 0 {
			t.Errorf("outbox_events_dropped_total{reason=%q} = %v (present %v), want 0 before any drop", reason, got, ok)
		}
	}
}
