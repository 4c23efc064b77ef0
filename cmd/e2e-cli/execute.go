package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/outboxhq/outbox/internal/redact"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// closeGrace bounds Close after a drained run, which returns at once in practice.
const closeGrace = 2 * time.Second

// execute runs the sequences through an uploader on a fresh temporary data directory, waits
// until every batch was delivered or dead-lettered (or the timeout ends the run), and reports.
func execute(ctx context.Context, in *input, timeout time.Duration, log *slog.Logger) result {
	dir, err := os.MkdirTemp("", "outbox-e2e-")
	if err != nil {
		return result{Error: fmt.Sprintf("create the temporary data directory: %v", err)}
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("remove the temporary data directory", "dir", dir, "error", err)
		}
	}()

	t := &tally{}
	c, err := segment.Open(uploaderConfig(in, dir), uploader.WithLogger(log), uploader.WithHooks(t.hooks()))
	if err != nil {
		return result{Error: fmt.Sprintf("open the uploader: %v", err)}
	}
	log.Info("e2e run", "endpoint", redacted(in.Endpoint), "sequences", len(in.Sequences), "timeout", timeout)

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var problems []string
	badEvents, err := enqueueSequences(runCtx, c, in.Sequences, log)
	problems = append(problems, badEvents...)
	if err == nil {
		err = drain(runCtx, c)
	}
	if err != nil {
		err = explainStop(runCtx, err, timeout)
		if left := c.Stats().Queue.Events; left > 0 {
			err = fmt.Errorf("%w (%d event(s) not delivered)", err, left)
		}
		problems = append(problems, err.Error())
	}

	// A run that gave up stops at once (the attempt in flight is cancelled); a drained one
	// closes within closeGrace (at once in practice: nothing is left to upload).
	closeCtx, cancelClose := context.WithTimeout(context.Background(), closeGrace)
	defer cancelClose()
	if err != nil {
		cancelClose()
	}
	if err := c.Close(closeCtx); err != nil {
		problems = append(problems, fmt.Sprintf("close the uploader: %v", err))
	}
	if dead := t.deadSummary(); dead != "" {
		problems = append(problems, dead)
	}

	res := result{Success: len(problems) == 0, SentBatches: t.sentBatches()}
	if !res.Success {
		res.Error = strings.Join(problems, "; ")
	}
	log.Info("e2e result", "success", res.Success, "sent_batches", res.SentBatches, "error", res.Error)
	return res
}

// uploaderConfig maps the input onto the uploader's configuration with Segment's SDK semantics:
// a rejected batch is dead-lettered whole (one request), not bisected, a refused write key
// (401, 403) is one request and a failed send rather than a pause, and batches are delivered
// one at a time in intake order, as the suite's checks of order expect.
func uploaderConfig(in *input, dir string) uploader.Config {
	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	cfg.Upload.Endpoint = in.Endpoint
	cfg.Upload.WriteKey = in.WriteKey
	cfg.Upload.SplitRejected = false
	cfg.Upload.OnAuthFailure = uploader.OnAuthFailureDeadLetter
	cfg.Upload.Concurrency = "1"
	// The directory is deleted when the run ends: an fsync per commit would buy nothing.
	cfg.Queue.Sync = "none"
	if v := in.Config.FlushAt; v != nil {
		cfg.Batch.MaxEvents = *v
	}
	if v := in.Config.FlushInterval; v != nil {
		cfg.Batch.Interval = *v
	}
	if v := in.Config.MaxRetries; v != nil {
		cfg.Retry.MaxRetries = *v
	}
	if v := in.Config.Timeout; v != nil {
		cfg.Upload.Timeout = *v
	}
	return cfg
}

// enqueueSequences sleeps each sequence's delay, then enqueues its events one by one, in order.
// An event the uploader refuses (missing userId, bad timestamp…) is reported in badEvents and
// the run goes on; err is set when the run cannot go on (deadline, interrupt, store failure).
func enqueueSequences(ctx context.Context, c *uploader.Client, seqs []sequence, log *slog.Logger) (badEvents []string, err error) {
	for i, s := range seqs {
		if s.Delay > 0 {
			log.Debug("sequence delay", "sequence", i, "delay", s.Delay)
			if err := sleep(ctx, s.Delay); err != nil {
				return badEvents, fmt.Errorf("sequence %d: delay: %w", i, err)
			}
		}
		for j, ev := range s.Events {
			err := c.Enqueue(ctx, ev)
			var ee *event.Error
			switch {
			case err == nil:
			case errors.As(err, &ee):
				msg := fmt.Sprintf("sequences[%d].events[%d]: %s", i, j, eventReason(ee))
				log.Warn("event refused", "sequence", i, "event", j, "error", eventReason(ee))
				badEvents = append(badEvents, msg)
			default:
				return badEvents, fmt.Errorf("sequences[%d].events[%d]: %w", i, j, err)
			}
		}
	}
	return badEvents, nil
}

// eventReason is an *event.Error without its "event N: " prefix (the index is ours to give).
func eventReason(e *event.Error) string {
	if e.Field != "" {
		return e.Field + ": " + e.Reason
	}
	return e.Reason
}

// redacted hides the endpoint's userinfo and query values, if any.
func redacted(endpoint string) string { return redact.URL(endpoint) }

// explainStop turns an error caused by the run's context into what happened to the run.
func explainStop(ctx context.Context, err error, timeout time.Duration) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: gave up after --timeout %s (%w)", errDeadline, timeout, err)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}
