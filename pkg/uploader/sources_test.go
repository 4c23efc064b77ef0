package uploader_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// keyOf returns the write key of a request's Basic auth ("" without one).
func keyOf(t testing.TB, r sink.Request) string {
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

func sourceEvent(src string, i int) map[string]any {
	return map[string]any{"type": "track", "event": src, "userId": "u", "messageId": fmt.Sprintf("%s-%d", src, i)}
}

func TestClient_Sources_EachUploadCarriesItsSourceKeyOnly(t *testing.T) {
	col := sinktest.Start(t, sink.Options{})
	eu := sinktest.Start(t, sink.Options{})
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 7
	cfg.Sources.Named = map[string]*uploader.SourceConfig{
		"app-a": {UploadWriteKey: "wk-a"},
		"app-b": {UploadWriteKey: "wk-b", Endpoint: eu.URL() + "/v1/batch", Headers: map[string]string{"X-Region": "eu"}},
	}
	c := open(t, cfg)
	ctx := waitCtx(t)
	a, err := c.Source("app-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Source("app-b")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := a.Enqueue(ctx, sourceEvent("app-a", i)); err != nil {
			t.Fatal(err)
		}
		if err := b.Enqueue(ctx, sourceEvent("app-b", i)); err != nil {
			t.Fatal(err)
		}
		if err := c.Enqueue(ctx, sourceEvent("default", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app-a": "wk-a", "default": "wk_test"}
	for _, r := range col.Accepted() {
		key := keyOf(t, r)
		for _, e := range r.Events {
			src := strings.Split(strings.Split(string(e), `"event":"`)[1], `"`)[0]
			if want[src] != key {
				t.Fatalf("event of %s uploaded with key %q in a request of %d events", src, key, len(r.Events))
			}
		}
	}
	for _, r := range eu.Accepted() {
		if key := keyOf(t, r); key != "wk-b" || r.Header.Get("X-Region") != "eu" {
			t.Fatalf("upload to app-b's endpoint with key %q, X-Region %q", key, r.Header.Get("X-Region"))
		}
		for _, e := range r.Events {
			if !strings.Contains(string(e), `"event":"app-b"`) {
				t.Fatalf("app-b's endpoint got %s", e)
			}
		}
	}
	if n := len(col.Events()) + len(eu.Events()); n != 60 || len(eu.Events()) != 20 {
		t.Fatalf("%d events at the collector, %d at app-b's endpoint; want 60 and 20", n, len(eu.Events()))
	}
	rows := map[string]uploader.SourceStats{}
	for _, r := range c.Stats().Sources {
		rows[r.Name] = r
	}
	if rows["app-a"].LastSuccess.IsZero() || rows["app-b"].LastSuccess.IsZero() || rows["default"].LastSuccess.IsZero() || rows["app-a"].Events != 0 {
		t.Fatalf("per-source stats %+v", rows)
	}
}

func TestClient_Sources_OneSourceOverItsShareIsRefusedAlone(t *testing.T) {
	col := sinktest.Start(t, sink.Options{})
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Batch.Interval = 1 << 40 // nothing leaves: the share fills
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"small": {UploadWriteKey: "k", MaxBytes: 300}}
	c := open(t, cfg)
	ctx := waitCtx(t)
	small, err := c.Source("small")
	if err != nil {
		t.Fatal(err)
	}
	var full error
	for i := range 10 {
		if full = small.Enqueue(ctx, sourceEvent("small", i)); full != nil {
			break
		}
	}
	if !errors.Is(full, errs.ErrSourceFull) || !errors.Is(full, errs.ErrQueueFull) {
		t.Fatalf("small past its share: %v, want ErrSourceFull", full)
	}
	if err := c.Enqueue(ctx, sourceEvent("default", 0)); err != nil {
		t.Fatalf("default source while small is full: %v", err)
	}
	if got := c.Stats().Queue.Dropped["source_full"]; got != 1 {
		t.Fatalf("source_full count %d, want 1", got)
	}
}

func TestClient_Sources_RelaySourceKeepsItsKeyAcrossRestart(t *testing.T) {
	col := sinktest.Start(t, sink.Options{})
	dir := t.TempDir()
	cfg := testConfig(dir, closedPort(t)) // nothing is delivered before the restart
	cfg.Sources.Relay = true
	cfg.Sources.Max = 2 // default + one relay source
	c := open(t, cfg)
	ctx := waitCtx(t)
	name, err := c.RelaySource(ctx, "wk-relay-secret")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(name, "wk-relay") || !strings.HasPrefix(name, "relay-") {
		t.Fatalf("relay source named %q: want relay-<hash>, never the key", name)
	}
	if again, err := c.RelaySource(ctx, "wk-relay-secret"); err != nil || again != name {
		t.Fatalf("second use of the key: %q, %v", again, err)
	}
	if _, err := c.RelaySource(ctx, "wk-another"); !errors.Is(err, uploader.ErrTooManySources) || !strings.Contains(err.Error(), "sources.max is 2") {
		t.Fatalf("a key past sources.max: %v", err)
	}
	src, err := c.Source(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Enqueue(ctx, sourceEvent("relay", 0), sourceEvent("relay", 1)); err != nil {
		t.Fatal(err)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_ = c.Close(closeCtx) // the events stay queued: nothing listens
	cfg.Upload.Endpoint = col.URL() + "/v1/batch"
	c = open(t, cfg)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := col.Accepted()
	if len(reqs) == 0 || len(col.Events()) != 2 {
		t.Fatalf("%d events after the restart, want 2", len(col.Events()))
	}
	for _, r := range reqs {
		if key := keyOf(t, r); key != "wk-relay-secret" {
			t.Fatalf("relay source uploaded with key %q after the restart", key)
		}
	}
}
