package test_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// sourceRowJSON is a source's row of /v1/status, as these tests read it.
type sourceRowJSON struct {
	Name         string     `json:"name"`
	Events       int64      `json:"events"`
	Paused       bool       `json:"paused"`
	PausedReason string     `json:"paused_reason"`
	PausedUntil  *time.Time `json:"paused_until"`
	PausedCode   string     `json:"paused_code"`
	PausedKey    string     `json:"paused_key"`
	InFlight     int        `json:"in_flight"`
}

// statusSources returns the agent's /v1/status source rows and the raw body.
func statusSources(t *testing.T, url string) ([]sourceRowJSON, string) {
	t.Helper()
	resp, err := http.Get(url + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Sources []sourceRowJSON `json:"sources"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st.Sources, string(raw)
}

// pausedRow polls /v1/status until a source is paused, and returns its row and the body.
func pausedRow(t *testing.T, a *agent) (sourceRowJSON, string) {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	for {
		rows, body := statusSources(t, a.url)
		for _, r := range rows {
			if r.Paused {
				return r, body
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no source paused in /v1/status: %s", body)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// keyedRequests counts the uploads the collector saw with key.
func keyedRequests(t *testing.T, s *sink.Server, key string) int {
	n := 0
	for _, r := range s.Requests() {
		if keyOfRequest(t, r) == key {
			n++
		}
	}
	return n
}

// While the collector answers 429 Retry-After: 30 to one write key, a relay agent delivers
// the other key's events within 3 s: the hold is that source's alone.
func TestRun_Sources_ARetryAfterOfOneKeyDelaysNoOther(t *testing.T) {
	var limited atomic.Bool
	limited.Store(true)
	s := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
		if limited.Load() && keyOfRequest(t, r) == "wk-slow" {
			return sink.Response{Status: 429, RetryAfter: "30"}
		}
		return scripted
	}})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{"OUTBOX_SOURCES_RELAY": "true", "OUTBOX_BATCH_MAX_EVENTS": "5"})
	if code, resp := postKey(t, a.url+"/v1/batch", "wk-slow", keyedBatch("wk-slow", 0, 5)); code != http.StatusOK {
		t.Fatalf("ingest with wk-slow: %d %s", code, resp)
	}
	row, _ := pausedRow(t, a) // the 429 has come back
	if row.PausedReason != "retry_after" || row.PausedUntil == nil || time.Until(*row.PausedUntil) < 20*time.Second {
		t.Fatalf("held source's row %+v; want paused for its Retry-After, about 30 s", row)
	}
	for round := range 3 {
		for _, key := range []string{"wk-slow", "wk-fast"} {
			if code, resp := postKey(t, a.url+"/v1/batch", key, keyedBatch(key, 1+round, 5)); code != http.StatusOK {
				t.Fatalf("ingest with %s: %d %s", key, code, resp)
			}
		}
	}
	if err := s.WaitEvents(ctxFor(t, 3*time.Second), 15); err != nil {
		t.Fatalf("%d of wk-fast's 15 events delivered within 3 s while wk-slow is held: %v", len(s.Events()), err)
	}
	if got := checkOneKeyPerUpload(t, s); got["wk-slow"] != 0 || got["wk-fast"] != 15 {
		t.Fatalf("delivered per key %v; want wk-fast's 15 and none of wk-slow's", got)
	}
	if n := keyedRequests(t, s, "wk-slow"); n != 1 {
		t.Errorf("%d uploads with wk-slow during its hold, want the one answered 429", n)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d (the held source's events stay queued); stderr:\n%s", code, a.stderr.String())
	}
}

// A 401 for one write key pauses only that source: the other key's events are delivered, and
// `outbox status` and /v1/status show which source is paused, why and what to fix, never the
// key.
func TestRun_Sources_ARefusedKeyPausesOnlyItsSource(t *testing.T) {
	s := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
		if keyOfRequest(t, r) == "wk-revoked" {
			return sink.Response{Status: 401}
		}
		return scripted
	}})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{"OUTBOX_SOURCES_RELAY": "true", "OUTBOX_BATCH_MAX_EVENTS": "5"})
	if code, resp := postKey(t, a.url+"/v1/batch", "wk-revoked", keyedBatch("wk-revoked", 0, 5)); code != http.StatusOK {
		t.Fatalf("ingest with wk-revoked: %d %s", code, resp)
	}
	row, body := pausedRow(t, a)
	for round := range 3 {
		for _, key := range []string{"wk-revoked", "wk-good"} {
			if code, resp := postKey(t, a.url+"/v1/batch", key, keyedBatch(key, 1+round, 5)); code != http.StatusOK {
				t.Fatalf("ingest with %s: %d %s", key, code, resp)
			}
		}
	}
	if err := s.WaitEvents(ctxFor(t, 3*time.Second), 15); err != nil {
		t.Fatalf("%d of wk-good's 15 events delivered within 3 s while wk-revoked is refused: %v", len(s.Events()), err)
	}
	if row.PausedReason != "auth_refused" || row.PausedCode != "401" || row.PausedKey == "" || row.Events == 0 ||
		!strings.HasPrefix(row.Name, "relay-") || strings.Contains(body, "wk-") {
		t.Fatalf("refused source's row %+v; want paused on a 401 with the key to fix, by name only; status:\n%s", row, body)
	}
	rows, _ := statusSources(t, a.url)
	for _, r := range rows {
		if r.Name != row.Name && r.Paused {
			t.Errorf("source %s paused too: %+v", r.Name, r)
		}
	}
	code, out, stderr := runCLI(t, t.TempDir(), map[string]string{}, "", "status", "--agent", a.url)
	if code != 0 || strings.Contains(out, "wk-") {
		t.Fatalf("outbox status (exit %d) failed or shows a key:\n%s%s", code, out, stderr)
	}
	pausedLine := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "PAUSED") && !strings.Contains(line, row.Name) {
			t.Fatalf("a line that is not about %s says PAUSED: %s", row.Name, line)
		}
		if strings.HasPrefix(line, "source "+row.Name) {
			pausedLine = line
		}
	}
	if !strings.Contains(pausedLine, "PAUSED: credentials refused (401)") {
		t.Fatalf("outbox status: %s's line %q does not say it is paused on a 401:\n%s", row.Name, pausedLine, out)
	}
	if n := keyedRequests(t, s, "wk-revoked"); n != 1 {
		t.Errorf("%d uploads with wk-revoked, want the one refused (its next probe is a minute away)", n)
	}
}
