package test_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// notifySocket is a fake systemd notification socket: a unixgram socket whose datagrams are
// delivered on msgs in arrival order.
func notifySocket(t *testing.T) (path string, msgs <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path = filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return path, ch
}

// nextNotify returns the next message other than WATCHDOG=1, counting the watchdog pings seen.
func nextNotify(t *testing.T, msgs <-chan string, pings *int, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the notification socket closed")
			}
			if strings.TrimSpace(m) == "WATCHDOG=1" {
				*pings++
				continue
			}
			return strings.TrimSpace(m)
		case <-deadline:
			t.Fatalf("no notification within %s", within)
			return ""
		}
	}
}

func TestRun_UnderSystemd_NotifiesReadyWhenListening_StoppingOnSIGTERM_AndPingsTheWatchdog(t *testing.T) {
	s := sinktest.StartScript(t, "ok")
	path, msgs := notifySocket(t)
	listen := testutil.FreeAddr(t)
	env := agentEnv(t.TempDir(), listen, s.URL()+"/v1/batch", map[string]string{
		"NOTIFY_SOCKET": path,
		"WATCHDOG_USEC": "200000", // 200 ms: a ping every 100 ms
	})
	p := start(t, t.TempDir(), env, "run")

	pings := 0
	if m := nextNotify(t, msgs, &pings, 15*time.Second); m != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", m)
	}
	// READY=1 means the listener is open: the first request after it must be answered.
	resp, err := http.Get("http://" + listen + "/healthz")
	if err != nil {
		t.Fatalf("READY=1 was sent before the agent listened: %v", err)
	}
	resp.Body.Close()

	// Watchdog pings keep coming while the agent runs.
	for seen := pings; pings < seen+3; {
		select {
		case m := <-msgs:
			if strings.TrimSpace(m) != "WATCHDOG=1" {
				t.Fatalf("unexpected notification %q while running", m)
			}
			pings++
		case <-time.After(5 * time.Second):
			t.Fatalf("%d watchdog pings, then none for 5s with WATCHDOG_USEC=200000", pings)
		}
	}

	p.signal(t, syscall.SIGTERM)
	if m := nextNotify(t, msgs, &pings, 5*time.Second); m != "STOPPING=1" {
		t.Fatalf("notification after SIGTERM %q, want STOPPING=1", m)
	}
	if code, _ := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

func TestRun_OutsideSystemd_SendsNothingAndStarts(t *testing.T) {
	// No NOTIFY_SOCKET: the agent starts and stops as before, with no notification warning.
	s := sinktest.StartScript(t, "ok")
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{"WATCHDOG_USEC": "200000"})
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if logs := a.stderr.String(); strings.Contains(logs, "systemd") {
		t.Errorf("the agent spoke of systemd outside it:\n%s", logs)
	}
}
