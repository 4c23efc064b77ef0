package uploader_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"

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
	c, err := segment.Open(cfg, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		// Short: a test that left a batch failing on a manual clock would otherwise sit out
		// the whole deadline; what is not uploaded stays on disk.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
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

// recorder collects hook calls.
type recorder struct {
	mu          sync.Mutex
	attempts    []uploader.AttemptInfo
	retries     []string
	delivered   []uploader.BatchInfo
	dead        []deadCall
	pendingDead []deadCall // dead letters whose attempt has not been recorded yet
	deadCh      chan deadCall
}

type deadCall struct {
	info   uploader.BatchInfo
	reason string
}

func newRecorder() *recorder { return &recorder{deadCh: make(chan deadCall, 64)} }

func (r *recorder) hooks() uploader.Hooks {
	return uploader.Hooks{
		// The worker runs an attempt's outcome hooks (OnDeadLetter) before its OnAttempt, so
		// waitDead is released by the OnAttempt that follows a dead letter: a test that waited
		// for a dead letter then sees every attempt that led to it.
		OnAttempt: func(a uploader.AttemptInfo) {
			r.mu.Lock()
			r.attempts = append(r.attempts, a)
			pending := r.pendingDead
			r.pendingDead = nil
			r.mu.Unlock()
			for _, d := range pending {
				r.deadCh <- d
			}
		},
		OnRetry: func(p string, _ time.Duration) { r.mu.Lock(); r.retries = append(r.retries, p); r.mu.Unlock() },
		OnDelivered: func(b uploader.BatchInfo) {
			r.mu.Lock()
			r.delivered = append(r.delivered, b)
			r.mu.Unlock()
		},
		OnDeadLetter: func(b uploader.BatchInfo, reason string) {
			r.mu.Lock()
			r.dead = append(r.dead, deadCall{b, reason})
			r.pendingDead = append(r.pendingDead, deadCall{b, reason})
			r.mu.Unlock()
		},
	}
}

// waitDead waits for the next dead letter.
func (r *recorder) waitDead(t testing.TB) deadCall {
	t.Helper()
	select {
	case d := <-r.deadCh:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no batch was dead-lettered")
		return deadCall{}
	}
}

func (r *recorder) retryPaths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.retries...)
}

func (r *recorder) codes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.attempts {
		out = append(out, a.Code)
	}
	return out
}

// retryCounts renders the X-Retry-Count of each request the sink saw ("-" when absent).
func retryCounts(reqs []sink.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		if n, ok := r.RetryCount(); ok {
			out[i] = strconv.Itoa(n)
		} else {
			out[i] = "-"
		}
	}
	return out
}

// closedPort returns a loopback URL on which nothing listens.
func closedPort(t testing.TB) string { return "http://" + testutil.FreeAddr(t) + "/v1/batch" }

// startScript starts a sink playing spec.
func startScript(t testing.TB, spec string) *sink.Server { return sinktest.StartScript(t, spec) }

// settle waits until the worker has finished with every queued batch (Flush returns nil), so
// that hooks of the last attempt have run.
func settle(t testing.TB, c *uploader.Client) {
	t.Helper()
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// sinkOK starts a sink that accepts everything.
func sinkOK(t testing.TB) *sink.Server { return sinktest.Start(t, sink.Options{}) }
