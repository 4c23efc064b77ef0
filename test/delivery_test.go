package test_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

func TestRun_DeliversEventsSentOverHTTP_PlainAndGzip_FieldsIntactWithMessageIDs(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", nil)

	type sent struct {
		path string
		body any
		gz   bool
	}
	requests := []sent{
		{"/v1/track", map[string]any{"userId": "u-single-plain", "event": "Signed Up", "properties": map[string]any{"plan": "pro", "n": 1}}, false},
		{"/v1/identify", map[string]any{"userId": "u-single-gzip", "traits": map[string]any{"name": "Ada"}}, true},
		{"/v1/batch", map[string]any{"batch": []any{
			map[string]any{"type": "track", "userId": "u-batch-plain-1", "event": "A", "properties": map[string]any{"k": "v1"}},
			map[string]any{"type": "track", "userId": "u-batch-plain-2", "event": "B", "messageId": "my-own-id-1"},
		}}, false},
		{"/v1/batch", map[string]any{"batch": []any{
			map[string]any{"type": "page", "anonymousId": "u-batch-gzip-1", "name": "Home", "properties": map[string]any{"url": "https://x.example/"}},
			map[string]any{"type": "group", "userId": "u-batch-gzip-2", "groupId": "g1", "traits": map[string]any{"size": 3}},
			map[string]any{"type": "alias", "userId": "u-batch-gzip-3", "previousId": "old"},
		}}, true},
	}
	for _, r := range requests {
		code, body := post(t, a.url+r.path, mustJSON(t, r.body), r.gz)
		if code != http.StatusOK || body != `{"success":true}` {
			t.Fatalf("POST %s (gzip %v) = %d %s", r.path, r.gz, code, body)
		}
	}
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 7); err != nil {
		t.Fatalf("sink got %d of 7 events: %v", s.Stats().Unique, err)
	}

	byUser := map[string]map[string]any{}
	for _, raw := range s.Events() {
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("sink event is not JSON: %s", raw)
		}
		id, _ := ev["messageId"].(string)
		if id == "" {
			t.Errorf("event without messageId: %s", raw)
		}
		user, _ := ev["userId"].(string)
		if user == "" {
			user, _ = ev["anonymousId"].(string)
		}
		byUser[user] = ev
	}
	cases := []struct {
		name, user, field string
		want              any
	}{
		{"single plain event keeps its properties", "u-single-plain", "properties", map[string]any{"plan": "pro", "n": 1.0}},
		{"single event gets its type from the route", "u-single-plain", "type", "track"},
		{"single gzip event keeps its traits", "u-single-gzip", "traits", map[string]any{"name": "Ada"}},
		{"identify route sets the type", "u-single-gzip", "type", "identify"},
		{"batch plain event keeps its properties", "u-batch-plain-1", "properties", map[string]any{"k": "v1"}},
		{"a given messageId is kept", "u-batch-plain-2", "messageId", "my-own-id-1"},
		{"batch gzip page keeps its name", "u-batch-gzip-1", "name", "Home"},
		{"batch gzip group keeps its groupId", "u-batch-gzip-2", "groupId", "g1"},
		{"batch gzip alias keeps its previousId", "u-batch-gzip-3", "previousId", "old"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok := byUser[tc.user]
			if !ok {
				t.Fatalf("no event for %s arrived", tc.user)
			}
			if got, want := fmt.Sprint(ev[tc.field]), fmt.Sprint(tc.want); got != want {
				t.Errorf("%s = %s, want %s", tc.field, got, want)
			}
		})
	}
	for _, r := range s.Accepted() {
		if !r.Gzip {
			t.Errorf("upload %d not gzipped (upload.gzip defaults to true)", r.Seq)
		}
	}
}

func TestRun_BadRequests_StoreNothing(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_LIMITS_MAX_EVENT_BYTES":   "1KiB",
		"OUTBOX_LIMITS_MAX_REQUEST_BYTES": "8KiB",
	})
	big := make([]byte, 2000)
	for i := range big {
		big[i] = 'x'
	}
	cases := []struct {
		name string
		body any
		want int
	}{
		{"an event over limits.max_event_bytes is a 400 naming its index",
			map[string]any{"batch": []any{map[string]any{"type": "track", "userId": "u", "event": "ok"}, map[string]any{"type": "track", "userId": "u", "event": string(big)}}}, 400},
		{"a body over limits.max_request_bytes is a 413",
			map[string]any{"batch": []any{map[string]any{"type": "track", "userId": "u", "event": "e", "properties": map[string]any{"a": string(big), "b": string(big), "c": string(big), "d": string(big), "e": string(big)}}}}, 413},
		{"an event without a user is a 400",
			map[string]any{"batch": []any{map[string]any{"type": "track", "event": "e"}}}, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, a.url+"/v1/batch", mustJSON(t, tc.body), false)
			if code != tc.want {
				t.Fatalf("status %d (%s), want %d", code, body, tc.want)
			}
			if tc.want == 400 && tc.name[:2] == "an" && len(body) > 0 {
				var eb struct{ Index *int }
				if json.Unmarshal([]byte(body), &eb) != nil || eb.Index == nil {
					t.Errorf("400 body %s has no index", body)
				}
			}
		})
	}
	// Nothing was stored: the status says so.
	var st struct {
		Queue struct{ Events int64 }
	}
	resp, err := http.Get(a.url + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Queue.Events != 0 || s.Stats().Events != 0 {
		t.Errorf("bad requests stored events: queue %d, sink %d", st.Queue.Events, s.Stats().Events)
	}
}
