package test_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/store"
)

// A leaf of queued events overwritten with random bytes (a torn write, a bad sector): run
// refuses the file, recover saves the rest, and the agent then delivers exactly what was saved.
func TestDamage_RunRefuses_RecoverSaves_AgentThenDeliversWhatWasSaved(t *testing.T) {
	for _, mode := range encryptionModes {
		t.Run(mode.name, func(t *testing.T) { damageRecoverDeliver(t, buildDamageFixture(t, mode)) })
	}
}

// damageRecoverDeliver is the test above on the fixture fx.
func damageRecoverDeliver(t *testing.T, fx *damageFixture) {
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
	p := start(t, t.TempDir(), agentEnv(dir, testutil.FreeAddr(t), s.URL()+"/v1/batch", fx.env), "run")
	if code, _ := p.wait(t, 10*time.Second); code != exitDamaged || !strings.Contains(p.stderr.String(), "outbox recover") {
		t.Fatalf("run on the damaged file: exit %d, want %d naming outbox recover:\n%s", code, exitDamaged, p.stderr.String())
	}

	code, out, stderr := runCLI(t, t.TempDir(), fx.env, "", "recover", "--data-dir", dir)
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

	a := startAgent(t, dir, s.URL()+"/v1/batch", fx.env)
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

// The file's root page zeroed under a running agent (damage that only a later read finds): the
// next write stops intake with the error naming `outbox recover`, the agent exits 1 without a
// panic, and the file is left as it was.
func TestDamage_PageDamagedUnderARunningAgent_IntakeStops_AgentExits1NamingRecover(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", nil)
	path := filepath.Join(dir, store.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// bbolt's meta: page size at +8, root bucket at +16, txid at +48.
	ps := int(binary.LittleEndian.Uint32(data[16+8:]))
	meta := data[16:]
	if binary.LittleEndian.Uint64(data[ps+16+48:]) > binary.LittleEndian.Uint64(data[16+48:]) {
		meta = data[ps+16:]
	}
	root := int64(binary.LittleEndian.Uint64(meta[16:]))
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, ps), root*int64(ps)); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	damaged, _ := os.ReadFile(path)

	code, body := post(t, a.url+"/v1/track", []byte(`{"userId":"u","event":"after the damage"}`), false)
	if code == 200 {
		t.Fatalf("ingest accepted an event into a damaged file: %d %s", code, body)
	}
	got, _ := a.wait(t, 15*time.Second)
	noPanic(t, []string{"run"}, got, a.stderr.String())
	if got != exitDamaged || !strings.Contains(a.stderr.String(), "outbox recover") || !strings.Contains(a.stderr.String(), path) {
		t.Fatalf("agent on a file damaged under it: exit %d, want %d naming %s and outbox recover:\n%s", got, exitDamaged, path, a.stderr.String())
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
		t.Fatal("the agent wrote to the file after finding it damaged")
	}
}
