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

// shutdownTimeout is the shutdown.timeout the test agents run with (agentEnv).
const shutdownTimeout = 2 * time.Second

// trackBatch is a /v1/batch body of n track events with the given messageId prefix.
func trackBatch(prefix string, n int) ([]byte, []string) {
	ids := make([]string, n)
	body := []byte(`{"batch":[`)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"type":"track","event":"Tested","userId":"u%d","messageId":%q,"properties":{"i":%d}}`, i, ids[i], i)
	}
	return append(body, "]}"...), ids
}

func TestRun_SIGTERM_WhileRateLimited_ExitsInTime_RestartDeliversEverything(t *testing.T) {
	s := sinktest.StartScript(t, "429:ra=300:default")
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", nil)

	body, ids := trackBatch("term", 25)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	// The worker has tried once and now sits in a 300 s Retry-After wait.
	if err := s.WaitRequests(ctxFor(t, 10*time.Second), 1); err != nil {
		t.Fatalf("no upload attempt reached the sink: %v", err)
	}

	a.signal(t, syscall.SIGTERM)
	code, took := a.wait(t, 10*time.Second)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if limit := shutdownTimeout + time.Second; took > limit {
		t.Errorf("exit took %s after SIGTERM, want at most shutdown.timeout + 1s = %s", took, limit)
	}
	if got := s.Stats().Events; got != 0 {
		t.Fatalf("sink accepted %d events while answering 429", got)
	}

	if err := s.SetScript(sink.Script{}); err != nil { // the collector recovers
		t.Fatal(err)
	}
	startAgent(t, dir, s.URL()+"/v1/batch", nil)
	if err := s.WaitEvents(ctxFor(t, 15*time.Second), len(ids)); err != nil {
		t.Fatalf("after restart the sink got %d of %d events: %v", s.Stats().Unique, len(ids), err)
	}
	for _, id := range ids {
		if s.Deliveries(id) == 0 {
			t.Errorf("event %s never delivered", id)
		}
	}
}

func TestRun_SecondSignal_ExitsAtOnce(t *testing.T) {
	s := sinktest.StartScript(t, "hang:default") // the last upload pass would hang to the deadline
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{"OUTBOX_SHUTDOWN_TIMEOUT": "20s"})
	body, _ := trackBatch("second", 5)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	if err := s.WaitRequests(ctxFor(t, 10*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	a.signal(t, syscall.SIGTERM)
	// The sink sees nothing new when the shutdown starts (the upload it holds stays held): the
	// agent's own log says its last upload pass has begun.
	a.waitLog(t, 10*time.Second, "signal received: stopping intake, last upload pass", "agent shutting down: intake stopped")
	a.signal(t, syscall.SIGINT)
	code, took := a.wait(t, 15*time.Second)
	if code != 0 {
		t.Errorf("exit code %d after a second signal, want 0", code)
	}
	if took > 5*time.Second {
		t.Errorf("a second signal took %s to exit; shutdown.timeout is 20s, want well under it", took)
	}
	if !strings.Contains(a.stderr.String(), "second signal") {
		t.Errorf("the agent did not report the second signal; stderr:\n%s", a.stderr.String())
	}
}

func TestRun_SIGKILL_DuringIngestAndUpload_EveryAcknowledgedEventArrives(t *testing.T) {
	for _, mode := range encryptionModes {
		t.Run(mode.name, func(t *testing.T) {
			cycles := 3
			if mode.on {
				cycles = 2 // a smaller sample: the plain run covers the kill points
			}
			sigkillCycles(t, mode.env(keyFile(t), nil), cycles)
		})
	}
}

// sigkillCycles kills the agent cycles times mid-ingest and mid-upload, then checks that every
// acknowledged event reaches the collector; env configures every agent.
func sigkillCycles(t *testing.T, env map[string]string, cycles int) {
	s := sinktest.StartScript(t, "503:10%,seed=3") // some failed uploads, so batches are retried too
	dir := t.TempDir()
	var log ackLog
	const producers, perBatch, killAfter = 4, 10, 40
	for cycle := range cycles {
		a := startAgent(t, dir, s.URL()+"/v1/batch", env)
		killed := make(chan struct{})
		requests, wait := log.produce(a.url+"/v1/batch", fmt.Sprintf("kill-c%d", cycle),
			load{producers: producers, perBatch: perBatch, gzip: true}, killed)
		// Kill once enough requests were acknowledged in this cycle and uploads are flowing.
		uploadsBefore := s.Stats().Requests
		deadline := time.Now().Add(15 * time.Second)
		for requests.Load() < killAfter || s.Stats().Requests <= uploadsBefore {
			if time.Now().After(deadline) {
				t.Fatalf("cycle %d: only %d requests acknowledged", cycle, requests.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
		a.signal(t, syscall.SIGKILL)
		close(killed)
		a.wait(t, 5*time.Second)
		wait()
	}
	acked := log.ids

	_ = s.SetScript(sink.Script{})
	startAgent(t, dir, s.URL()+"/v1/batch", env)
	missing := waitDelivered(t, s, acked, 20*time.Second)
	st := s.Stats()
	t.Logf("%d cycles: %d acknowledged events, sink accepted %d (%d unique, %d duplicates)", cycles, len(acked), st.Events, st.Unique, st.Duplicates)
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged events never reached the sink", missing, len(acked))
	}
}
