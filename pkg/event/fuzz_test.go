package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/event/eventtest"
)

// seeds returns the fixtures in testdata/events.
func seeds(t testing.TB) [][]byte {
	t.Helper()
	paths, err := filepath.Glob("testdata/events/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no seed fixtures: %v", err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.TrimSpace(b))
	}
	return out
}

// knownKeys are the top-level fields normalisation may change.
var knownKeys = map[string]bool{"type": true, "messageId": true, "timestamp": true, "context": true, "integrations": true}

// checkNormalised asserts the fuzz property for one accepted event: valid
// JSON with messageId, timestamp and type, and every other field of in
// (decoded top level, or nil) kept byte for byte, context members included.
func checkNormalised(t *testing.T, in map[string]json.RawMessage, out []byte, typ string) {
	t.Helper()
	m := fields(t, out)
	for _, k := range []string{"messageId", "timestamp", "type"} {
		var s string
		if err := json.Unmarshal(m[k], &s); err != nil || s == "" {
			t.Fatalf("%s is %s, not a non-empty string: %s", k, m[k], out)
		}
	}
	if typ != "" && string(m["type"]) != `"`+typ+`"` {
		t.Fatalf("type = %s, want the route's %q", m["type"], typ)
	}
	for k, v := range in {
		if knownKeys[k] {
			continue
		}
		if !bytes.Equal(m[k], v) {
			t.Fatalf("field %q changed: %s → %s", k, v, m[k])
		}
	}
	var inCtx, outCtx map[string]json.RawMessage
	if json.Unmarshal(in["context"], &inCtx) == nil && inCtx != nil {
		if err := json.Unmarshal(m["context"], &outCtx); err != nil {
			t.Fatalf("context is not an object: %s", m["context"])
		}
		for k, v := range inCtx {
			if !bytes.Equal(outCtx[k], v) {
				t.Fatalf("context.%s changed: %s → %s", k, v, outCtx[k])
			}
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s, "")
	}
	f.Add(eventtest.Track(1), "")
	f.Add(eventtest.TrackBare(2), "track")
	f.Add([]byte(`{"userId":"u","type":"identify","context":null,"messageId":""}`), "page")
	f.Add([]byte(`{"type":"alias","previousId":1,"userId":2,"timestamp":"2024-05-01T12:00:00+02:00"}`), "")
	f.Add([]byte(`{"type":"screen","anonymousId":"a","context":{"library":1,"x":[{"y":"\u0000"}]}}`), "")
	f.Fuzz(func(t *testing.T, data []byte, typ string) {
		out, err := event.Normalize(data, typ, opts())
		if err != nil {
			var e *event.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *event.Error", err)
			}
			if strings.HasPrefix(e.Reason, "invalid JSON") && !strings.Contains(e.Reason, "nested too deeply") &&
				strictValid(data) {
				t.Fatalf("valid JSON refused as invalid: %v", err)
			}
			return
		}
		if !strictValid(data) {
			t.Fatalf("invalid JSON accepted: %q", data)
		}
		var in map[string]json.RawMessage
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatalf("accepted input that is not an object: %v", err)
		}
		checkNormalised(t, in, out, typ)
		checkIdempotent(t, out, typ)
	})
}

// checkIdempotent asserts that normalising an accepted event's output again, through the same
// route or the untyped one, accepts it and changes no byte: an event re-queued by a replay or
// handed from the agent to the library must not get a second messageId or timestamp, a moved
// context.library or a rewritten field.
func checkIdempotent(t *testing.T, out []byte, typ string) {
	t.Helper()
	routes := []string{typ}
	if typ != "" {
		routes = append(routes, "")
	}
	for _, route := range routes {
		again, err := event.Normalize(out, route, opts())
		if err != nil {
			t.Fatalf("Normalize(Normalize(x)) with type %q refused %s: %v", route, out, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("Normalize(Normalize(x)) with type %q changed the event:\n first: %s\nsecond: %s", route, out, again)
		}
	}
}

func FuzzParseBatch(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
		f.Add([]byte(`{"batch":[` + string(s) + `],"context":{"ip":"1"},"integrations":{"All":false}}`))
	}
	f.Add(eventtest.Batch(3, 0, eventtest.Track))
	f.Add([]byte(`{"batch":[]}`))
	f.Add([]byte(`{"batch":[{"type":"page","userId":"u","context":{"ip":"2"}},{"type":"page","anonymousId":"a"}],"context":{"ip":"1","library":{}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := event.ParseBatch(body, opts())
		var in struct {
			Batch []json.RawMessage `json:"batch"`
		}
		decoded := json.Unmarshal(body, &in) == nil
		if err != nil {
			var e *event.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *event.Error", err)
			}
			if evs != nil {
				t.Fatalf("events returned with an error")
			}
			if decoded && e.Index >= len(in.Batch) {
				t.Fatalf("Index %d out of range of %d events: %v", e.Index, len(in.Batch), err)
			}
			return
		}
		if !decoded || !strictValid(body) {
			t.Fatalf("accepted a body encoding/json refuses: %q", body)
		}
		if len(evs) != len(in.Batch) {
			t.Fatalf("got %d events, body has %d", len(evs), len(in.Batch))
		}
		for i, ev := range evs {
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(in.Batch[i], &raw); err != nil {
				t.Fatalf("event %d accepted but not an object: %v", i, err)
			}
			checkNormalised(t, raw, ev, "")
			checkIdempotent(t, ev, "")
		}
	})
}
