package uploader_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// withSources is cfg with named as its sources.<name>.* (cfg's own map left alone).
func withSources(cfg uploader.Config, named map[string]*uploader.SourceConfig) uploader.Config {
	cfg.Sources.Named = named
	return cfg
}

// keysOfSource returns the write key of every accepted request holding events of src, in order.
func keysOfSource(t *testing.T, s *sink.Server, src string) (keys []string, events int) {
	t.Helper()
	for _, r := range s.Accepted() {
		mine := 0
		for _, e := range r.Events {
			if strings.Contains(string(e), `"event":"`+src+`"`) {
				mine++
			}
		}
		if mine == 0 {
			continue
		}
		if mine != len(r.Events) {
			t.Fatalf("a request mixes %d events of %s with %d others", mine, src, len(r.Events)-mine)
		}
		keys = append(keys, keyOf(t, r))
		events += mine
	}
	return keys, events
}

func sourceRow(c *uploader.Client, name string) (uploader.SourceStats, bool) {
	for _, r := range c.Stats().Sources {
		if r.Name == name {
			return r, true
		}
	}
	return uploader.SourceStats{}, false
}

func TestClient_Reconfigure_AddsASource_ThatTakesEventsAtOnce(t *testing.T) {
	col := sinkOK(t)
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	c := open(t, cfg)
	if _, err := c.Source("app-a"); err == nil {
		t.Fatal("Source(app-a) before it is configured: no error")
	}
	if err := c.Reconfigure(withSources(cfg, map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-a"}})); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	a, err := c.Source("app-a")
	if err != nil {
		t.Fatalf("Source(app-a) after it was added: %v", err)
	}
	ctx := waitCtx(t)
	for i := range 12 {
		if err := a.Enqueue(ctx, sourceEvent("app-a", i)); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, c)
	keys, n := keysOfSource(t, col, "app-a")
	if n != 12 || len(keys) == 0 {
		t.Fatalf("%d events of app-a delivered, want 12", n)
	}
	for _, k := range keys {
		if k != "wk-a" {
			t.Fatalf("app-a uploaded with key %q, want wk-a", k)
		}
	}
}

func TestClient_Reconfigure_ReKeysASource_TheNextUploadCarriesTheNewKeyEndpointAndHeaders(t *testing.T) {
	col := sinkOK(t)
	eu := sinkOK(t)
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-old"}}
	c := open(t, cfg)
	a, err := c.Source("app-a")
	if err != nil {
		t.Fatal(err)
	}
	ctx := waitCtx(t)
	if err := a.Enqueue(ctx, sourceEvent("app-a", 0)); err != nil {
		t.Fatal(err)
	}
	settle(t, c)

	next := withSources(cfg, map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-new",
		Endpoint: eu.URL() + "/v1/batch", Headers: map[string]string{"X-Region": "eu"}}})
	if err := c.Reconfigure(next); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	if err := a.Enqueue(ctx, sourceEvent("app-a", 1)); err != nil {
		t.Fatalf("the handle taken before the re-key: %v", err)
	}
	settle(t, c)
	if keys, n := keysOfSource(t, col, "app-a"); n != 1 || keys[0] != "wk-old" {
		t.Fatalf("before the re-key: %d events with keys %v at the first endpoint, want 1 with wk-old", n, keys)
	}
	keys, n := keysOfSource(t, eu, "app-a")
	if n != 1 || keys[0] != "wk-new" || eu.Accepted()[0].Header.Get("X-Region") != "eu" {
		t.Fatalf("after the re-key: %d events with keys %v at the new endpoint, want 1 with wk-new and X-Region", n, keys)
	}
}

func TestClient_Reconfigure_RemovedSource_DrainsItsQueueWithItsLastKey_ThenIsForgotten(t *testing.T) {
	col, release := holdingSink(t) // the batches that leave before the reload stay in flight
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Batch.Interval = 1 << 40 // the rest leave at the flush
	cfg.Batch.MaxEvents = 7
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-a"}, "app-b": {UploadWriteKey: "wk-b"}}
	c := open(t, cfg)
	a, err := c.Source("app-a")
	if err != nil {
		t.Fatal(err)
	}
	ctx := waitCtx(t)
	const queued = 25
	for i := range queued {
		if err := a.Enqueue(ctx, sourceEvent("app-a", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reconfigure(withSources(cfg, map[string]*uploader.SourceConfig{"app-b": {UploadWriteKey: "wk-b"}})); err != nil {
		t.Fatalf("Reconfigure: %v", err)
	}
	if row, ok := sourceRow(c, "app-a"); !ok || !row.Removed || row.Events != queued {
		t.Fatalf("app-a after its removal: %+v (listed %v), want removed with %d events", row, ok, queued)
	}
	if _, err := c.Source("app-a"); err == nil {
		t.Fatal("Source(app-a) after its removal: no error")
	}
	release()
	settle(t, c)
	keys, n := keysOfSource(t, col, "app-a")
	if n != queued {
		t.Fatalf("%d of app-a's %d queued events delivered after its removal", n, queued)
	}
	for _, k := range keys {
		if k != "wk-a" {
			t.Fatalf("a removed source's events uploaded with key %q, want its last key wk-a", k)
		}
	}
	if row, ok := sourceRow(c, "app-a"); ok {
		t.Fatalf("app-a still listed after it drained: %+v", row)
	}
	if err := a.Enqueue(ctx, sourceEvent("app-a", queued)); !errors.Is(err, uploader.ErrSourceRemoved) {
		t.Fatalf("enqueue into app-a once it drained: %v, want ErrSourceRemoved", err)
	}
	if st := c.Stats(); st.Queue.Events != 0 || st.Dead.Events != 0 {
		t.Fatalf("queue %d, dead %d after the drain; want both 0", st.Queue.Events, st.Dead.Events)
	}
}

func TestClient_Reconfigure_RemovedThenNamedAgain_ItsQueueGoesWithTheNewSettings(t *testing.T) {
	col := sinkOK(t)
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Batch.Interval = 1 << 40
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-a"}}
	c := open(t, cfg)
	a, _ := c.Source("app-a")
	ctx := waitCtx(t)
	for i := range 3 {
		if err := a.Enqueue(ctx, sourceEvent("app-a", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reconfigure(withSources(cfg, nil)); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconfigure(withSources(cfg, map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-a2"}})); err != nil {
		t.Fatal(err)
	}
	if row, _ := sourceRow(c, "app-a"); row.Removed || row.Events != 3 {
		t.Fatalf("app-a named again: %+v, want configured with its 3 events", row)
	}
	settle(t, c)
	if keys, n := keysOfSource(t, col, "app-a"); n != 3 || keys[0] != "wk-a2" {
		t.Fatalf("%d events with keys %v, want 3 with wk-a2", n, keys)
	}
}

func TestClient_Reconfigure_SourceShare_AppliesToTheNextEnqueues(t *testing.T) {
	col := sinkOK(t)
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Batch.Interval = 1 << 40 // nothing leaves: the share fills
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"small": {UploadWriteKey: "k"}}
	c := open(t, cfg)
	small, _ := c.Source("small")
	ctx := waitCtx(t)
	if err := small.Enqueue(ctx, sourceEvent("small", 0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconfigure(withSources(cfg, map[string]*uploader.SourceConfig{"small": {UploadWriteKey: "k", MaxBytes: 200}})); err != nil {
		t.Fatal(err)
	}
	if err := small.Enqueue(ctx, sourceEvent("small", 1)); !errors.Is(err, errs.ErrSourceFull) {
		t.Fatalf("past the share set by the reload: %v, want ErrSourceFull", err)
	}
	if err := c.Enqueue(ctx, sourceEvent("default", 0)); err != nil {
		t.Fatalf("default source: %v", err)
	}
}

func TestClient_Reconfigure_BadSources_AreRefusedAndChangeNothing(t *testing.T) {
	col := sinkOK(t)
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-a"}}
	c := open(t, cfg)
	for _, tc := range []struct {
		name  string
		named map[string]*uploader.SourceConfig
		key   string
	}{
		{"endpoint not a URL", map[string]*uploader.SourceConfig{"app-b": {Endpoint: "ftp://x"}}, "sources.app-b.endpoint"},
		{"a key listed twice", map[string]*uploader.SourceConfig{"app-a": {WriteKeys: []string{"in-1"}}, "app-b": {WriteKeys: []string{"in-1"}}}, "sources.app-b.write_keys"},
		{"bad name", map[string]*uploader.SourceConfig{"App B": {}}, `source name "App B"`},
		{"reserved header", map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "k", Headers: map[string]string{"Authorization": "x"}}}, "sources.app-a.headers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Reconfigure(withSources(cfg, tc.named))
			if !errors.Is(err, errs.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Reconfigure: %v; want an invalid configuration naming %s", err, tc.key)
			}
			if strings.Contains(err.Error(), "in-1") {
				t.Fatalf("the error shows a write key: %v", err)
			}
			if _, err := c.Source("app-a"); err != nil {
				t.Fatalf("app-a after a refused reconfiguration: %v", err)
			}
			if _, err := c.Source("app-b"); err == nil {
				t.Fatal("app-b exists after a refused reconfiguration")
			}
		})
	}
}

func TestClient_Reconfigure_ReKeyOfAPausedSource_ProbesAtOnce(t *testing.T) {
	col := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
		if keyOf(t, r) == "wk-revoked" {
			return sink.Response{Status: 401}
		}
		return scripted
	}})
	cfg := testConfig(t.TempDir(), col.URL()+"/v1/batch")
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-revoked"}}
	c := open(t, cfg)
	a, _ := c.Source("app-a")
	ctx := waitCtx(t)
	for i := range 5 {
		if err := a.Enqueue(ctx, sourceEvent("app-a", i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the refused key paused delivery", func() bool { return c.Stats().AuthPause.Paused })
	if err := c.Reconfigure(withSources(cfg, map[string]*uploader.SourceConfig{"app-a": {UploadWriteKey: "wk-good"}})); err != nil {
		t.Fatal(err)
	}
	// The next probe is a minute away on the real clock: delivery well within it is the probe
	// the re-key made.
	eventually(t, "app-a's events were delivered with the new key", func() bool {
		_, n := keysOfSource(t, col, "app-a")
		return n == 5
	})
	if keys, _ := keysOfSource(t, col, "app-a"); keys[0] != "wk-good" {
		t.Fatalf("delivered with %v, want wk-good", keys)
	}
}
