package sink_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

func TestServer_Batch_DecodesPlainAndGzipBodies(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	for _, tc := range []struct {
		name string
		path string
		body []byte
		hdr  map[string]string
	}{
		{"plain body on /v1/batch", "/v1/batch", body("a", "b"), nil},
		{"gzip body on /v1/import", "/v1/import", gzipped(t, body("c", "d")), map[string]string{"Content-Encoding": "gzip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustPost(t, s.URL()+tc.path, tc.body, tc.hdr)
			if r.status != 200 || r.body != `{"success":true}` {
				t.Fatalf("got %d %s, want 200 {\"success\":true}", r.status, r.body)
			}
		})
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(reqs))
	}
	if reqs[0].Gzip || !reqs[1].Gzip {
		t.Errorf("gzip flags %v %v, want false true", reqs[0].Gzip, reqs[1].Gzip)
	}
	if reqs[1].WireBytes >= reqs[1].BodyBytes && reqs[1].BodyBytes != int64(len(body("c", "d"))) {
		t.Errorf("gzip sizes wire=%d body=%d", reqs[1].WireBytes, reqs[1].BodyBytes)
	}
	if got := strings.Join(reqs[1].MessageIDs, ","); got != "c,d" {
		t.Errorf("messageIds %q, want top-level ids c,d", got)
	}
	if reqs[0].SentAt != "2024-01-02T03:04:05.678Z" {
		t.Errorf("sentAt %q", reqs[0].SentAt)
	}
	evs := s.Events()
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4", len(evs))
	}
	var ev struct {
		MessageID string `json:"messageId"`
	}
	if err := json.Unmarshal(evs[2], &ev); err != nil || ev.MessageID != "c" {
		t.Errorf("event 2 = %s (%v), want the event with messageId c", evs[2], err)
	}
	st := s.Stats()
	want := sink.Stats{Requests: 2, Batches: 2, Events: 4, Unique: 4, Bytes: st.Bytes}
	if st != want || st.Bytes == 0 {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

func TestServer_Batch_RejectsMalformedBodies(t *testing.T) {
	s := sinktest.Start(t, sink.Options{MaxBodyBytes: 1000})
	for _, tc := range []struct {
		name   string
		body   []byte
		hdr    map[string]string
		status int
	}{
		{"not JSON is 400", []byte(`{"batch":[`), nil, 400},
		{"invalid JSON scalar is 400", []byte(`{"batch":[{"a":tru}]}`), nil, 400},
		{"no batch array is 400", []byte(`{"events":[]}`), nil, 400},
		{"an event that is not an object is 400", []byte(`{"batch":[1]}`), nil, 400},
		{"bad gzip is 400", []byte("not gzip"), map[string]string{"Content-Encoding": "gzip"}, 400},
		{"unknown encoding is 415", body("a"), map[string]string{"Content-Encoding": "br"}, 415},
		{"body over the limit after decompression is 413", gzipped(t, body(strings.Split(strings.Repeat("x,", 40), ",")...)), map[string]string{"Content-Encoding": "gzip"}, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustPost(t, s.URL()+"/v1/batch", tc.body, tc.hdr)
			if r.status != tc.status {
				t.Fatalf("status %d (%s), want %d", r.status, r.body, tc.status)
			}
		})
	}
	if st := s.Stats(); st.Batches != 0 || st.Rejected != 7 {
		t.Errorf("stats %+v, want nothing accepted and 7 rejected", st)
	}
	if s.Remaining() != 0 {
		t.Errorf("remaining %d", s.Remaining())
	}
}

func TestServer_Auth_RequiresWriteKeyAsBasicUsername(t *testing.T) {
	s := sinktest.Start(t, sink.Options{WriteKey: "wk_123"})
	basic := func(user string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"))}
	}
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"no credentials is 401", nil, 401},
		{"wrong key is 401", basic("other"), 401},
		{"write key as username is 200", basic("wk_123"), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := mustPost(t, s.URL()+"/v1/batch", body("a"), tc.hdr); r.status != tc.status {
				t.Fatalf("status %d, want %d", r.status, tc.status)
			}
		})
	}
}

func TestServer_OtherRoutes_AreRecordedAndRefused(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	resp, err := newClient(false).Get(s.URL() + "/v1/batch")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/batch: %d, want 405", resp.StatusCode)
	}
	if r := mustPost(t, s.URL()+"/v1/track", body("a"), nil); r.status != 404 {
		t.Errorf("POST /v1/track: %d, want 404", r.status)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Method != "GET" || reqs[1].Path != "/v1/track" {
		t.Fatalf("records %+v, want the GET and the POST", reqs)
	}
}

func TestServer_Stats_ServesCountersAsJSON(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	mustPost(t, s.URL()+"/v1/batch", body("a", "a", ""), nil)
	resp, err := newClient(false).Get(s.URL() + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var got map[string]int64
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("stats body %s: %v", raw, err)
	}
	want := map[string]int64{"requests": 1, "batches_accepted": 1, "events_accepted": 3,
		"unique_events": 2, "duplicate_events": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d (body %s)", k, got[k], v, raw)
		}
	}
	if len(s.Requests()) != 1 {
		t.Errorf("GET /stats was recorded")
	}
}

func TestServer_Duplicates_CountRepeatedMessageIDsAcrossBatches(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	mustPost(t, s.URL()+"/v1/batch", body("a", "b", "", ""), nil)
	mustPost(t, s.URL()+"/v1/batch", body("b", "c", "a"), nil)
	st := s.Stats()
	if st.Events != 7 || st.Unique != 5 || st.Duplicates != 2 || s.Duplicates() != 2 {
		t.Errorf("stats %+v, want 7 events, 5 unique (2 without messageId), 2 duplicates", st)
	}
	if got := s.Accepted()[1].Duplicates; got != 2 {
		t.Errorf("second batch duplicates %d, want 2", got)
	}
	for id, n := range map[string]int{"a": 2, "b": 2, "c": 1, "zzz": 0} {
		if got := s.Deliveries(id); got != n {
			t.Errorf("Deliveries(%q) = %d, want %d", id, got, n)
		}
	}
}

func TestServer_Duplicates_RejectedBatchesDoNotCount(t *testing.T) {
	s := sinktest.StartScript(t, "503")
	mustPost(t, s.URL()+"/v1/batch", body("a"), nil)
	mustPost(t, s.URL()+"/v1/batch", body("a"), nil)
	if st := s.Stats(); st.Unique != 1 || st.Duplicates != 0 || st.Rejected != 1 {
		t.Errorf("stats %+v, want the retried batch counted once", st)
	}
}

func TestServer_WaitEvents_ReturnsOnceDistinctEventsArrive(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			ids := []string{string(rune('a' + i)), string(rune('a' + i)), "shared"}
			if _, err := post(context.Background(), newClient(false), s.URL()+"/v1/batch", body(ids...), nil); err != nil {
				t.Error(err)
			}
		})
	}
	if err := s.WaitEvents(t.Context(), 5); err != nil {
		t.Fatalf("WaitEvents(5): %v", err)
	}
	wg.Wait()
	if st := s.Stats(); st.Unique != 5 || st.Events != 12 || st.Duplicates != 7 {
		t.Errorf("stats %+v", st)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.WaitEvents(ctx, 6); err != context.Canceled {
		t.Errorf("WaitEvents with a canceled ctx = %v, want context.Canceled", err)
	}
	go s.Close()
	if err := s.WaitEvents(context.Background(), 6); err != sink.ErrClosed {
		t.Errorf("WaitEvents after Close = %v, want ErrClosed", err)
	}
}

func TestServer_DiscardEvents_KeepsCountersButNoBodies(t *testing.T) {
	s := sinktest.Start(t, sink.Options{DiscardEvents: true, MaxRequests: 2})
	for range 5 {
		mustPost(t, s.URL()+"/v1/batch", gzipped(t, body("a", "b")), map[string]string{"Content-Encoding": "gzip"})
	}
	if n := len(s.Events()); n != 0 {
		t.Errorf("%d events retained, want 0", n)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[1].Seq != 5 || reqs[1].Events != nil || reqs[1].EventCount != 2 {
		t.Errorf("records %+v, want the last 2 without events", reqs)
	}
	if st := s.Stats(); st.Requests != 5 || st.Events != 10 || st.Unique != 2 || st.Duplicates != 8 {
		t.Errorf("stats %+v", st)
	}
}

func TestServer_Logger_WritesOneLinePerRequestWithoutSecrets(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	s := sinktest.Start(t, sink.Options{Logger: logger, WriteKey: "secret_key"})
	auth := map[string]string{
		"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("secret_key:")),
		"X-Retry-Count": "2",
	}
	mustPost(t, s.URL()+"/v1/batch", body("a", "b"), auth)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "path=/v1/batch") {
			line = l
		}
	}
	for _, want := range []string{"status=200", "outcome=accepted", "events=2", "retry_count=2"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}
	if strings.Contains(out, "secret_key") || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("secret_key:"))) {
		t.Errorf("log reveals the write key: %s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
