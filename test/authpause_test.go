package test_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	agentpkg "github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// getStatus reads the agent's /v1/status.
func getStatus(t *testing.T, url string) agentpkg.Status {
	t.Helper()
	resp, err := http.Get(url + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st agentpkg.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A wrong upload.write_key against a collector that answers 401: nothing is dead-lettered,
// intake goes on, and the status, `outbox status`, the metrics and the log say why delivery is
// paused. With the right key every event is delivered. The key is fixed by a restart here; a
// reload (SIGHUP) does the same without one.
func TestRun_WrongWriteKey_PausesDeliveryWithTheQueueKept_TheRightKeyDeliversEverything(t *testing.T) {
	const rightKey, wrongKey = "wk_right_4c1d", "wk_wrong_9f3e"
	s := sinktest.Start(t, sink.Options{WriteKey: rightKey})
	dir := t.TempDir()
	extra := map[string]string{"OUTBOX_UPLOAD_WRITE_KEY": wrongKey, "OUTBOX_BATCH_MAX_EVENTS": "10"}
	a := startAgent(t, dir, s.URL()+"/v1/batch", extra)

	var ids []string
	for i := range 3 {
		body, batch := trackBatch(fmt.Sprintf("auth%d", i), 10)
		if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
			t.Fatalf("ingest %d: %d %s", i, code, resp)
		}
		ids = append(ids, batch...)
	}
	a.waitLog(t, 10*time.Second, "the collector refuses our credentials (401): fix upload.write_key and reload")

	deadline := time.Now().Add(10 * time.Second)
	st := getStatus(t, a.url)
	for !st.AuthPause.Paused && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		st = getStatus(t, a.url)
	}
	if !st.AuthPause.Paused || st.AuthPause.Code != "401" || st.AuthPause.Key != "upload.write_key" ||
		!strings.Contains(st.AuthPause.Message, "fix upload.write_key and reload") || st.AuthPause.NextProbe == nil {
		t.Fatalf("auth_pause = %+v, want paused on 401 naming upload.write_key and the next probe", st.AuthPause)
	}
	// Intake goes on while delivery is paused.
	body, late := trackBatch("authlate", 5)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest while paused: %d %s", code, resp)
	}
	ids = append(ids, late...)
	st = getStatus(t, a.url)
	if st.Dead.Batches != 0 || st.Queue.Events != int64(len(ids)) || st.Retry.Attempt != 0 {
		t.Errorf("while paused: dead %d, queued %d, attempt %d; want nothing dead, all %d queued, no retry counted",
			st.Dead.Batches, st.Queue.Events, st.Retry.Attempt, len(ids))
	}
	if n := s.Stats().Requests; n > 3 {
		t.Errorf("the collector saw %d requests, want at most one per batch before the first probe a minute later", n)
	}

	cli := map[string]string{"OUTBOX_DATA_DIR": dir}
	code, out, stderr := runCLI(t, t.TempDir(), cli, "", "status", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "PAUSED since") || !strings.Contains(out, "fix upload.write_key and reload") {
		t.Errorf("outbox status: exit %d, out:\n%s\nerr: %s; want it to say delivery is paused and what to fix", code, out, stderr)
	}
	metrics := getText(t, a.url+"/metrics")
	if !strings.Contains(metrics, "\noutbox_upload_auth_paused 1\n") {
		t.Errorf("metrics lack outbox_upload_auth_paused 1")
	}
	for what, text := range map[string]string{"status": out, "metrics": metrics, "log": a.stderr.String()} {
		if strings.Contains(text, wrongKey) {
			t.Errorf("the write key is in the %s", what)
		}
	}

	// Shutdown does not wait for the next probe; the queue stays on disk.
	a.signal(t, syscall.SIGTERM)
	if code, took := a.wait(t, 10*time.Second); code != 0 || took > 3*time.Second {
		t.Fatalf("SIGTERM while paused: exit %d after %s, want 0 within the shutdown timeout", code, took)
	}

	// The right key: every event is delivered, none dead-lettered.
	extra["OUTBOX_UPLOAD_WRITE_KEY"] = rightKey
	a = startAgent(t, dir, s.URL()+"/v1/batch", extra)
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), len(ids)); err != nil {
		t.Fatalf("delivered %d of %d events: %v", s.Stats().Events, len(ids), err)
	}
	for _, id := range ids {
		if s.Deliveries(id) != 1 {
			t.Errorf("event %s delivered %d times, want once", id, s.Deliveries(id))
		}
	}
	st = getStatus(t, a.url)
	if st.AuthPause.Paused || st.Dead.Batches != 0 {
		t.Errorf("after the fix: auth_pause %+v, dead %d; want delivery going and nothing dead", st.AuthPause, st.Dead.Batches)
	}
}

// getText GETs url and returns its body.
func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
