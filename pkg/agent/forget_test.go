package agent_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// withPrivacy sets scrub rules, a hash key and a suppress file in a temp dir.
func withPrivacy(t *testing.T) func(*uploader.Config) {
	dir := t.TempDir()
	key := filepath.Join(dir, "hash.key")
	if err := os.WriteFile(key, []byte("agent-test-hash-key-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *uploader.Config) {
		c.Privacy = uploader.PrivacyConfig{Rules: []string{"context.ip=remove", "traits.email=hash"},
			HashKeyFile: key, SuppressFile: filepath.Join(dir, "suppress")}
	}
}

func TestIngest_ScrubsEveryRoute(t *testing.T) {
	h := start(t, setup{upload: withPrivacy(t)})
	for _, r := range []struct{ path, body string }{
		{"/v1/batch", `{"batch":[{"type":"identify","userId":"u1","traits":{"email":"a@example.com"},"context":{"ip":"198.51.100.1"}}]}`},
		{"/v1/identify", `{"userId":"u2","traits":{"email":"a@example.com"},"context":{"ip":"198.51.100.2"}}`},
		{"/v1/batch", `{"context":{"ip":"198.51.100.3"},"batch":[{"type":"track","event":"e","userId":"u3"}]}`},
	} {
		if res := h.post(r.path, r.body); res.code != http.StatusOK {
			t.Fatalf("%s: %d %s", r.path, res.code, res.body)
		}
	}
	h.flush()
	evs := h.sinkEvents()
	if len(evs) != 3 {
		t.Fatalf("sink got %d events", len(evs))
	}
	hashes := map[string]bool{}
	for _, ev := range evs {
		ctx, _ := ev["context"].(map[string]any)
		if _, ok := ctx["ip"]; ok {
			t.Errorf("context.ip not removed: %v", ev)
		}
		if tr, ok := ev["traits"].(map[string]any); ok {
			email, _ := tr["email"].(string)
			if len(email) != 64 {
				t.Errorf("traits.email not hashed: %v", ev)
			}
			hashes[email] = true
		}
	}
	if len(hashes) != 1 {
		t.Errorf("the same email gave %d hashes on two routes, want 1", len(hashes))
	}
}

func TestForget_DeletesQueuedEventsAndSuppressesLaterOnes(t *testing.T) {
	h := start(t, setup{upload: withPrivacy(t)})
	body := `{"batch":[{"type":"track","event":"e","userId":"gone","messageId":"g1"},` +
		`{"type":"track","event":"e","userId":"kept","messageId":"k1"},` +
		`{"type":"track","event":"e","anonymousId":"anon-gone","messageId":"g2"}]}`
	if res := h.post("/v1/batch", body); res.code != http.StatusOK {
		t.Fatalf("batch: %d %s", res.code, res.body)
	}
	res := h.post("/v1/forget", `{"user_ids":["gone"],"anonymous_ids":["anon-gone"],"suppress":true}`)
	if res.code != http.StatusOK {
		t.Fatalf("forget: %d %s", res.code, res.body)
	}
	var fr agent.ForgetResult
	res.json(t, &fr)
	if fr.Queued != 2 || len(fr.Sources) != 1 || fr.Sources[0].Source != "default" || fr.Sources[0].Queued != 2 || !fr.Suppressed {
		t.Fatalf("forget answered %s", res.body)
	}
	if strings.Contains(string(res.body), "gone") {
		t.Errorf("the answer names the user: %s", res.body)
	}
	// Later events of the suppressed users are answered 200, dropped and counted.
	if r := h.post("/v1/track", `{"event":"e","userId":"gone","messageId":"g3"}`); r.code != http.StatusOK {
		t.Fatalf("track of a suppressed user: %d %s", r.code, r.body)
	}
	if r := h.post("/v1/batch", `{"batch":[{"type":"track","event":"e","anonymousId":"anon-gone","messageId":"g4"}]}`); r.code != http.StatusOK {
		t.Fatalf("batch of a suppressed user: %d %s", r.code, r.body)
	}
	if n := h.client.Stats().Queue.Dropped["suppressed"]; n != 2 {
		t.Errorf("suppressed drops = %d, want 2", n)
	}
	metrics := string(h.get("/metrics").body)
	if !strings.Contains(metrics, `outbox_events_dropped_total{reason="suppressed"} 2`) {
		t.Errorf("metrics lack the suppressed drops:\n%s", metrics)
	}
	// Lifted: the user's events are stored again.
	if r := h.post("/v1/forget", `{"user_ids":["gone"],"unsuppress":true}`); r.code != http.StatusOK {
		t.Fatalf("unsuppress: %d %s", r.code, r.body)
	}
	if r := h.post("/v1/track", `{"event":"e","userId":"gone","messageId":"g5"}`); r.code != http.StatusOK {
		t.Fatalf("track: %d %s", r.code, r.body)
	}
	h.flush()
	var ids []string
	for _, ev := range h.sinkEvents() {
		ids = append(ids, ev["messageId"].(string))
	}
	if strings.Join(ids, ",") != "k1,g5" {
		t.Errorf("delivered %v, want k1 and g5", ids)
	}
}

func TestForget_RefusesBadRequests(t *testing.T) {
	h := start(t, setup{})
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"no user", `{}`, http.StatusBadRequest, "at least one user"},
		{"not JSON", `{"user_ids":`, http.StatusBadRequest, "want {"},
		{"both flags", `{"user_ids":["u"],"suppress":true,"unsuppress":true}`, http.StatusBadRequest, "not both"},
		{"suppress without a suppress file", `{"user_ids":["u"],"suppress":true}`, http.StatusConflict, "privacy.suppress_file is not set"},
		{"empty id", `{"user_ids":[""]}`, http.StatusServiceUnavailable, "an id is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.post("/v1/forget", tc.body)
			if r.code != tc.code || !strings.Contains(string(r.body), tc.want) {
				t.Fatalf("answered %d %s; want %d with %q", r.code, r.body, tc.code, tc.want)
			}
		})
	}
}
