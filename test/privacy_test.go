package test_test

import (
	"bytes"
	"fmt"
	"io"
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
	"github.com/outboxhq/outbox/pkg/store"
)

// goneUser is the user forgotten here: an email, so that a leak is easy to grep for.
const goneUser = "gone@example.com"

// privacyEnv writes a hash key and names a suppress file in dir: the agent's privacy keys.
func privacyEnv(t *testing.T, dir string) map[string]string {
	t.Helper()
	key := filepath.Join(dir, "hash.key")
	if err := os.WriteFile(key, []byte("e2e-hash-key-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"OUTBOX_PRIVACY_RULES":         "context.ip=remove,traits.email=hash",
		"OUTBOX_PRIVACY_HASH_KEY_FILE": key,
		"OUTBOX_PRIVACY_SUPPRESS_FILE": filepath.Join(dir, "suppressed.txt"),
	}
}

// userBatch is a batch body of events of users, messageIds prefix-0, prefix-1, …, each with
// an email in its traits and an IP in its context.
func userBatch(prefix string, users ...string) ([]byte, []string) {
	var b bytes.Buffer
	var ids []string
	b.WriteString(`{"batch":[`)
	for i, u := range users {
		if i > 0 {
			b.WriteByte(',')
		}
		id := fmt.Sprintf("%s-%d", prefix, i)
		ids = append(ids, id)
		fmt.Fprintf(&b, `{"type":"identify","userId":%q,"messageId":%q,"traits":{"email":"mail-%s@example.org"},"context":{"ip":"192.0.2.77"}}`, u, id, id)
	}
	b.WriteString("]}")
	return b.Bytes(), ids
}

// metric returns the agent's /metrics text.
func metric(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestForget_ThroughTheAgent_QueuedDeadAndInFlightNeverReachTheCollector(t *testing.T) {
	// The first batch is refused for good (a dead letter); the second is answered late with a
	// 503: the forget runs while it is in flight.
	s := sinktest.StartScript(t, "404,503:delay=1s")
	dir, cfgDir := t.TempDir(), t.TempDir()
	env := privacyEnv(t, cfgDir)
	env["OUTBOX_UPLOAD_CONCURRENCY"] = "1"
	env["OUTBOX_BATCH_MAX_EVENTS"] = "4"
	a := startAgent(t, dir, s.URL()+"/v1/batch", env)
	cliEnv := map[string]string{"OUTBOX_PRIVACY_SUPPRESS_FILE": env["OUTBOX_PRIVACY_SUPPRESS_FILE"]}

	body, deadIDs := userBatch("dead", goneUser, "kept")
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	waitDead(t, a.url, 1)
	body, ids := userBatch("live", goneUser, "kept", goneUser, "kept", "kept", goneUser)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	if err := s.WaitRequests(ctxFor(t, 10*time.Second), 2); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runCLI(t, t.TempDir(), cliEnv, "", "forget", "--user-id", goneUser, "--suppress", "--agent", a.url)
	if code != 0 {
		t.Fatalf("forget: exit %d\n%s\n%s", code, out, stderr)
	}
	sentBefore := len(s.Requests())
	for _, want := range []string{"SOURCE", "default  3       1     0", "removed 4 event(s): 3 queued, 1 dead-lettered", "suppressed 1 id(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("forget printed:\n%s\nwant %q", out, want)
		}
	}
	// Later events of the user are answered 200 and dropped.
	body, _ = userBatch("later", goneUser)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest of a suppressed user: %d %s", code, resp)
	}
	if m := metric(t, a.url); !strings.Contains(m, `outbox_events_dropped_total{reason="suppressed"} 1`) {
		t.Errorf("suppressed drop not counted")
	}
	if code, out, _ := runCLI(t, t.TempDir(), nil, "", "dead", "replay", "--agent", a.url); code != 0 {
		t.Fatalf("dead replay: %d %s", code, out)
	}
	kept := []string{deadIDs[1], ids[1], ids[3], ids[4]}
	if missing := waitDelivered(t, s, kept, 15*time.Second); missing > 0 {
		t.Fatalf("%d of the other user's events never arrived", missing)
	}
	for i, r := range s.Requests() {
		for _, e := range r.Events {
			if bytes.Contains(e, []byte(goneUser)) && (i >= sentBefore || r.Outcome == "accepted") {
				t.Errorf("request %d (%s) carried the forgotten user: %s", i, r.Outcome, e)
			}
			for _, secret := range []string{"192.0.2.77", "mail-"} {
				if bytes.Contains(e, []byte(secret)) {
					t.Errorf("request %d carried scrubbed data %q: %s", i, secret, e)
				}
			}
		}
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 5*time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	logs := a.stderr.String()
	if !strings.Contains(logs, "users forgotten") || strings.Contains(logs, goneUser) {
		t.Errorf("want an audit line that does not name the user; agent log:\n%s", logs)
	}
	raw, err := os.ReadFile(filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{goneUser, "192.0.2.77", "mail-"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the data file holds %q", secret)
		}
	}
}

func TestSuppress_ReloadAndUnsuppress(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	dir, cfgDir := t.TempDir(), t.TempDir()
	env := privacyEnv(t, cfgDir)
	a := startAgent(t, dir, s.URL()+"/v1/batch", env)
	suppressFile := env["OUTBOX_PRIVACY_SUPPRESS_FILE"]

	// A list edited by hand takes effect on SIGHUP.
	if err := os.WriteFile(suppressFile, []byte("by-hand\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.signal(t, syscall.SIGHUP)
	a.waitLog(t, 10*time.Second, "suppress list re-read")
	body, _ := userBatch("hand", "by-hand", "other")
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	if missing := waitDelivered(t, s, []string{"hand-1"}, 10*time.Second); missing > 0 {
		t.Fatal("the other user's event never arrived")
	}
	if s.Deliveries("hand-0") != 0 {
		t.Fatal("an event of a suppressed user was delivered")
	}
	// Lifted through the agent: the user's events are accepted again.
	code, out, stderr := runCLI(t, t.TempDir(), nil, "", "forget", "--unsuppress", "--user-id", "by-hand", "--agent", a.url)
	if code != 0 || !strings.Contains(out, "took 1 id(s) off the suppress list") {
		t.Fatalf("unsuppress: exit %d\n%s\n%s", code, out, stderr)
	}
	body, _ = userBatch("again", "by-hand")
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	if missing := waitDelivered(t, s, []string{"again-0"}, 10*time.Second); missing > 0 {
		t.Fatal("an unsuppressed user's event never arrived")
	}
}

func TestForget_Offline(t *testing.T) {
	dir, cfgDir := t.TempDir(), t.TempDir()
	env := privacyEnv(t, cfgDir)
	// Nothing listens, and the first retry waits longer than the shutdown: the events stay queued.
	env["OUTBOX_RETRY_BACKOFF_BASE"], env["OUTBOX_RETRY_BACKOFF_CAP"] = "1m", "1m"
	a := startAgent(t, dir, "http://"+testutil.FreeAddr(t)+"/v1/batch", env)
	body, _ := userBatch("off", goneUser, "kept", goneUser)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != 200 {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	cliEnv := map[string]string{"OUTBOX_PRIVACY_HASH_KEY_FILE": env["OUTBOX_PRIVACY_HASH_KEY_FILE"], "OUTBOX_PRIVACY_SUPPRESS_FILE": env["OUTBOX_PRIVACY_SUPPRESS_FILE"]}
	code, out, stderr := runCLI(t, t.TempDir(), cliEnv, "", "forget", "--user-id", goneUser, "--suppress", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "default  2       0     0") {
		t.Fatalf("offline forget: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "users forgotten") || !strings.Contains(stderr, "hash_key=privacy.hash_key_file") || strings.Contains(stderr, goneUser) {
		t.Errorf("audit line: %s", stderr)
	}
	if list, err := os.ReadFile(env["OUTBOX_PRIVACY_SUPPRESS_FILE"]); err != nil || !strings.Contains(string(list), goneUser) {
		t.Errorf("suppress file: %q %v", list, err)
	}
	code, out, _ = runCLI(t, t.TempDir(), nil, "", "inspect", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "1 events,") {
		t.Errorf("inspect after forget: exit %d\n%s", code, out)
	}
	// The flags are checked first.
	if code, _, stderr := runCLI(t, t.TempDir(), nil, "", "forget", "--data-dir", dir); code != 2 || !strings.Contains(stderr, "--user-id") {
		t.Errorf("forget without an id: exit %d, %s", code, stderr)
	}
}
