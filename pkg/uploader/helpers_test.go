package uploader_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// testConfig is a config for dir and endpoint with a short interval and gzip off, so that the
// sink's records are easy to read.
func testConfig(dir, endpoint string) uploader.Config {
	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	cfg.Upload.Endpoint = endpoint
	cfg.Upload.WriteKey = "wk_test"
	cfg.Upload.Timeout = 5 * time.Second
	cfg.Queue.Sync = "none"
	return cfg
}

// open opens a client and closes it at cleanup (a second Close is fine).
func open(t testing.TB, cfg uploader.Config, opts ...uploader.Option) *uploader.Client {
	t.Helper()
	if testing.Verbose() {
		opts = append([]uploader.Option{uploader.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)))}, opts...)
	}
	c, err := uploader.Open(cfg, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// track returns a valid track event with a fixed messageId.
func track(i int) map[string]any {
	return map[string]any{"type": "track", "event": "Tested", "userId": "u1", "messageId": fmt.Sprintf("m-%d", i)}
}

// enqueue stores n events numbered from first.
func enqueue(t testing.TB, c *uploader.Client, first, n int) {
	t.Helper()
	evs := make([]any, n)
	for i := range evs {
		evs[i] = track(first + i)
	}
	if err := c.Enqueue(context.Background(), evs...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

// autoClock is a fake clock on which every wait passes at once.
func autoClock() *budgettest.Clock { return budgettest.NewAuto(time.Time{}) }

var _ budget.Clock = autoClock()

// waitCtx is a context for waiting on the sink in a test.
func waitCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
