package uploader_test

import (
	"encoding/base64"
	"errors"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// holdingSink is a sink that holds every request until release is called, so that a test
// knows exactly which attempts are in flight.
func holdingSink(t *testing.T) (s *sink.Server, release func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	s = sinktest.Start(t, sink.Options{Respond: func(_ sink.Request, r sink.Response) sink.Response {
		<-gate
		return r
	}})
	return s, release
}

func basic(key string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(key+":")) }

func TestClient_Reconfigure_InFlightFinishWithOldSettings_NextAttemptsUseNew(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency string
		inFlight    int // batches of 10 in flight when Reconfigure is called
	}{
		{name: "one batch at a time", concurrency: "1", inFlight: 1},
		{name: "several batches in flight", concurrency: "4", inFlight: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, release := holdingSink(t)
			cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
			cfg.Upload.WriteKey = "wk_old"
			cfg.Upload.Concurrency = tc.concurrency
			cfg.Batch.MaxEvents = 10
			c := open(t, cfg, uploader.WithClock(autoClock()))
			// The 9 events after the batches in flight are queued already: the FIFO loop has
			// leased them ahead as a batch of the old size, the dispatcher holds them back
			// until there is room. Either way they go as batches of the new size.
			enqueue(t, c, 0, 10*tc.inFlight+9)
			if err := s.WaitRequests(waitCtx(t), tc.inFlight); err != nil {
				t.Fatalf("the first %d batches did not reach the sink: %v", tc.inFlight, err)
			}

			next := cfg
			next.Upload.WriteKey = "wk_new"
			next.Batch.MaxEvents = 3
			if err := c.Reconfigure(next); err != nil {
				t.Fatalf("Reconfigure: %v", err)
			}
			enqueue(t, c, 1000, 5)
			release()
			settle(t, c)

			reqs := s.Requests()
			for i, r := range reqs {
				auth, events := r.Header.Get("Authorization"), r.EventCount
				if i < tc.inFlight {
					if auth != basic("wk_old") || events != 10 {
						t.Errorf("request %d (in flight at Reconfigure): %d events with %q; want 10 with the old key", i+1, events, auth)
					}
					continue
				}
				if auth != basic("wk_new") || events > 3 {
					t.Errorf("request %d (after Reconfigure): %d events with %q; want at most 3 with the new key", i+1, events, auth)
				}
			}
			if got, want := s.Stats().Unique, int64(10*tc.inFlight+9+5); got != want {
				t.Errorf("sink holds %d distinct events, want %d", got, want)
			}
		})
	}
}

func TestClient_Reconfigure_ConcurrencyMovesBetweenOneAndSeveral(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Upload.Concurrency = "1"
	cfg.Batch.MaxEvents = 5
	c := open(t, cfg, uploader.WithClock(autoClock()))
	total := 0
	for _, conc := range []string{"4", "auto", "1", "2"} {
		next := cfg
		next.Upload.Concurrency = conc
		if err := c.Reconfigure(next); err != nil {
			t.Fatalf("Reconfigure to %s: %v", conc, err)
		}
		enqueue(t, c, total, 50)
		total += 50
		settle(t, c)
		if lim := c.Stats().Upload.ConcurrencyLimit; conc == "1" && lim != 1 {
			t.Errorf("upload.concurrency 1: limit %d, want 1", lim)
		}
	}
	if got := s.Stats().Unique; got != int64(total) {
		t.Errorf("sink holds %d distinct events, want %d", got, total)
	}
}

func TestClient_Reconfigure_InvalidConfig_ChangesNothing(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 4
	c := open(t, cfg, uploader.WithClock(autoClock()))
	bad := cfg
	bad.Batch.MaxEvents = 2
	bad.Upload.Concurrency = "many"
	err := c.Reconfigure(bad)
	var ke *errs.KeyError
	if !errors.Is(err, errs.ErrInvalidConfig) || !errors.As(err, &ke) || ke.Key != "upload.concurrency" {
		t.Fatalf("Reconfigure with upload.concurrency many: %v; want the invalid key named", err)
	}
	enqueue(t, c, 0, 8)
	settle(t, c)
	for i, r := range s.Requests() {
		if r.EventCount != 4 {
			t.Errorf("request %d: %d events; the rejected batch.max_events 2 must not apply (want 4)", i+1, r.EventCount)
		}
	}
}

func TestClient_Reconfigure_AfterClose_ReturnsErrClosed(t *testing.T) {
	cfg := testConfig(t.TempDir(), closedPort(t))
	c := open(t, cfg)
	if err := c.Close(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconfigure(cfg); !errors.Is(err, errs.ErrClosed) {
		t.Fatalf("Reconfigure after Close: %v, want errs.ErrClosed", err)
	}
}
