package test_test

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// A wrong upload.write_key against a collector that answers 401: nothing is dead-lettered,
// intake goes on, and the status, `outbox status`, the metrics and the log say why delivery is
// paused. A SIGHUP with the right key probes at once (not at the next probe, a minute away),
// and every event is delivered once.
func TestRun_WrongWriteKey_PausesDeliveryWithTheQueueKept_SIGHUPWithTheRightKeyDeliversEverything(t *testing.T) {
	const rightKey, wrongKey = "wk_right_4c1d", "wk_wrong_9f3e"
	s := sinktest.Start(t, sink.Options{WriteKey: rightKey})
	a, settings := startFileAgent(t, s.URL()+"/v1/batch", map[string]string{
		"upload.write_key":  wrongKey,
		"batch.max_events":  "10",
		"ingest.write_keys": "[ingest-key]",
	})
	auth := basicAuth("ingest-key")

	var ids []string
	for i := range 3 {
		body, batch := trackBatch(fmt.Sprintf("auth%d", i), 10)
		if code, resp := a.call(t, http.MethodPost, "/v1/batch", auth, body); code != http.StatusOK {
			t.Fatalf("ingest %d: %d %s", i, code, resp)
		}
		ids = append(ids, batch...)
	}
	a.waitLog(t, 10*time.Second, "the collector refuses our credentials (401): fix upload.write_key and reload")

	deadline := time.Now().Add(10 * time.Second)
	st := a.status(t)
	for !st.AuthPause.Paused && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		st = a.status(t)
	}
	if !st.AuthPause.Paused || st.AuthPause.Code != "401" || st.AuthPause.Key != "upload.write_key" ||
		!strings.Contains(st.AuthPause.Message, "fix upload.write_key and reload") || st.AuthPause.NextProbe == nil {
		t.Fatalf("auth_pause = %+v, want paused on 401 naming upload.write_key and the next probe", st.AuthPause)
	}
	// Intake goes on while delivery is paused.
	body, late := trackBatch("authlate", 5)
	if code, resp := a.call(t, http.MethodPost, "/v1/batch", auth, body); code != http.StatusOK {
		t.Fatalf("ingest while paused: %d %s", code, resp)
	}
	ids = append(ids, late...)
	st = a.status(t)
	if st.Dead.Batches != 0 || st.Queue.Events != int64(len(ids)) || st.Retry.Attempt != 0 {
		t.Errorf("while paused: dead %d, queued %d, attempt %d; want nothing dead, all %d queued, no retry counted",
			st.Dead.Batches, st.Queue.Events, st.Retry.Attempt, len(ids))
	}
	refused := s.Stats().Requests
	if refused > 3 {
		t.Errorf("the collector saw %d requests, want at most one per batch before the first probe a minute later", refused)
	}

	code, out, stderr := runCLI(t, t.TempDir(), map[string]string{}, "", "status", "--config", a.file)
	if code != 0 || !strings.Contains(out, "PAUSED since") || !strings.Contains(out, "fix upload.write_key and reload") {
		t.Errorf("outbox status: exit %d, out:\n%s\nerr: %s; want it to say delivery is paused and what to fix", code, out, stderr)
	}
	_, metrics := a.call(t, http.MethodGet, "/metrics", "", nil)
	if !strings.Contains(string(metrics), "\noutbox_upload_auth_paused 1\n") {
		t.Errorf("metrics lack outbox_upload_auth_paused 1")
	}
	for what, text := range map[string]string{"status": out, "metrics": string(metrics), "log": a.stderr.String()} {
		if strings.Contains(text, wrongKey) {
			t.Errorf("the write key is in the %s", what)
		}
	}

	// The right key, by a reload: the head batch is probed at once and delivery resumes.
	writeConfig(t, a.file, with(settings, map[string]string{"upload.write_key": rightKey}))
	a.signal(t, syscall.SIGHUP)
	if r := a.waitReload(t, 1); r.Result != "applied" {
		t.Fatalf("reload = %+v, want applied", r)
	}
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), len(ids)); err != nil {
		t.Fatalf("delivered %d of %d events after the reload: %v", s.Stats().Events, len(ids), err)
	}
	for _, id := range ids {
		if s.Deliveries(id) != 1 {
			t.Errorf("event %s delivered %d times, want once", id, s.Deliveries(id))
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for st = a.status(t); (st.AuthPause.Paused || st.Queue.Events != 0) && time.Now().Before(deadline); st = a.status(t) { // the last ack lands after the sink has the events
		time.Sleep(20 * time.Millisecond)
	}
	if st.AuthPause.Paused || st.Dead.Batches != 0 || st.Queue.Events != 0 {
		t.Errorf("after the reload: auth_pause %+v, dead %d, queued %d; want delivery going and nothing dead or left",
			st.AuthPause, st.Dead.Batches, st.Queue.Events)
	}
	a.waitLog(t, 5*time.Second, "delivery resumes")
}
