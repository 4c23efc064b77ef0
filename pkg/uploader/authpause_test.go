package uploader_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// refusingCollector is a loopback sink that answers status to every batch until accept is
// set. The first barrier requests are held until that many have arrived, so that they are
// all in flight when the first refusal comes back.
type refusingCollector struct {
	*sink.Server
	accept atomic.Bool
}

func startRefusing(t *testing.T, status, barrier int) *refusingCollector {
	t.Helper()
	rc := &refusingCollector{}
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	rc.Server = sinktest.Start(t, sink.Options{Respond: func(_ sink.Request, scripted sink.Response) sink.Response {
		if rc.accept.Load() {
			return scripted
		}
		mu.Lock()
		arrived++
		if arrived == barrier {
			close(all)
		}
		first := arrived <= barrier
		mu.Unlock()
		if first {
			select {
			case <-all:
			case <-time.After(5 * time.Second):
			}
		}
		return sink.Response{Status: status}
	}})
	return rc
}

// eventually waits, bounded, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAuthPause_RefusedCredentials_KeepTheQueue_ProbeOncePerMinute_AndResumeOnSuccess(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		concurrency string
		inFlight    int // batches in flight when the refusals come back
	}{
		{"401 one batch at a time", 401, "1", 1},
		{"401 four batches in flight", 401, "4", 4},
		{"403 four batches in flight", 403, "4", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const batches, perBatch = 6, 10
			s := startRefusing(t, tc.status, tc.inFlight)
			clk := budgettest.New(time.Time{})
			logs := &syncBuffer{}
			cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
			cfg.Upload.WriteKey = "wk_secret_value"
			cfg.Upload.Concurrency = tc.concurrency
			cfg.Batch.MaxEvents = perBatch
			rec := newRecorder()
			c := open(t, cfg, uploader.WithClock(clk), uploader.WithHooks(rec.hooks()),
				uploader.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
			enqueue(t, c, 0, batches*perBatch)

			// Every batch in flight comes back refused; the head waits for its probe.
			ctx := waitCtx(t)
			if err := s.WaitRequests(ctx, tc.inFlight); err != nil {
				t.Fatal(err)
			}
			eventually(t, "every request in flight was refused", func() bool {
				return c.Stats().Counters.AuthRefusals == int64(tc.inFlight)
			})
			if err := clk.BlockUntil(ctx, 1); err != nil {
				t.Fatal(err)
			}
			requests := len(s.Requests())
			if requests != tc.inFlight {
				t.Fatalf("requests before the first probe = %d, want the %d in flight", requests, tc.inFlight)
			}
			st := c.Stats()
			if !st.AuthPause.Paused || st.AuthPause.Code != fmt.Sprint(tc.status) || st.AuthPause.Key != "upload.write_key" ||
				!st.AuthPause.NextProbe.Equal(st.AuthPause.Since.Add(time.Minute)) {
				t.Errorf("AuthPause = %+v, want paused on %d, upload.write_key to fix, next probe a minute after", st.AuthPause, tc.status)
			}
			if err := c.Flush(ctx); !errors.Is(err, uploader.ErrAuthRefused) || !strings.Contains(err.Error(), "fix upload.write_key") {
				t.Errorf("Flush = %v, want ErrAuthRefused saying what to fix", err)
			}
			// Intake goes on while delivery is paused.
			enqueue(t, c, batches*perBatch, perBatch)

			// Half a probe period: nothing is sent. Each full period: the head alone, once.
			clk.Advance(30 * time.Second)
			if n := len(s.Requests()); n != requests {
				t.Errorf("requests half a minute into the pause = %d, want %d", n, requests)
			}
			for probe := 1; probe <= 3; probe++ {
				clk.Advance(30 * time.Second)
				if err := s.WaitRequests(ctx, requests+1); err != nil {
					t.Fatal(err)
				}
				requests++
				eventually(t, "the probe was refused", func() bool {
					return c.Stats().Counters.AuthRefusals == int64(requests)
				})
				if err := clk.BlockUntil(ctx, 1); err != nil {
					t.Fatal(err)
				}
				if n := len(s.Requests()); n != requests {
					t.Fatalf("requests after probe %d = %d, want %d (one probe a minute)", probe, n, requests)
				}
				clk.Advance(30 * time.Second)
			}
			st = c.Stats()
			if st.Dead.Batches != 0 || st.Queue.Events != (batches+1)*perBatch || st.Counters.RetriesBackoff != 0 ||
				st.Counters.RetriesRateLimit != 0 || st.Retry.Attempt != 0 {
				t.Errorf("after the probes: dead %d, queued %d, retries %d+%d, attempt %d; want nothing dead, every event queued, no budget spent",
					st.Dead.Batches, st.Queue.Events, st.Counters.RetriesBackoff, st.Counters.RetriesRateLimit, st.Retry.Attempt)
			}
			if paths := rec.retryPaths(); len(paths) != 0 {
				t.Errorf("retry waits = %v, want none", paths)
			}

			// The collector accepts us again: the next probe resumes everything.
			s.accept.Store(true)
			clk.Advance(30 * time.Second)
			if err := s.WaitEvents(ctx, (batches+1)*perBatch); err != nil {
				t.Fatal(err)
			}
			settle(t, c)
			st = c.Stats()
			if st.AuthPause.Paused || st.Dead.Batches != 0 || st.Queue.Events != 0 || s.Duplicates() != 0 {
				t.Errorf("after the fix: AuthPause %+v, dead %d, queued %d, duplicates %d; want every event delivered once",
					st.AuthPause, st.Dead.Batches, st.Queue.Events, s.Duplicates())
			}
			for i, r := range s.Requests() {
				if _, ok := r.RetryCount(); ok {
					t.Errorf("request %d carries X-Retry-Count: the pause counts no retry", i)
				}
			}
			out := logs.String()
			if n := strings.Count(out, "refuses our credentials"); n < 1 || n > 4 {
				t.Errorf("warn lines = %d, want one at the start and at most one per probe:\n%s", n, out)
			}
			if !strings.Contains(out, fmt.Sprintf("the collector refuses our credentials (%d): fix upload.write_key and reload", tc.status)) ||
				!strings.Contains(out, "delivery resumes") {
				t.Errorf("logs do not say what to fix and that delivery resumed:\n%s", out)
			}
			if strings.Contains(out, "wk_secret_value") {
				t.Error("the write key is in the logs")
			}
		})
	}
}

func TestAuthPause_OnAuthFailureDeadLetter_DeadLettersEveryRefusedBatch(t *testing.T) {
	for _, concurrency := range []string{"1", "4"} {
		t.Run("concurrency "+concurrency, func(t *testing.T) {
			const batches, perBatch = 5, 10
			s := startScript(t, "401:default")
			cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
			cfg.Upload.OnAuthFailure = uploader.OnAuthFailureDeadLetter
			cfg.Upload.Concurrency = concurrency
			cfg.Batch.MaxEvents = perBatch
			c := open(t, cfg, uploader.WithClock(autoClock()))
			enqueue(t, c, 0, batches*perBatch)
			settle(t, c)
			st := c.Stats()
			if st.Dead.Batches != batches || st.Queue.Events != 0 || len(s.Requests()) != batches || st.AuthPause.Paused {
				t.Errorf("dead %d, queued %d, requests %d, paused %v; want each batch dead-lettered on its one 401",
					st.Dead.Batches, st.Queue.Events, len(s.Requests()), st.AuthPause.Paused)
			}
		})
	}
}

func TestAuthPause_Close_LeavesTheQueueOnDiskWithoutWaitingForTheProbe(t *testing.T) {
	s := startScript(t, "401:default")
	clk := budgettest.New(time.Time{})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Upload.Concurrency = "4"
	cfg.Batch.MaxEvents = 10
	c := open(t, cfg, uploader.WithClock(clk))
	enqueue(t, c, 0, 40)
	ctx := waitCtx(t)
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.Close(closeCtx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %s: it waited for a probe a minute away", took)
	}
	off, err := uploader.OpenOffline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if st := off.Stats(); st.Queue.Events != 40 || st.Dead.Batches != 0 {
		t.Errorf("after Close: queued %d, dead %d; want all 40 kept", st.Queue.Events, st.Dead.Batches)
	}
}
