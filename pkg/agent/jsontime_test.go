package agent_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// start120 is a fake-clock start whose milliseconds end in a zero and which carries
// nanoseconds and a zone: 2025-01-01T00:00:00.120456789Z written from UTC+1.
var start120 = time.Date(2025, time.January, 1, 1, 0, 0, 120456789, time.FixedZone("UTC+1", 3600))

// timesAt returns the string values at the given paths ("upload.last_attempt") of a JSON object.
func timesAt(t *testing.T, body []byte, paths map[string][]string) map[string]string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, body)
	}
	out := make(map[string]string)
	for name, path := range paths {
		var v any = m
		for _, k := range path {
			obj, _ := v.(map[string]any)
			v = obj[k]
		}
		s, ok := v.(string)
		if !ok {
			t.Fatalf("%s is %v, want a time string in %s", name, v, body)
		}
		out[name] = s
	}
	return out
}

func TestAgent_EveryTimeIsRFC3339WithMillisecondsInUTC(t *testing.T) {
	// Retry-After: 60 outlasts the harness's shutdown deadline, so Close does not wait it out
	// on the manual clock.
	const at, atPlus60s = "2025-01-01T00:00:00.120Z", "2025-01-01T00:01:00.120Z"

	t.Run("flush waiting.until and status times", func(t *testing.T) {
		clock := budgettest.New(start120)
		h := start(t, setup{faults: "429:ra=60:default", opts: []uploader.Option{uploader.WithClock(clock)}})
		if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
		r := h.post("/v1/flush?wait=10s", "")
		got := timesAt(t, r.body, map[string][]string{"waiting.until": {"waiting", "until"}})
		if got["waiting.until"] != atPlus60s {
			t.Errorf("flush waiting.until = %q, want %q", got["waiting.until"], atPlus60s)
		}
		got = timesAt(t, h.get("/v1/status").body, map[string][]string{
			"upload.last_attempt":  {"upload", "last_attempt"},
			"upload.failing_since": {"upload", "failing_since"},
			"retry.waiting_until":  {"retry", "waiting_until"},
		})
		want := map[string]string{"upload.last_attempt": at, "upload.failing_since": at, "retry.waiting_until": atPlus60s}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("status %s = %q, want %q", k, got[k], w)
			}
		}
	})

	t.Run("auth pause times", func(t *testing.T) {
		clock := budgettest.New(start120)
		h := start(t, setup{faults: "401:default", opts: []uploader.Option{uploader.WithClock(clock)}})
		if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
		if fr := h.flush(); fr.Done || fr.Error == "" {
			t.Fatalf("flush = %+v, want delivery paused with the batch queued", fr)
		}
		got := timesAt(t, h.get("/v1/status").body, map[string][]string{
			"auth_pause.since":      {"auth_pause", "since"},
			"auth_pause.next_probe": {"auth_pause", "next_probe"},
		})
		want := map[string]string{"auth_pause.since": at, "auth_pause.next_probe": atPlus60s}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("status %s = %q, want %q", k, got[k], w)
			}
		}
	})

	t.Run("dead-letter times", func(t *testing.T) {
		clock := budgettest.New(start120)
		h := start(t, setup{faults: "404:default", opts: []uploader.Option{uploader.WithClock(clock)}})
		if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
		if fr := h.flush(); !fr.Done {
			t.Fatalf("flush = %+v, want the rejected batch dead-lettered", fr)
		}
		var list agent.DeadList
		r := h.get("/v1/dead")
		r.json(t, &list)
		if len(list.Batches) != 1 {
			t.Fatalf("dead list = %s, want one batch", r.body)
		}
		got := timesAt(t, h.get("/v1/dead/"+list.Batches[0].ID).body, map[string][]string{
			"at":            {"at"},
			"first_attempt": {"first_attempt"},
			"last_attempt":  {"last_attempt"},
		})
		for _, k := range []string{"first_attempt", "last_attempt"} {
			if got[k] != at {
				t.Errorf("dead batch %s = %q, want %q", k, got[k], at)
			}
		}
		// The store stamps at from the batch's key, with whole seconds: only its form is known.
		if ts, err := time.Parse(agent.TimeLayout, got["at"]); err != nil || ts.Location() != time.UTC ||
			ts.Format(agent.TimeLayout) != got["at"] {
			t.Errorf("dead batch at = %q, want RFC 3339 with milliseconds in UTC", got["at"])
		}
	})
}
