package uploader

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

func TestProbeAuthNow_APausedUploaderProbesAtOnce_AndDoesNothingWhenNotPaused(t *testing.T) {
	var accept atomic.Bool
	s := sinktest.Start(t, sink.Options{Respond: func(_ sink.Request, scripted sink.Response) sink.Response {
		if accept.Load() {
			return scripted
		}
		return sink.Response{Status: 401}
	}})
	clk := budgettest.New(time.Time{})
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Upload.Endpoint = s.URL() + "/v1/batch"
	cfg.Upload.WriteKey = "wk_old"
	cfg.Queue.Sync = "none"
	c, err := openHTTP(cfg, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_ = c.Close(ctx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c.probeAuthNow() // not paused: nothing happens
	if err := c.Enqueue(ctx, map[string]any{"type": "track", "event": "E", "userId": "u"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err == nil { // wait until the first refusal: Flush says delivery is paused
		t.Fatal("Flush = nil, want the pause on refused credentials")
	}
	if err := clk.BlockUntil(ctx, 1); err != nil { // the head waits for its probe, a minute away
		t.Fatal(err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1 before the probe", n)
	}

	// The credentials were fixed (a reload): the probe goes now, without moving the clock.
	accept.Store(true)
	c.probeAuthNow()
	if err := s.WaitEvents(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for c.Stats().AuthPause.Paused { // the 200 is on its way back
		if ctx.Err() != nil {
			t.Fatal("the accepted probe did not end the pause")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("Flush after the probe: %v", err)
	}
	if st := c.Stats(); st.AuthPause.Paused || st.Queue.Events != 0 || st.Dead.Batches != 0 || !clk.Now().Equal(budgettest.Epoch) {
		t.Errorf("after probeAuthNow: paused %v, queued %d, dead %d, clock moved %v; want delivered at once",
			st.AuthPause.Paused, st.Queue.Events, st.Dead.Batches, clk.Now().Sub(budgettest.Epoch))
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2 (the refusal and the probe)", n)
	}
}
