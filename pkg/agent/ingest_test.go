package agent_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
)

func TestIngest_EventsArriveAtSinkIntactWithMessageID(t *testing.T) {
	cases := []struct {
		name     string
		path     string
		body     string
		gzip     bool
		wantType []string
	}{
		{"single track, plain", "/v1/track",
			`{"userId":"u1","event":"Signed Up","properties":{"plan":"pro","seats":3},"custom":{"a":[1,2.5,null]}}`,
			false, []string{"track"}},
		{"single identify, gzip", "/v1/identify",
			`{"userId":"u1","traits":{"email":"a@example.com"},"custom":{"a":[1,2.5,null]}}`,
			true, []string{"identify"}},
		{"batch, plain", "/v1/batch",
			`{"writeKey":"ignored","sentAt":"2024-01-01T00:00:00Z","batch":[` +
				`{"type":"track","userId":"u1","event":"A","custom":{"a":[1,2.5,null]}},` +
				`{"type":"page","anonymousId":"anon","name":"Home","custom":{"a":[1,2.5,null]}}]}`,
			false, []string{"track", "page"}},
		{"batch, gzip", "/v1/batch",
			`{"batch":[{"type":"group","userId":"u1","groupId":"g1","custom":{"a":[1,2.5,null]}},` +
				`{"type":"alias","userId":"u2","previousId":"u1","custom":{"a":[1,2.5,null]}}]}`,
			true, []string{"group", "alias"}},
		{"import is a batch", "/v1/import",
			`{"batch":[{"type":"screen","userId":"u1","name":"Main","custom":{"a":[1,2.5,null]}}]}`,
			false, []string{"screen"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{})
			r := h.do(req{path: tc.path, body: []byte(tc.body), gzip: tc.gzip})
			if r.code != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"success":true}` {
				t.Fatalf("answer = %d %s, want 200 {\"success\":true}", r.code, r.body)
			}
			if got := h.stored(); got != int64(len(tc.wantType)) {
				t.Fatalf("stored %d events before flush, want %d (durable on 200)", got, len(tc.wantType))
			}
			if fr := h.flush(); !fr.Done {
				t.Fatalf("flush not done: %+v", fr)
			}
			evs := h.sinkEvents()
			if len(evs) != len(tc.wantType) {
				t.Fatalf("sink got %d events, want %d", len(evs), len(tc.wantType))
			}
			for i, ev := range evs {
				if ev["type"] != tc.wantType[i] {
					t.Errorf("event %d type = %v, want %s", i, ev["type"], tc.wantType[i])
				}
				if id, _ := ev["messageId"].(string); id == "" {
					t.Errorf("event %d has no messageId: %v", i, ev)
				}
				if got := fmt.Sprint(ev["custom"]); got != "map[a:[1 2.5 <nil>]]" {
					t.Errorf("event %d unknown field custom = %s, want it kept", i, got)
				}
				if _, ok := ev["writeKey"]; ok {
					t.Errorf("event %d carries the batch's writeKey", i)
				}
			}
		})
	}
}

func TestIngest_BatchContextMergedIntoEvents(t *testing.T) {
	h := start(t, setup{})
	r := h.post("/v1/batch", `{"context":{"ip":"1.2.3.4","locale":"en"},"batch":[`+
		`{"type":"track","userId":"u","event":"E","context":{"locale":"fr"}}]}`)
	if r.code != http.StatusOK {
		t.Fatalf("answer = %d %s", r.code, r.body)
	}
	h.flush()
	evs := h.sinkEvents()
	if len(evs) != 1 {
		t.Fatalf("sink got %d events, want 1", len(evs))
	}
	ctx, _ := evs[0]["context"].(map[string]any)
	if ctx["ip"] != "1.2.3.4" || ctx["locale"] != "fr" {
		t.Fatalf("context = %v, want ip from the batch and the event's own locale", ctx)
	}
}

// batchWithKey is a one-event batch body with key as its top-level writeKey ("" = none).
func batchWithKey(key string) []byte {
	field := ""
	if key != "" {
		field = `"writeKey":"` + key + `",`
	}
	return []byte(`{` + field + `"batch":[{"type":"track","userId":"u","event":"E"}]}`)
}

// A request needs a write key (Basic auth) or the token. A batch body's top-level writeKey
// authenticates a /v1/batch or /v1/import request that carries no Authorization header
// (analytics-node 2.x sends its key only there); a header, when present, decides.
func TestIngest_Auth(t *testing.T) {
	cfg := agent.Config{WriteKeys: []string{"wk-one", "wk-two"}, Token: "tok-secret"}
	cases := []struct {
		name     string
		writeKey string // Basic auth username; "" = no Basic auth
		header   map[string]string
		want     int
		path     string // "" = /v1/track with one event
		body     []byte
	}{
		{"no credential is refused", "", nil, http.StatusUnauthorized, "", nil},
		{"wrong write key is refused", "wk-wrong", nil, http.StatusUnauthorized, "", nil},
		{"write key prefix is refused", "wk-on", nil, http.StatusUnauthorized, "", nil},
		{"wrong bearer token is refused", "", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized, "", nil},
		{"first write key is accepted", "wk-one", nil, http.StatusOK, "", nil},
		{"second write key is accepted", "wk-two", nil, http.StatusOK, "", nil},
		{"bearer token is accepted", "", map[string]string{"Authorization": "Bearer tok-secret"}, http.StatusOK, "", nil},
		{"a batch body's key is accepted", "", nil, http.StatusOK, "/v1/batch", batchWithKey("wk-two")},
		{"a batch body's key is accepted on /v1/import", "", nil, http.StatusOK, "/v1/import", batchWithKey("wk-one")},
		{"a wrong batch body key is refused", "", nil, http.StatusUnauthorized, "/v1/batch", batchWithKey("wk-wrong")},
		{"a batch without any key is refused", "", nil, http.StatusUnauthorized, "/v1/batch", batchWithKey("")},
		{"a body that is not JSON is refused as unauthenticated", "", nil, http.StatusUnauthorized, "/v1/batch", []byte(`{"writeKey":"wk-one",`)},
		{"a wrong header is refused whatever the body says", "wk-wrong", nil, http.StatusUnauthorized, "/v1/batch", batchWithKey("wk-one")},
		{"a right header is accepted whatever the body says", "wk-one", nil, http.StatusOK, "/v1/batch", batchWithKey("wk-wrong")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{agent: cfg})
			path, body := tc.path, tc.body
			if path == "" {
				path, body = "/v1/track", []byte(`{"userId":"u","event":"E"}`)
			}
			r := h.do(req{path: path, body: body, writeKey: tc.writeKey, header: tc.header})
			if r.code != tc.want {
				t.Fatalf("answer = %d %s, want %d", r.code, r.body, tc.want)
			}
			wantStored := int64(0)
			if tc.want == http.StatusOK {
				wantStored = 1
			}
			if got := h.stored(); got != wantStored {
				t.Fatalf("stored %d events, want %d", got, wantStored)
			}
			if bytes.Contains(r.body, []byte("wk-")) || bytes.Contains(r.body, []byte("tok-")) {
				t.Fatalf("answer leaks a secret: %s", r.body)
			}
		})
	}
}

func TestIngest_BadRequestStoresNothing(t *testing.T) {
	big := `{"type":"track","userId":"u","event":"E","properties":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	ok := `{"type":"track","userId":"u","event":"E"}`
	cases := []struct {
		name      string
		path      string
		body      string
		header    map[string]string
		wantIndex int // -1: no index in the answer
	}{
		{"malformed JSON has no index", "/v1/batch", `not json`, nil, -1},
		{"batch that is not an array has no index", "/v1/batch", `{"batch":{}}`, nil, -1},
		{"event over max_event_bytes names its index", "/v1/batch", `{"batch":[` + ok + `,` + ok + `,` + big + `]}`, nil, 2},
		{"event without userId names its index", "/v1/batch", `{"batch":[` + ok + `,{"type":"track","event":"E"}]}`, nil, 1},
		{"bad timestamp names its index", "/v1/batch", `{"batch":[{"type":"track","userId":"u","event":"E","timestamp":"yesterday"}]}`, nil, 0},
		{"track without event is refused", "/v1/track", `{"userId":"u"}`, nil, 0},
		{"oversized single event is refused", "/v1/track", big, nil, 0},
		{"unknown content encoding is refused", "/v1/track", ok, map[string]string{"Content-Encoding": "br"}, -1},
		{"corrupt gzip is refused", "/v1/track", ok, map[string]string{"Content-Encoding": "gzip"}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{agent: agent.Config{MaxEventBytes: 1024}})
			r := h.do(req{path: tc.path, body: []byte(tc.body), header: tc.header})
			if r.code != http.StatusBadRequest {
				t.Fatalf("answer = %d %s, want 400", r.code, r.body)
			}
			var eb struct {
				Error string `json:"error"`
				Index *int   `json:"index"`
			}
			r.json(t, &eb)
			if eb.Error == "" {
				t.Errorf("answer has no error message: %s", r.body)
			}
			switch {
			case tc.wantIndex < 0 && eb.Index != nil:
				t.Errorf("index = %d, want none", *eb.Index)
			case tc.wantIndex >= 0 && (eb.Index == nil || *eb.Index != tc.wantIndex):
				t.Errorf("answer %s, want index %d", r.body, tc.wantIndex)
			}
			if got := h.stored(); got != 0 {
				t.Fatalf("stored %d events, want none", got)
			}
		})
	}
}

func TestIngest_BodyOverLimitIs413(t *testing.T) {
	const limit = 64 << 10
	event := `{"type":"track","userId":"u","event":"E","properties":{"pad":"` + strings.Repeat("y", 900) + `"}}`
	var sb strings.Builder
	sb.WriteString(`{"batch":[`)
	for i := 0; sb.Len() < limit+1000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(event)
	}
	sb.WriteString(`]}`)
	oversized := sb.String()
	// A gzip bomb: 2 MiB of zeros inside a batch, a few tens of KB on the wire.
	bomb := `{"batch":[{"type":"track","userId":"u","event":"` + strings.Repeat("0", 2<<20) + `"}]}`

	cases := []struct {
		name string
		body string
		gzip bool
	}{
		{"plain body over the limit", oversized, false},
		{"gzip body over the limit once decompressed", oversized, true},
		{"gzip bomb", bomb, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{agent: agent.Config{MaxRequestBytes: limit}})
			r := h.do(req{path: "/v1/batch", body: []byte(tc.body), gzip: tc.gzip})
			if r.code != http.StatusRequestEntityTooLarge {
				t.Fatalf("answer = %d %.200s, want 413", r.code, r.body)
			}
			var eb struct{ Error string }
			r.json(t, &eb)
			if eb.Error == "" {
				t.Errorf("413 without an error message")
			}
			if got := h.stored(); got != 0 {
				t.Fatalf("stored %d events, want none", got)
			}
		})
	}
}

func TestIngest_DeclaredContentLengthOverLimitIs413BeforeTheBodyArrives(t *testing.T) {
	cases := []struct {
		name string
		gzip bool
	}{
		{"plain body", false},
		{"gzip body (its raw bytes are bounded by the limit too)", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, setup{agent: agent.Config{MaxRequestBytes: 64 << 10}})
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Headers and the first bytes of a body that is never sent in full: only an answer
			// that does not wait for the body arrives before the deadline.
			enc, first := "", `{"batch":[`
			if tc.gzip {
				enc, first = "Content-Encoding: gzip\r\n", string(gzipBytes(t, []byte(first))[:10]) // the gzip header
			}
			head := "POST /v1/batch HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\n" + enc +
				"Content-Length: 99999999\r\n\r\n" + first
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // the agent's read timeout is 60 s
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer while the body is pending: %v", err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("answer = %d %s, want 413", res.StatusCode, b)
			}
			if got := h.stored(); got != 0 {
				t.Errorf("stored %d events, want none", got)
			}
		})
	}
}

// TestIngest_ConcurrentBatchesArriveIntact sends batches of events as SDKs send them (kept
// byte for byte, so stored as the body's own bytes) from several clients at once, plain and
// gzipped, of varying sizes: every event reaches the sink exactly as sent, whichever request
// body buffer it was read into.
func TestIngest_ConcurrentBatchesArriveIntact(t *testing.T) {
	h := start(t, setup{})
	const clients, requests = 4, 6
	sent := map[string]string{}
	bodies := make([][][]byte, clients)
	for c := range clients {
		for r := range requests {
			var evs []string
			for e := range 5 + 7*r {
				id := fmt.Sprintf("m-%d-%d-%d", c, r, e)
				ev := fmt.Sprintf(`{"type":"track","event":"E","userId":"u%d","messageId":%q,`+
					`"timestamp":"2024-01-01T00:00:00Z","context":{"library":{"name":"t"}},"properties":{"pad":%q}}`,
					c, id, strings.Repeat("x", 40*e+r))
				sent[id] = ev
				evs = append(evs, ev)
			}
			bodies[c] = append(bodies[c], []byte(`{"batch":[`+strings.Join(evs, ",")+`]}`))
		}
	}
	codes := make(chan int, clients*requests)
	for c := range clients {
		go func() {
			for r, body := range bodies[c] {
				codes <- h.do(req{path: "/v1/batch", body: body, gzip: r%2 == 1}).code
			}
		}()
	}
	for range clients * requests {
		if code := <-codes; code != http.StatusOK {
			t.Fatalf("answer %d, want 200", code)
		}
	}
	if fr := h.flush(); !fr.Done {
		t.Fatalf("flush not done: %+v", fr)
	}
	got := h.sink.Events()
	if len(got) != len(sent) {
		t.Fatalf("sink got %d events, want %d", len(got), len(sent))
	}
	for _, raw := range got {
		var ev struct{ MessageID string }
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("sink event is not JSON: %v: %s", err, raw)
		}
		if want := sent[ev.MessageID]; string(raw) != want {
			t.Fatalf("event %s arrived as\n%s\nwant it as sent\n%s", ev.MessageID, raw, want)
		}
	}
}
