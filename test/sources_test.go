package test_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// postKey sends body to the agent's path with key as Basic auth username.
func postKey(t testing.TB, url, key string, body []byte) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(key, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// keyOfRequest is the write key of an upload's Basic auth, "" without one.
func keyOfRequest(t testing.TB, r sink.Request) string {
	t.Helper()
	h := r.Header.Get("Authorization")
	if h == "" {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	if err != nil {
		t.Fatalf("Authorization %q is not Basic", h)
	}
	return strings.TrimSuffix(string(raw), ":")
}

// keyedBatch is a batch of n events whose messageIds start with the write key they are sent with.
func keyedBatch(key string, round, n int) []byte {
	body, _ := trackBatch(fmt.Sprintf("%s~%d", key, round), n)
	return body
}

// checkOneKeyPerUpload fails when an upload carries an event sent with another key than its
// own Authorization, and returns the events delivered per key.
func checkOneKeyPerUpload(t testing.TB, s *sink.Server) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, r := range s.Accepted() {
		key := keyOfRequest(t, r)
		for _, id := range r.MessageIDs {
			sent, _, _ := strings.Cut(id, "~")
			if sent != key {
				t.Fatalf("an event sent with key %q was uploaded with key %q (request of %d events)", sent, key, len(r.MessageIDs))
			}
			got[key]++
		}
	}
	return got
}

// Two apps send with their own write keys through one agent in relay mode (the DaemonSet's
// set-up): every upload carries exactly one key and only the events sent with it; a third key
// past sources.max gets 429; and the events a relay source had queued when the agent stopped
// go out after the restart with the key they arrived with.
func TestRun_RelayMode_EachWriteKeyUploadsOnlyItsEvents_AndKeepsItsKeyAcrossRestart(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	relay := map[string]string{"OUTBOX_SOURCES_RELAY": "true", "OUTBOX_SOURCES_MAX": "3", "OUTBOX_BATCH_MAX_EVENTS": "7"}
	a := startAgent(t, dir, s.URL()+"/v1/batch", relay)
	for round := range 4 {
		for _, key := range []string{"wk-app-a", "wk-app-b"} {
			if code, resp := postKey(t, a.url+"/v1/batch", key, keyedBatch(key, round, 5)); code != http.StatusOK {
				t.Fatalf("ingest with %s: %d %s", key, code, resp)
			}
		}
	}
	code, resp := postKey(t, a.url+"/v1/batch", "wk-app-c", keyedBatch("wk-app-c", 0, 1))
	if code != http.StatusTooManyRequests || !strings.Contains(resp, "sources.max is 3") || strings.Contains(resp, "wk-app-c") {
		t.Fatalf("a third relay key past sources.max 3: %d %s", code, resp)
	}
	ctx := ctxFor(t, 10*time.Second)
	if err := s.WaitEvents(ctx, 40); err != nil {
		t.Fatalf("%d of 40 events delivered: %v", len(s.Events()), err)
	}
	if got := checkOneKeyPerUpload(t, s); got["wk-app-a"] != 20 || got["wk-app-b"] != 20 {
		t.Fatalf("delivered per key %v, want 20 each", got)
	}
	cliCode, out, stderr := runCLI(t, t.TempDir(), map[string]string{}, "", "status", "--agent", a.url)
	if cliCode != 0 || strings.Count(out, "source relay-") != 2 || !strings.Contains(out, "source default") || strings.Contains(out, "wk-app") {
		t.Fatalf("outbox status (exit %d) lacks a row per source, or shows a key:\n%s%s", cliCode, out, stderr)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, a.stderr.String())
	}

	// Queued while nothing listens, then the agent stops: the relay source's events stay on
	// disk, and its key with them.
	down := "http://" + testutil.FreeAddr(t) + "/v1/batch"
	a = startAgent(t, dir, down, with(relay, map[string]string{"OUTBOX_RETRY_BACKOFF_BASE": "1m", "OUTBOX_RETRY_BACKOFF_CAP": "1m"}))
	if code, resp := postKey(t, a.url+"/v1/batch", "wk-app-a", keyedBatch("wk-app-a", 9, 6)); code != http.StatusOK {
		t.Fatalf("ingest while the collector is down: %d %s", code, resp)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, a.stderr.String())
	}
	a = startAgent(t, dir, s.URL()+"/v1/batch", relay)
	ctx = ctxFor(t, 10*time.Second)
	if err := s.WaitEvents(ctx, 46); err != nil {
		t.Fatalf("%d of 46 events delivered after the restart: %v", len(s.Events()), err)
	}
	if got := checkOneKeyPerUpload(t, s); got["wk-app-a"] != 26 {
		t.Fatalf("delivered per key after the restart %v, want wk-app-a's 6 more with its key", got)
	}
	if strings.Contains(a.stderr.String(), "wk-app") {
		t.Fatalf("the log shows a write key:\n%s", a.stderr.String())
	}
}

// A data directory written by the release before several sources (pkg/queue/testdata) opens
// under an agent with sources configured, and its events drain as the default source's, with
// upload.write_key; its dead batch stays listed.
func TestRun_PreviousReleaseDataDir_DrainsAsTheDefaultSource(t *testing.T) {
	old, err := os.ReadFile("../pkg/queue/testdata/release-1/outbox.db")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "outbox.db"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	s := sinktest.Start(t, sink.Options{})
	a := startAgent(t, dir, s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_UPLOAD_WRITE_KEY":                "wk-default",
		"OUTBOX_SOURCES_APP_EU_UPLOAD_WRITE_KEY": "wk-eu",
		"OUTBOX_SOURCES_APP_EU_ENDPOINT":         s.URL() + "/eu/v1/batch",
	})
	if err := s.WaitEvents(ctxFor(t, 10*time.Second), 10); err != nil {
		t.Fatalf("%d of the old file's 10 events delivered: %v", len(s.Events()), err)
	}
	for _, r := range s.Accepted() {
		if key := keyOfRequest(t, r); key != "wk-default" || r.Path != "/v1/batch" {
			t.Fatalf("an old event went to %s with key %q, want the default source's", r.Path, key)
		}
	}
	code, out, stderr := runCLI(t, t.TempDir(), map[string]string{}, "", "dead", "list", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "rejected") {
		t.Fatalf("outbox dead list (exit %d) lacks the old dead batch:\n%s%s", code, out, stderr)
	}
}
