package segment_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

func config(t *testing.T, endpoint string) uploader.Config {
	cfg := uploader.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Upload.Endpoint = endpoint
	cfg.Upload.WriteKey = "wk-segment"
	cfg.Queue.Sync = "none"
	return cfg
}

func closeAtCleanup(t *testing.T, c *uploader.Client) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
}

func TestOpen_DeliversToTheHTTPCollectorOfTheUploadKeys_WithTheHTTPOptions(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	hooked := make(chan struct{}, 16)
	c, err := segment.Open(config(t, s.URL()+"/v1/batch"), uploader.WithRequestHook(func(r *http.Request) error {
		r.Header.Set("X-Signed", "yes")
		select {
		case hooked <- struct{}{}:
		default:
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Enqueue(ctx, map[string]any{"type": "track", "event": "E", "userId": "u"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || len(hooked) == 0 {
		t.Fatalf("%d requests, hook called %d times; want 1 request through the hook", len(reqs), len(hooked))
	}
	if user, _, ok := (&http.Request{Header: reqs[0].Header}).BasicAuth(); !ok || user != "wk-segment" || reqs[0].Header.Get("X-Signed") != "yes" {
		t.Fatalf("request carried write key %q (basic auth %v) and X-Signed %q; want upload.write_key and the hook's header",
			user, ok, reqs[0].Header.Get("X-Signed"))
	}
}

// nowhere is a destination that accepts nothing: it shows which destination a client uses.
type nowhere struct{ sent chan struct{} }

func (nowhere) Name() string { return "nowhere" }
func (n nowhere) Send(context.Context, delivery.Batch) delivery.Outcome {
	select {
	case n.sent <- struct{}{}:
	default:
	}
	return delivery.Outcome{Class: delivery.ClassRetryable, Status: 503}
}
func (nowhere) Close() error { return nil }

func TestOpen_WithDestinationWinsOverTheHTTPDestination(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	d := nowhere{sent: make(chan struct{}, 1)}
	c, err := segment.Open(config(t, s.URL()+"/v1/batch"), uploader.WithDestination(d))
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, c)
	if err := c.Enqueue(context.Background(), map[string]any{"type": "track", "event": "E", "userId": "u"}); err != nil {
		t.Fatal(err)
	}
	_ = c.Flush(context.Background())
	select {
	case <-d.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the destination given with WithDestination was never sent a batch")
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("the HTTP collector got %d requests, want none", n)
	}
}

func TestUploaderOpen_WithoutADestination_SaysToUseSegmentOpen(t *testing.T) {
	_, err := uploader.Open(config(t, "http://127.0.0.1:1/v1/batch"))
	if err == nil || !strings.Contains(err.Error(), "segment.Open") || !strings.Contains(err.Error(), "WithDestination") {
		t.Fatalf("uploader.Open without a destination: %v; want an error naming segment.Open and WithDestination", err)
	}
}
