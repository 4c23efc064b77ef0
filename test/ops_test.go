package test_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/store"
)

func TestRun_CorruptDataFile_Exits3NamingRecover_ThenRecoverFixesIt(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	garbage := bytes.Repeat([]byte("not a bbolt file "), 4096)
	if err := os.WriteFile(filepath.Join(dir, store.FileName), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	env := agentEnv(dir, testutil.FreeAddr(t), s.URL()+"/v1/batch", nil)
	p := start(t, t.TempDir(), env, "run")
	code, _ := p.wait(t, 10*time.Second)
	if msg := p.stderr.String(); code != exitDamaged || !strings.Contains(msg, "outbox recover") {
		t.Fatalf("run on a corrupt file: exit %d, want %d naming 'outbox recover'; stderr:\n%s", code, exitDamaged, msg)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, store.FileName)); !bytes.Equal(b, garbage) {
		t.Fatal("the corrupt file was modified")
	}

	code, out, stderr := runCLI(t, t.TempDir(), nil, "", "recover", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "saved 0 queued event(s)") || !strings.Contains(out, ".corrupt-") {
		t.Fatalf("recover: exit %d, out %q, err %q", code, out, stderr)
	}
	moved, _ := filepath.Glob(filepath.Join(dir, store.FileName+".corrupt-*"))
	if len(moved) != 1 {
		t.Fatalf("want the old file moved aside, found %v", moved)
	}
	startAgent(t, dir, s.URL()+"/v1/batch", nil) // starts again
}

func TestRun_Auth_WrongKeyIs401AndStoresNothing_ClientCommandsUseConfiguredToken(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_INGEST_WRITE_KEYS": "wk-good",
		"OUTBOX_INGEST_TOKEN":      "tok-good",
		"OUTBOX_ADMIN_TOKEN":       "adm-good",
		"OUTBOX_BATCH_INTERVAL":    "1h",
	})
	body, _ := trackBatch("auth", 2)
	for _, key := range []string{"", "wk-bad"} {
		req, _ := http.NewRequest("POST", a.url+"/v1/batch", bytes.NewReader(body))
		if key != "" {
			req.SetBasicAuth(key, "")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("write key %q: status %d, want 401", key, resp.StatusCode)
		}
	}

	cwd := t.TempDir()
	for _, env := range []map[string]string{nil, {"OUTBOX_INGEST_TOKEN": "tok-good"}} {
		code, _, stderr := runCLI(t, cwd, env, "", "status", "--agent", a.url)
		if code != 1 || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "OUTBOX_ADMIN_TOKEN") {
			t.Errorf("status with %v (no admin token): exit %d, stderr %q; want 1 with a hint", env, code, stderr)
		}
	}
	code, out, stderr := runCLI(t, cwd, map[string]string{"OUTBOX_ADMIN_TOKEN": "adm-good"}, "", "status", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "0 events") {
		t.Errorf("status with the admin token: exit %d, out %q, err %q; want 0 events stored after the 401s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, cwd, map[string]string{"OUTBOX_INGEST_WRITE_KEYS": "wk-good"}, "", "send", "--agent", a.url, `{"event":"E","userId":"u"}`)
	if code != 0 || !strings.Contains(out, "sent 1 event(s)") {
		t.Errorf("send with the write key: exit %d, out %q, err %q", code, out, stderr)
	}
}

func TestStatusAndFlush_WhileRateLimited_SayWhatTheyWaitFor(t *testing.T) {
	s := sinktest.StartScript(t, "429:ra=300:default")
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", nil)
	body, _ := trackBatch("ratelimited", 3)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	if err := s.WaitRequests(ctxFor(t, 10*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		_, out, _ = runCLI(t, cwd, nil, "", "status", "--agent", a.url)
		if strings.Contains(out, "waiting for Retry-After until") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"3 events", "waiting for Retry-After until", "failing since", "429"} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
	code, _, stderr := runCLI(t, cwd, nil, "", "flush", "--wait", "5s", "--agent", a.url)
	if code != 1 || !strings.Contains(stderr, "waiting for Retry-After until") {
		t.Errorf("flush while rate-limited: exit %d, stderr %q; want 1 saying what it waits for", code, stderr)
	}
}
