package test_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/store"
)

// A leaf of queued events overwritten with random bytes (a torn write, a bad sector): run
// refuses the file, recover saves the rest, and the agent then delivers exactly what was saved.
func TestDamage_RunRefuses_RecoverSaves_AgentThenDeliversWhatWasSaved(t *testing.T) {
	fx := buildDamageFixture(t)
	leaf := fx.firstOf("leaf", "events")
	data := append([]byte(nil), fx.data...)
	pg := data[leaf*fx.pageSize : (leaf+1)*fx.pageSize]
	for i := range pg {
		pg[i] = byte(i*7 + 13)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, store.FileName)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := sinktest.Start(t, sink.Options{})
	p := start(t, t.TempDir(), agentEnv(dir, freeAddr(t), s.URL()+"/v1/batch", nil), "run")
	if code, _ := p.wait(t, 10*time.Second); code != 1 || !strings.Contains(p.stderr.String(), "outbox recover") {
		t.Fatalf("run on the damaged file: exit %d, want 1 naming outbox recover:\n%s", code, p.stderr.String())
	}

	code, out, stderr := runCLI(t, t.TempDir(), nil, "", "recover", "--data-dir", dir)
	m := savedRE.FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "page(s) skipped") {
		t.Fatalf("recover: exit %d, want 0 with a report of events saved, records unreadable and pages skipped:\n%s%s", code, out, stderr)
	}
	saved, _ := strconv.Atoi(m[1])
	lost := 0
	for _, span := range fx.events {
		if span == leaf {
			lost++
		}
	}
	if lost == 0 || saved < len(fx.events)-lost {
		t.Fatalf("recover saved %d events; %d were queued, %d of them on the damaged page", saved, len(fx.events), lost)
	}

	a := startAgent(t, dir, s.URL()+"/v1/batch", nil)
	if err := s.WaitEvents(ctxFor(t, 30*time.Second), saved); err != nil {
		t.Fatalf("the agent delivered %d of the %d saved events: %v", s.Stats().Unique, saved, err)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("agent exit %d after SIGTERM", code)
	}
	for _, raw := range s.Events() {
		var ev struct {
			MessageID string `json:"messageId"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil || !strings.HasPrefix(ev.MessageID, "dmg-") {
			t.Fatalf("delivered an event that was never queued: %s", raw)
		}
	}
	if got := s.Stats().Unique; got != int64(saved) {
		t.Fatalf("delivered %d distinct events, recover saved %d", got, saved)
	}
}
