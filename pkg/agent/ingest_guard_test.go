package agent_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
)

func TestIngest_TooLargeSaysTheSizeAndTheLimitsItBreaks(t *testing.T) {
	h := start(t, setup{})
	big := strings.Repeat("x", 2_000_000)
	for _, tc := range []struct {
		name, path string
		body       string
		want       []string
	}{
		{"a batch names its size and the request limit", "/v1/batch", `{"batch":[{"userId":"u","event":"` + big + `"}]}`,
			[]string{"request body is 2000037 bytes", "limit of 512000 bytes (limits.max_request_bytes", "send smaller batches"}},
		{"one event also names the per-event limit it breaks", "/v1/track", `{"userId":"u","event":"` + big + `"}`,
			[]string{"event is 2000025 bytes", "request limit of 512000 bytes (limits.max_request_bytes",
				"event limit of 32768 bytes (limits.max_event_bytes)", "send a smaller event"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.post(tc.path, tc.body)
			if r.code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%s = %d %s, want 413", tc.path, r.code, r.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(r.body), w) {
					t.Errorf("413 %s lacks %q", r.body, w)
				}
			}
		})
	}
	// A gzip body whose size is known only as it is read: "more than" the limit.
	r := h.do(req{path: "/v1/batch", body: []byte(`{"batch":[{"userId":"u","event":"` + big + `"}]}`), gzip: true})
	if r.code != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.body), "is more than 512000 bytes") {
		t.Errorf("gzip batch over the limit = %d %s, want 413 saying it is more than 512000 bytes", r.code, r.body)
	}
}

func TestIngest_RefusedCredentialsAreCountedAndLoggedRateLimitedByHashOnly(t *testing.T) {
	var logs syncBuffer
	clock := budgettest.New(time.Now())
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk-good"}, Clock: clock,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	for i := range 200 {
		if r := h.do(req{path: "/v1/track", body: []byte(trackEvent), writeKey: fmt.Sprintf("wk-guess-%d", i)}); r.code != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: %d", i, r.code)
		}
	}
	h.do(req{path: "/v1/track", body: []byte(trackEvent)})                                                  // none at all
	h.do(req{path: "/v1/batch", body: []byte(`{"writeKey":"wk-body-guess","batch":[` + trackEvent + `]}`)}) // in the body
	clock.Advance(2 * time.Second)
	h.do(req{path: "/v1/track", body: []byte(trackEvent), writeKey: "wk-stale"})

	out := logs.String()
	if n := strings.Count(out, "ingest credential refused"); n != 2 {
		t.Errorf("%d warn lines for 203 refusals over two seconds, want 2 (one a second):\n%s", n, out)
	}
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "suppressed=201") || !strings.Contains(out, "key_hash=") {
		t.Errorf("log lacks the warn level, the suppressed count or the key hash:\n%s", out)
	}
	if strings.Contains(out, "wk-guess") || strings.Contains(out, "wk-stale") || strings.Contains(out, "wk-body-guess") {
		t.Errorf("a refused key reached the log:\n%s", out)
	}
	mfs := h.scrape()
	if got, _ := value(mfs, "outbox_ingest_auth_refused_total", map[string]string{"reason": "unknown"}); got != 202 {
		t.Errorf("refused unknown = %v, want 202", got)
	}
	if got, _ := value(mfs, "outbox_ingest_auth_refused_total", map[string]string{"reason": "missing"}); got != 1 {
		t.Errorf("refused missing = %v, want 1", got)
	}
}

// stalledBodyKeyRequest opens a connection and sends a /v1/batch with no Authorization header
// (so its write key is in the body) and only part of its body: the agent holds it while it
// waits for the rest.
func stalledBodyKeyRequest(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/batch HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"batch\":[", addr)
	return c
}

func TestIngest_BodyKeyRequestsReadBeforeAuthAreBoundedInNumber(t *testing.T) {
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk"}}})
	addr := strings.TrimPrefix(h.url, "http://")
	// 40 stalled bodies: 32 hold every pre-auth slot, and the other 8 are refused at once
	// (503) instead of being read; which ones depends on the order the agent sees them.
	const stalled, slots = 40, 32
	codes := make(chan int, stalled)
	for range stalled {
		c := stalledBodyKeyRequest(t, addr)
		go func() {
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				codes <- 0 // closed by the cleanup
				return
			}
			codes <- res.StatusCode
		}()
	}
	for i := range stalled - slots {
		select {
		case code := <-codes:
			if code != http.StatusServiceUnavailable {
				t.Fatalf("answer %d to a stalled body-key request = %d, want 503 (the 32 slots are held)", i, code)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of the %d stalled body-key requests past the 32 slots were refused", i, stalled-slots)
		}
	}
	// A header credential is not held back by them.
	if r := h.do(req{path: "/v1/track", body: []byte(trackEvent), writeKey: "wk"}); r.code != http.StatusOK {
		t.Fatalf("a request with the key in its header while the slots are full = %d %s, want 200", r.code, r.body)
	}
}

func TestIngest_AHeaderCredentialIsCheckedBeforeTheBodyIsRead(t *testing.T) {
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk"}}})
	addr := strings.TrimPrefix(h.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Headers and a wrong key, then a body that never comes: the 401 comes at once.
	fmt.Fprintf(c, "POST /v1/batch HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\nContent-Length: 400000\r\n\r\n{\"batch\":[",
		addr, "d2std3Jvbmc6") // wk-wrong:
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong key with a stalled body: %v %v, want 401 before the body", res, err)
	}
}
