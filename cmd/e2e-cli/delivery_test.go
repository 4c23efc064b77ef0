package main_test

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// sixEvents is one event of each Segment type, with explicit messageIds so they can be found.
func sixEvents() []obj {
	return []obj{
		{"type": "track", "messageId": "m-track", "userId": "u1", "event": "Order Completed",
			"properties": obj{"revenue": 12.5, "items": []any{"a", "b"}}, "timestamp": "2024-01-15T10:30:00Z"},
		{"type": "identify", "messageId": "m-identify", "userId": "u1", "traits": obj{"email": "u1@example.com", "plan": "pro"}},
		{"type": "page", "messageId": "m-page", "userId": "u1", "name": "Home", "properties": obj{"path": "/"}},
		{"type": "screen", "messageId": "m-screen", "anonymousId": "anon-1", "name": "Main", "context": obj{"app": obj{"build": "42"}, "library": obj{"name": "e2e", "version": "1"}}},
		{"type": "group", "messageId": "m-group", "userId": "u1", "groupId": "g1", "traits": obj{"name": "Acme"}},
		{"type": "alias", "messageId": "m-alias", "userId": "u2", "previousId": "u1", "integrations": obj{"All": false}},
	}
}

func TestE2ECLI_DeliversAllSixEventTypesWithBasicAuth(t *testing.T) {
	t.Parallel()
	const key = "wk-e2e-secret"
	s := sinktest.Start(t, sink.Options{WriteKey: key})
	events := sixEvents()

	out := runCLI(t, obj{"writeKey": key, "apiHost": s.URL(), "sequences": []obj{seq(0, events...)}})

	out.wantExit(t, 0, true)
	if out.SentBatches != 1 {
		t.Errorf("sentBatches = %d, want 1", out.SentBatches)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Outcome != sink.OutcomeAccepted {
		t.Fatalf("requests = %d (want 1 accepted): %+v", len(reqs), reqs)
	}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(key+":"))
	if got := reqs[0].Header.Get("Authorization"); got != wantAuth {
		t.Errorf("Authorization = %q, want %q", got, wantAuth)
	}
	if _, ok := reqs[0].RetryCount(); ok {
		t.Errorf("first attempt carries X-Retry-Count")
	}
	got := s.Events()
	if len(got) != len(events) {
		t.Fatalf("sink got %d events, want %d", len(got), len(events))
	}
	for i, want := range events {
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(got[i], &ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		for k, v := range want {
			b, _ := json.Marshal(v)
			if ev[k] == nil || !jsonEqual(t, ev[k], b) {
				t.Errorf("event %d (%s) field %s = %s, want %s", i, want["type"], k, ev[k], b)
			}
		}
		if ev["timestamp"] == nil {
			t.Errorf("event %d has no timestamp", i)
		}
	}
	for _, secret := range []string{key, wantAuth[len("Basic "):]} {
		if strings.Contains(out.Stderr, secret) {
			t.Errorf("stderr logs the write key")
		}
	}
}

func TestE2ECLI_RejectedBatchFailsAfterOneRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     func(t *testing.T) sink.Options
		writeKey string
		wantErr  string
	}{
		{
			name: "400 dead-letters the whole batch without bisection",
			opts: func(t *testing.T) sink.Options {
				sc, err := sink.ParseFaults("400:default")
				if err != nil {
					t.Fatal(err)
				}
				return sink.Options{Script: sc}
			},
			writeKey: "wk",
			wantErr:  "400",
		},
		{
			name:     "a wrong write key gets 401 and is not retried",
			opts:     func(*testing.T) sink.Options { return sink.Options{WriteKey: "right"} },
			writeKey: "wrong",
			wantErr:  "401",
		},
		{
			name: "a forbidden write key gets 403 and is not retried",
			opts: func(t *testing.T) sink.Options {
				sc, err := sink.ParseFaults("403:default")
				if err != nil {
					t.Fatal(err)
				}
				return sink.Options{Script: sc}
			},
			writeKey: "wk",
			wantErr:  "403",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := sinktest.Start(t, tc.opts(t))
			events := sixEvents()[:3]

			out := runCLI(t, obj{"writeKey": tc.writeKey, "apiHost": s.URL(), "sequences": []obj{seq(0, events...)}})

			out.wantExit(t, 1, false)
			if out.SentBatches != 0 {
				t.Errorf("sentBatches = %d, want 0", out.SentBatches)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("requests = %d, want exactly 1", n)
			}
			if !strings.Contains(out.Error, tc.wantErr) || !strings.Contains(out.Error, "3 event(s) failed") {
				t.Errorf("error %q does not report the %s for 3 events", out.Error, tc.wantErr)
			}
		})
	}
}

// This test waits out a real Retry-After: 1 and one backoff (at most 500 ms): the binary runs
// on the real clock.
func TestE2ECLI_TransientFailuresAreRetriedAndDoNotCount(t *testing.T) {
	t.Parallel()
	s := sinktest.StartScript(t, "429:ra=1,503,200")

	out := runCLI(t, obj{"writeKey": "wk", "apiHost": s.URL(), "sequences": []obj{seq(0, sixEvents()[:2]...)}})

	out.wantExit(t, 0, true)
	if out.SentBatches != 1 {
		t.Errorf("sentBatches = %d, want 1", out.SentBatches)
	}
	var counts []string
	for _, r := range s.Requests() {
		n, ok := r.RetryCount()
		switch {
		case !ok:
			counts = append(counts, "absent")
		default:
			counts = append(counts, strconv.Itoa(n))
		}
	}
	if want := []string{"absent", "1", "2"}; !slices.Equal(counts, want) {
		t.Errorf("X-Retry-Count per attempt = %v, want absent, 1, 2", counts)
	}
	if n := len(s.Events()); n != 2 {
		t.Errorf("sink accepted %d events, want 2", n)
	}
}

// This test waits out one real backoff (at most 500 ms).
func TestE2ECLI_RetriesExhaustedFails(t *testing.T) {
	t.Parallel()
	s := sinktest.StartScript(t, "500:default")

	out := runCLI(t, obj{
		"writeKey": "wk", "apiHost": s.URL(),
		"sequences": []obj{seq(0, sixEvents()[0])},
		"config":    obj{"maxRetries": 1},
	})

	out.wantExit(t, 1, false)
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2 (one attempt, one retry)", len(reqs))
	}
	if n, ok := reqs[1].RetryCount(); !ok || n != 1 {
		t.Errorf("retry's X-Retry-Count = %d (present %v), want 1", n, ok)
	}
	if !strings.Contains(out.Error, "max_retries") || !strings.Contains(out.Error, "500") {
		t.Errorf("error %q does not say the retries ran out on 500", out.Error)
	}
}

func TestE2ECLI_FlushAtBoundsEachBatch(t *testing.T) {
	t.Parallel()
	s := sinktest.Start(t, sink.Options{})
	var events []obj
	for _, id := range []string{"e1", "e2", "e3", "e4", "e5"} {
		events = append(events, obj{"type": "track", "event": "E", "userId": "u", "messageId": id})
	}

	out := runCLI(t, obj{
		"writeKey": "wk", "apiHost": s.URL() + "/", // a trailing slash is tolerated
		"sequences": []obj{seq(0, events...)},
		"config":    obj{"flushAt": 2},
	})

	out.wantExit(t, 0, true)
	var sizes []int
	var ids []string
	for _, r := range s.Accepted() {
		sizes = append(sizes, r.EventCount)
		ids = append(ids, r.MessageIDs...)
	}
	if !slices.Equal(sizes, []int{2, 2, 1}) {
		t.Errorf("batch sizes = %v, want [2 2 1]", sizes)
	}
	if !slices.Equal(ids, []string{"e1", "e2", "e3", "e4", "e5"}) {
		t.Errorf("delivery order = %v, want e1..e5", ids)
	}
	if out.SentBatches != 3 {
		t.Errorf("sentBatches = %d, want 3", out.SentBatches)
	}
}

// This test sleeps for real: the 600 ms delay of its second sequence.
func TestE2ECLI_SequencesRunInOrderAfterTheirDelay(t *testing.T) {
	t.Parallel()
	s := sinktest.Start(t, sink.Options{})
	ev := func(id string) obj { return obj{"type": "track", "event": "E", "userId": "u", "messageId": id} }

	out := runCLI(t, obj{
		"writeKey": "wk", "apiHost": s.URL(),
		"sequences": []obj{seq(0, ev("a"), ev("b")), seq(600, ev("c"))},
		"config":    obj{"flushInterval": 50},
	})

	out.wantExit(t, 0, true)
	accepted := s.Accepted()
	var ids []string
	var batchOfA sink.Request
	for _, r := range accepted {
		ids = append(ids, r.MessageIDs...)
		if slices.Contains(r.MessageIDs, "a") {
			batchOfA = r
		}
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("delivery order = %v, want a, b, c", ids)
	}
	if out.SentBatches != len(accepted) {
		t.Errorf("sentBatches = %d, sink accepted %d", out.SentBatches, len(accepted))
	}
	stamp := map[string]time.Time{}
	for _, raw := range s.Events() {
		var e struct{ MessageID, Timestamp string }
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if err != nil {
			t.Fatalf("event %s timestamp: %v", e.MessageID, err)
		}
		stamp[e.MessageID] = ts
	}
	if gap := stamp["c"].Sub(stamp["a"]); gap < 600*time.Millisecond-time.Millisecond {
		t.Errorf("c was enqueued %s after a, want at least the 600 ms delay", gap)
	}
	// flushInterval (50 ms) sent the first sequence during the delay, before c existed.
	if slices.Contains(batchOfA.MessageIDs, "c") || !batchOfA.Time.Before(stamp["c"]) {
		t.Errorf("the first sequence's batch %v arrived at %s, not before c was enqueued at %s",
			batchOfA.MessageIDs, batchOfA.Time, stamp["c"])
	}
}
