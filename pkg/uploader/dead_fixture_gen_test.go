package uploader_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// TestGenerateDeadReleaseFixture writes testdata/dead-release-1/outbox.db with the code of the
// release before dead-letter filters and replay counts: four dead batches of one event each, as
// the uploader dead-lettered them then (their reason the whole sentence, no result code):
// "reject" refused with 400, "big" with 413, "flaky" out of retries on 500, and "other" of
// source "a" refused with 400. It runs only with OUTBOX_WRITE_RELEASE_FIXTURE=1; the file it
// wrote is kept, so that later releases are tested against what this one wrote.
func TestGenerateDeadReleaseFixture(t *testing.T) {
	if os.Getenv("OUTBOX_WRITE_RELEASE_FIXTURE") != "1" {
		t.Skip("set OUTBOX_WRITE_RELEASE_FIXTURE=1 to rewrite testdata/dead-release-1")
	}
	s := sinktest.Start(t, sink.Options{Respond: func(req sink.Request, scripted sink.Response) sink.Response {
		for _, e := range req.Events {
			switch {
			case bytes.Contains(e, []byte(`"event":"reject"`)), bytes.Contains(e, []byte(`"event":"other"`)):
				return sink.Response{Status: 400, Body: `{"error":"bad event"}`}
			case bytes.Contains(e, []byte(`"event":"big"`)):
				return sink.Response{Status: 413}
			case bytes.Contains(e, []byte(`"event":"flaky"`)):
				return sink.Response{Status: 500}
			}
		}
		return scripted
	}})
	dir := t.TempDir()
	cfg := testConfig(dir, s.URL()+"/v1/batch")
	cfg.Retry.MaxRetries = 1
	cfg.Sources.Named = map[string]*uploader.SourceConfig{"a": {UploadWriteKey: "wk_test"}}
	c := open(t, cfg, uploader.WithClock(autoClock()))
	ctx := context.Background()
	a, err := c.Source("a")
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"reject", "big", "flaky", "other"} {
		ev := track(i)
		ev["event"] = name
		enq := c.Enqueue
		if name == "other" {
			enq = a.Enqueue
		}
		if err := enq(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.DeadLetters().List()
	if err != nil || len(list) != 4 {
		t.Fatalf("dead letters: %+v, %v; want 4", list, err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("testdata/dead-release-1", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("testdata/dead-release-1/outbox.db", data, 0o644); err != nil {
		t.Fatal(err)
	}
}
