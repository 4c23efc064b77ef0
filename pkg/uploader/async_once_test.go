package uploader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
)

// EnqueueAsync's contract: every call either returns an error or has its done called, exactly
// once, never both and never neither. Each case drives one return path, then settles the
// client (every owed done has returned) and holds every call to that rule.
func TestEnqueueAsync_ExactlyOneOfErrorOrDoneOnEveryPath(t *testing.T) {
	big := map[string]any{"type": "track", "event": "Big", "userId": "u1", "properties": map[string]any{"pad": string(make([]byte, 3000))}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		// run makes calls numbered from 0 through log and returns what each returned; it leaves
		// the client settled.
		run      func(t *testing.T, log *doneLog) []error
		wantDone error // the error every done must carry (nil: done(nil)); checked when done was called
	}{
		{"accepted call gets done(nil)", func(t *testing.T, log *doneLog) []error {
			c := open(t, testConfig(t.TempDir(), sinkOK(t).URL()+"/v1/batch"))
			err := c.EnqueueAsync(context.Background(), log.done(0), track(1))
			settle(t, c)
			return []error{err}
		}, nil},
		{"bad input returns its error", func(t *testing.T, log *doneLog) []error {
			c := open(t, testConfig(t.TempDir(), sinkOK(t).URL()+"/v1/batch"))
			err := c.EnqueueAsync(context.Background(), log.done(0), track(1), map[string]any{"type": "track"})
			settle(t, c)
			return []error{err}
		}, nil},
		{"events over queue.max_bytes return errs.ErrTooLarge", func(t *testing.T, log *doneLog) []error {
			cfg := testConfig(t.TempDir(), sinkOK(t).URL()+"/v1/batch")
			cfg.Queue.MaxBytes = 4096
			c := open(t, cfg)
			err := c.EnqueueAsync(context.Background(), log.done(0), big, big)
			settle(t, c)
			return []error{err}
		}, nil},
		{"after Close returns errs.ErrClosed", func(t *testing.T, log *doneLog) []error {
			c := open(t, testConfig(t.TempDir(), sinkOK(t).URL()+"/v1/batch"))
			if err := c.Close(waitCtx(t)); err != nil {
				t.Fatal(err)
			}
			return []error{c.EnqueueAsync(context.Background(), log.done(0), track(1))}
		}, nil},
		{"a ctx that ended before the hand-off gives an error or a done, not both", func(t *testing.T, log *doneLog) []error {
			// The store's hand-off selects between its intake and ctx: with both ready either
			// may win, so over many calls both outcomes occur.
			c := open(t, testConfig(t.TempDir(), sinkOK(t).URL()+"/v1/batch"))
			var out []error
			for i := range 200 {
				out = append(out, c.EnqueueAsync(cancelled, log.done(i), track(i)))
			}
			settle(t, c)
			return out
		}, nil},
		{"a full queue under reject answers through done", func(t *testing.T, log *doneLog) []error {
			s, release := hangingSink(t)
			c := fullQueue(t, s, "reject", 0)
			err := c.EnqueueNormalizedAsync(context.Background(), log.done(0), mustNormalize(t, 1))
			_ = log.wait(t, 0)
			release()
			settle(t, c)
			return []error{err}
		}, errs.ErrQueueFull},
		{"ctx ending while waiting for pending room returns its error", func(t *testing.T, log *doneLog) []error {
			s, release := hangingSink(t)
			c := fullQueue(t, s, "block", 1) // the first call waits for room and holds the pending bound
			first := c.EnqueueNormalizedAsync(context.Background(), log.done(0), mustNormalize(t, 1))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			second := c.EnqueueNormalizedAsync(ctx, log.done(1), mustNormalize(t, 2))
			if !errors.Is(second, context.DeadlineExceeded) {
				t.Fatalf("second call = %v, want context.DeadlineExceeded", second)
			}
			release()
			_ = log.wait(t, 0)
			settle(t, c)
			return []error{first, second}
		}, nil},
		{"Close past its deadline answers a stuck call through done with errs.ErrClosed", func(t *testing.T, log *doneLog) []error {
			s, _ := hangingSink(t)
			c := fullQueue(t, s, "block", 0) // never room: the sink holds the first batch
			err := c.EnqueueNormalizedAsync(context.Background(), log.done(0), mustNormalize(t, 1))
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_ = c.Close(ctx)
			return []error{err}
		}, errs.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newDoneLog()
			returned := tt.run(t, log)
			for i, err := range returned {
				dones := log.errs(i)
				switch {
				case err != nil && len(dones) != 0:
					t.Fatalf("call %d returned %v and its done was called too (%v)", i, err, dones)
				case err == nil && len(dones) != 1:
					t.Fatalf("call %d returned nil and its done was called %d times, want once", i, len(dones))
				case err == nil && !errors.Is(dones[0], tt.wantDone):
					t.Fatalf("call %d: done(%v), want %v", i, dones[0], tt.wantDone)
				}
			}
		})
	}
}
