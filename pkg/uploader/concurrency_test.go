package uploader_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
)

func TestClient_ConcurrentEnqueueAndClose_EveryAcceptedEventIsDelivered(t *testing.T) {
	s := sinkOK(t)
	dir := t.TempDir()
	cfg := testConfig(dir, s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 7
	c := open(t, cfg)
	var accepted atomic.Int64
	reached, once := make(chan struct{}), sync.Once{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				err := c.Enqueue(context.Background(), track(g*100000+i))
				if errors.Is(err, errs.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Enqueue: %v", err)
					return
				}
				if accepted.Add(1) == 200 {
					once.Do(func() { close(reached) })
				}
			}
		})
	}
	<-reached // producers and the worker overlap when Close comes
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()

	c2 := open(t, cfg)
	settle(t, c2)
	// At least once: every accepted event arrived; duplicates are possible, losses are not.
	if got := s.Stats().Unique; got != accepted.Load() {
		t.Errorf("sink holds %d distinct events, %d were accepted", got, accepted.Load())
	}
}
