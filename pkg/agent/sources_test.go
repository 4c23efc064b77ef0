package agent_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// basicKey returns the write key of a sink request's Basic auth.
func basicKey(t testing.TB, h string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
	if err != nil {
		t.Fatalf("Authorization %q is not Basic", h)
	}
	return strings.TrimSuffix(string(raw), ":")
}

func appEvent(app string, i int) string {
	return fmt.Sprintf(`{"batch":[{"type":"track","event":"%s","userId":"u","messageId":"%s-%d"}]}`, app, app, i)
}

func TestAgent_Relay_EachKeyIsItsOwnSourceUploadedWithThatKey(t *testing.T) {
	h := start(t, setup{
		agent:  agent.Config{Sources: agent.SourcesConfig{Relay: true}},
		upload: func(c *uploader.Config) { c.Sources.Relay = true; c.Upload.WriteKey = "" },
	})
	for i := range 12 {
		for _, app := range []string{"wk-a", "wk-b"} {
			if r := h.do(req{path: "/v1/batch", body: []byte(appEvent(app, i)), writeKey: app}); r.code != http.StatusOK {
				t.Fatalf("ingest with %s: %d %s", app, r.code, r.body)
			}
		}
	}
	if r := h.post("/v1/batch", appEvent("none", 0)); r.code != http.StatusOK {
		t.Fatalf("ingest without a key: %d %s", r.code, r.body)
	}
	h.flush()
	reqs := h.sink.Accepted()
	if len(reqs) < 3 {
		t.Fatalf("%d uploads, want one per source at least", len(reqs))
	}
	for _, r := range reqs {
		auth := r.Header.Get("Authorization")
		for _, e := range r.Events {
			app := strings.Split(strings.Split(string(e), `"event":"`)[1], `"`)[0]
			switch {
			case app == "none" && auth != "":
				t.Fatalf("an event sent without a key went out with Authorization")
			case app != "none" && (auth == "" || basicKey(t, auth) != app):
				t.Fatalf("an event sent with key %s uploaded in a request of %d events with another key", app, len(r.Events))
			}
		}
	}
	if n := len(h.sink.Events()); n != 25 {
		t.Fatalf("%d events at the collector, want 25", n)
	}
	st := h.status()
	names := map[string]bool{}
	for _, s := range st.Sources {
		names[s.Name] = true
		if strings.Contains(s.Name, "wk-") {
			t.Fatalf("status names a source by its key: %q", s.Name)
		}
	}
	if len(st.Sources) != 3 || !names["default"] {
		t.Fatalf("status sources %+v: want default and two relay sources", st.Sources)
	}
}

func TestAgent_Relay_NewKeyPastSourcesMaxGets429(t *testing.T) {
	h := start(t, setup{
		agent:  agent.Config{Sources: agent.SourcesConfig{Relay: true}},
		upload: func(c *uploader.Config) { c.Sources.Relay = true; c.Sources.Max = 2 },
	})
	if r := h.do(req{path: "/v1/batch", body: []byte(appEvent("wk-a", 0)), writeKey: "wk-a"}); r.code != http.StatusOK {
		t.Fatalf("first relay key: %d %s", r.code, r.body)
	}
	r := h.do(req{path: "/v1/batch", body: []byte(appEvent("wk-b", 0)), writeKey: "wk-b"})
	if r.code != http.StatusTooManyRequests || !strings.Contains(string(r.body), "sources.max") || !strings.Contains(string(r.body), "2 sources") {
		t.Fatalf("a key past sources.max: %d %s; want 429 naming the count and sources.max", r.code, r.body)
	}
	if strings.Contains(string(r.body), "wk-b") {
		t.Fatalf("the refusal shows the key: %s", r.body)
	}
	if r := h.do(req{path: "/v1/batch", body: []byte(appEvent("wk-a", 1)), writeKey: "wk-a"}); r.code != http.StatusOK {
		t.Fatalf("a known relay key after the refusal: %d %s", r.code, r.body)
	}
	if m := string(h.get("/metrics").body); !strings.Contains(m, "outbox_sources_refused_total 1") {
		t.Fatalf("metrics lack the refusal:\n%s", m)
	}
}

func TestAgent_Sources_FullSourceGets503AndAnotherIsAccepted(t *testing.T) {
	h := start(t, setup{
		agent: agent.Config{Sources: agent.SourcesConfig{Keys: map[string]string{"wk-small": "small", "wk-big": "big"}}},
		upload: func(c *uploader.Config) {
			c.Sources.Named = map[string]*uploader.SourceConfig{"small": {MaxBytes: 200}, "big": {}}
		},
	})
	var full resp
	for i := range 10 {
		if full = h.do(req{path: "/v1/batch", body: []byte(appEvent("small", i)), writeKey: "wk-small"}); full.code != http.StatusOK {
			break
		}
	}
	if full.code != http.StatusServiceUnavailable || full.header.Get("Retry-After") == "" || !strings.Contains(string(full.body), "sources.small.max_bytes") {
		t.Fatalf("small past its share: %d %q %s; want 503 with Retry-After naming sources.small.max_bytes", full.code, full.header.Get("Retry-After"), full.body)
	}
	if r := h.do(req{path: "/v1/batch", body: []byte(appEvent("big", 0)), writeKey: "wk-big"}); r.code != http.StatusOK {
		t.Fatalf("big while small is full: %d %s", r.code, r.body)
	}
	if r := h.get("/readyz"); r.code != http.StatusOK {
		t.Fatalf("readyz while one source is full: %d %s", r.code, r.body)
	}
	if r := h.do(req{path: "/v1/batch", body: []byte(appEvent("x", 0)), writeKey: "wk-unknown"}); r.code != http.StatusUnauthorized {
		t.Fatalf("a key no source lists, outside relay mode: %d, want 401", r.code)
	}
	if m := string(h.get("/metrics").body); !strings.Contains(m, `outbox_source_queue_events{source="big"} 1`) ||
		!strings.Contains(m, `outbox_events_dropped_total{reason="source_full"} 1`) {
		t.Fatalf("metrics lack the per-source series or the source_full count:\n%s", m)
	}
}

func TestAgent_Sources_ARefusedSourceIsPausedAloneInStatusAndMetrics(t *testing.T) {
	h := start(t, setup{
		agent: agent.Config{Sources: agent.SourcesConfig{Keys: map[string]string{"wk-in-a": "a", "wk-in-b": "b"}}},
		upload: func(c *uploader.Config) {
			c.Sources.Named = map[string]*uploader.SourceConfig{"a": {UploadWriteKey: "wk-up-a"}, "b": {UploadWriteKey: "wk-up-b"}}
		},
		sinkOpts: sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
			if r.Header.Get("Authorization") != "" && basicKey(t, r.Header.Get("Authorization")) == "wk-up-a" {
				return sink.Response{Status: 401}
			}
			return scripted
		}},
	})
	for _, key := range []string{"wk-in-a", "wk-in-b"} {
		if r := h.do(req{path: "/v1/batch", body: []byte(appEvent(key, 0)), writeKey: key}); r.code != http.StatusOK {
			t.Fatalf("ingest with %s: %d %s", key, r.code, r.body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.client.Flush(ctx); err == nil {
		t.Fatal("Flush = nil, want a's pause on refused credentials")
	}
	var st struct {
		Sources []agent.SourceStatus `json:"sources"`
	}
	if err := json.Unmarshal(h.get("/v1/status").body, &st); err != nil {
		t.Fatal(err)
	}
	rows := map[string]agent.SourceStatus{}
	for _, r := range st.Sources {
		rows[r.Name] = r
	}
	if a := rows["a"]; !a.Paused || a.PausedReason != "auth_refused" || a.PausedCode != "401" || a.PausedKey != "sources.a.upload_write_key" || a.InFlight != 1 {
		t.Errorf("a's row %+v; want paused on a 401 naming sources.a.upload_write_key, its batch in flight", a)
	}
	if b := rows["b"]; b.Paused || b.Events != 0 || b.LastSuccess == nil {
		t.Errorf("b's row %+v; want delivered, not paused", b)
	}
	m := string(h.get("/metrics").body)
	if !strings.Contains(m, `outbox_source_paused{source="a"} 1`) || !strings.Contains(m, `outbox_source_paused{source="b"} 0`) ||
		!strings.Contains(m, `outbox_source_in_flight_batches{source="a"} 1`) {
		t.Fatalf("metrics lack a's pause or b's absence of one:\n%s", m)
	}
}
