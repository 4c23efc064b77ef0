package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

const trackEvent = `{"userId":"u","event":"E"}`

func TestStatus_ShowsFailingSinceWhileSinkFails(t *testing.T) {
	clock := budgettest.New(time.Time{})
	h := start(t, setup{faults: "500:default", opts: []uploader.Option{uploader.WithClock(clock)}})
	if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	fr := h.flush()
	if fr.Done || fr.Waiting == nil || fr.Waiting.Path != uploader.PathBackoff {
		t.Fatalf("flush against a failing sink = %+v, want waiting on backoff", fr)
	}
	st := h.status()
	if st.Upload.FailingSince == nil || st.Upload.LastAttempt == nil {
		t.Fatalf("status while failing = %+v, want failing_since and last_attempt", st.Upload)
	}
	if st.Upload.LastResult != "500" || st.Retry.Path != uploader.PathBackoff || st.Retry.WaitingUntil == nil {
		t.Fatalf("status while failing: upload %+v retry %+v", st.Upload, st.Retry)
	}
	if st.Queue.Events != 1 {
		t.Fatalf("queue events = %d, want 1 still queued", st.Queue.Events)
	}
	if r := h.get("/readyz"); r.code != http.StatusOK {
		t.Fatalf("readyz during a collector outage = %d %s, want 200", r.code, r.body)
	}

	// The collector recovers; once the backoff wait has passed, the event goes through.
	if err := h.sink.SetScript(sink.Script{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatalf("worker never started its backoff wait: %v", err)
	}
	clock.Advance(2 * time.Minute)
	// The worker wakes on its own goroutine; until it has retried, Flush still reports the
	// (now past) wait.
	for fr := h.flush(); !fr.Done; fr = h.flush() {
		if ctx.Err() != nil || fr.Waiting == nil || fr.Waiting.Until.After(clock.Now()) {
			t.Fatalf("flush after recovery = %+v, want done", fr)
		}
		runtime.Gosched()
	}
	st = h.status()
	if st.Upload.FailingSince != nil || st.Upload.LastSuccess == nil || st.Queue.Events != 0 {
		t.Fatalf("status after recovery: %+v queue %+v", st.Upload, st.Queue)
	}
}

func TestStatus_HasTheSpecShape(t *testing.T) {
	h := start(t, setup{})
	r := h.get("/v1/status")
	if r.code != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status answer = %d %q", r.code, r.header.Get("Content-Type"))
	}
	var m map[string]any
	r.json(t, &m)
	want := map[string][]string{
		"queue": {"bytes", "events", "oldest_age_seconds"},
		"dead":  {"batches", "bytes", "events"},
		"retry": {"attempt", "path"}, // waiting_until absent: not waiting
		"store": {"file_bytes", "sync"},
	}
	for obj, keys := range want {
		sub, ok := m[obj].(map[string]any)
		if !ok {
			t.Fatalf("status has no %q object: %s", obj, r.body)
		}
		if got := sortedKeys(sub); strings.Join(got, ",") != strings.Join(keys, ",") {
			t.Errorf("%s keys = %v, want %v", obj, got, keys)
		}
	}
	up, _ := m["upload"].(map[string]any)
	if got := strings.Join(sortedKeys(up), ","); got != "concurrency_limit,in_flight" {
		t.Errorf("upload = %v, want every time absent before any attempt, and the batches in flight and their limit", up)
	}
	if up["in_flight"] != 0.0 || up["concurrency_limit"] != 1.0 {
		t.Errorf("upload = %v, want nothing in flight and a limit of 1 (auto starts at one) before any attempt", up)
	}
	if m["version"] == "" || m["version"] == nil {
		t.Errorf("status has no version")
	}
	if rt := m["retry"].(map[string]any); rt["path"] != "none" {
		t.Errorf("retry.path = %v, want none", rt["path"])
	}
	if st := m["store"].(map[string]any); st["sync"] != "always" {
		t.Errorf("store.sync = %v, want always", st["sync"])
	}
}

func TestFlush_WithoutWaitStartsUpload(t *testing.T) {
	h := start(t, setup{})
	for range 3 {
		if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
	}
	r := h.post("/v1/flush", "")
	if r.code != http.StatusAccepted && r.code != http.StatusOK {
		t.Fatalf("flush = %d %s, want 202 or 200", r.code, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.sink.WaitEvents(ctx, 3); err != nil {
		t.Fatalf("events did not arrive after a flush without wait: %v", err)
	}
}

func TestFlush_BadWaitIs400(t *testing.T) {
	h := start(t, setup{})
	for _, w := range []string{"soon", "-1s", "0s", "48h", "2h"} {
		if r := h.post("/v1/flush?wait="+w, ""); r.code != http.StatusBadRequest {
			t.Errorf("wait=%s: %d %s, want 400", w, r.code, r.body)
		}
	}
}

func TestReadyz_QueueFullUnderRejectThenDrains(t *testing.T) {
	h := start(t, setup{upload: func(c *uploader.Config) {
		c.Queue.MaxBytes = 2000
		c.Queue.WhenFull = "reject"
	}})
	if r := h.get("/readyz"); r.code != http.StatusOK {
		t.Fatalf("readyz on an empty queue = %d %s", r.code, r.body)
	}
	var full resp
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatalf("queue never filled up")
		}
		full = h.post("/v1/track", trackEvent)
		if full.code != http.StatusOK {
			break
		}
	}
	if full.code != http.StatusServiceUnavailable || full.header.Get("Retry-After") != "1" {
		t.Fatalf("ingest into a full queue = %d Retry-After %q %s, want 503 with Retry-After: 1",
			full.code, full.header.Get("Retry-After"), full.body)
	}
	r := h.get("/readyz")
	if r.code != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "queue full") {
		t.Fatalf("readyz with a full queue = %d %s, want 503 naming the queue", r.code, r.body)
	}
	if fr := h.flush(); !fr.Done {
		t.Fatalf("flush = %+v", fr)
	}
	if r := h.get("/readyz"); r.code != http.StatusOK {
		t.Fatalf("readyz after the queue drained = %d %s, want 200", r.code, r.body)
	}
	if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
		t.Fatalf("ingest after the queue drained = %d %s", r.code, r.body)
	}
}

func TestShutdown_StopsIntakeThenClosesClient(t *testing.T) {
	h := start(t, setup{})
	if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.agent.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := h.sink.Stats().Events; got != 1 {
		t.Fatalf("sink got %d events, want the queued one uploaded by the last pass", got)
	}
	// The handler still answers after the server stopped: intake refuses, readyz says why.
	rec := httptest.NewRecorder()
	h.agent.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/track", strings.NewReader(trackEvent)))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("ingest after shutdown = %d Retry-After %q, want 503 with Retry-After: 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	rec = httptest.NewRecorder()
	h.agent.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "shutting down") {
		t.Fatalf("readyz after shutdown = %d %s", rec.Code, rec.Body)
	}
}

func TestDead_ListShowReplayPurge(t *testing.T) {
	h := start(t, setup{faults: "400x2"})
	// Two single-event batches, each rejected for good by the collector.
	for i := range 2 {
		if r := h.post("/v1/track", trackEvent); r.code != http.StatusOK {
			t.Fatalf("ingest: %d %s", r.code, r.body)
		}
		if fr := h.flush(); !fr.Done {
			t.Fatalf("flush %d = %+v", i, fr)
		}
	}
	var list agent.DeadList
	h.get("/v1/dead").json(t, &list)
	if len(list.Batches) != 2 || list.Batches[0].Status != 400 || list.Batches[0].Events != 1 {
		t.Fatalf("dead list = %+v, want two rejected batches of one event", list)
	}
	var one agent.DeadBatch
	r := h.get("/v1/dead/" + list.Batches[0].ID)
	r.json(t, &one)
	if r.code != http.StatusOK || len(one.Batch) != 1 || !strings.Contains(string(one.Batch[0]), `"event":"E"`) {
		t.Fatalf("dead show = %d %s", r.code, r.body)
	}
	if r := h.get("/v1/dead/notanid"); r.code != http.StatusNotFound {
		t.Fatalf("dead show of an unknown id = %d %s, want 404", r.code, r.body)
	}

	// Replay the first (the sink accepts now), purge needs ids or all, then purge all.
	var rr agent.DeadReplayResult
	mustJSON(t, h.do(req{path: "/v1/dead/replay", body: jsonBody(t, agent.DeadRequest{IDs: []string{list.Batches[0].ID}})}), &rr)
	if rr.Events != 1 {
		t.Fatalf("replay = %+v, want 1 event", rr)
	}
	if fr := h.flush(); !fr.Done || h.sink.Stats().Events != 1 {
		t.Fatalf("replayed event not delivered: %+v, sink %+v", fr, h.sink.Stats())
	}
	if r := h.post("/v1/dead/purge", `{}`); r.code != http.StatusBadRequest {
		t.Fatalf("purge without ids or all = %d, want 400", r.code)
	}
	var pr agent.DeadPurgeResult
	mustJSON(t, h.post("/v1/dead/purge", `{"all":true}`), &pr)
	if pr.Batches != 1 {
		t.Fatalf("purge all = %+v, want 1 batch", pr)
	}
	h.get("/v1/dead").json(t, &list)
	if len(list.Batches) != 0 {
		t.Fatalf("dead list after purge = %+v", list)
	}
}

func mustJSON(t *testing.T, r resp, v any) {
	t.Helper()
	if r.code != http.StatusOK {
		t.Fatalf("answer = %d %s, want 200", r.code, r.body)
	}
	r.json(t, v)
}

func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestServe_ContextCancelShutsDown(t *testing.T) {
	h := start(t, setup{})
	a, err := agent.New(agent.Config{}, h.client, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Serve(ctx, ln) }()
	res, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	res.Body.Close()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
	}
	if err := h.client.EnqueueNormalized(context.Background(), []byte(`{}`)); !errors.Is(err, errs.ErrClosed) {
		t.Fatalf("client after shutdown: %v, want ErrClosed", err)
	}
}

func TestIngest_EventsLargerThanTheWholeQueueAre413NotRetryable(t *testing.T) {
	h := start(t, setup{upload: func(c *uploader.Config) {
		c.Queue.MaxBytes = 100 // smaller than one track event
		c.Queue.WhenFull = "reject"
	}})
	r := h.post("/v1/track", trackEvent)
	if r.code != http.StatusRequestEntityTooLarge || r.header.Get("Retry-After") != "" {
		t.Fatalf("ingest of an event over queue.max_bytes = %d Retry-After %q %s, want 413 without Retry-After",
			r.code, r.header.Get("Retry-After"), r.body)
	}
	if !strings.Contains(string(r.body), "queue.max_bytes") {
		t.Errorf("413 body %s does not name queue.max_bytes", r.body)
	}
	if r := h.get("/readyz"); r.code != http.StatusOK {
		t.Errorf("readyz after a too-large request = %d %s, want 200 (the queue is not full)", r.code, r.body)
	}
}
