package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// trackEvent is a Segment track event as an application holds it before handing it to an
// SDK: typed fields and maps. The peer comparison's clients decode the events file into it
// before their clock starts and json.Marshal each event on the measured path, as an app does.
// bench/peers has the same type.
type trackEvent struct {
	Type        string         `json:"type"`
	Event       string         `json:"event"`
	UserID      string         `json:"userId"`
	AnonymousID string         `json:"anonymousId"`
	MessageID   string         `json:"messageId"`
	Timestamp   time.Time      `json:"timestamp"`
	Properties  map[string]any `json:"properties"`
	Context     map[string]any `json:"context"`
}

// childResult is what a client child process prints as its last line: the events it handed
// over and the span from its first event to the last one's delivery, and the CPU (user+sys
// from getrusage) it used over that span.
type childResult struct {
	Events    int64 `json:"events"`
	ElapsedNS int64 `json:"elapsed_ns"`
	CPUNS     int64 `json:"cpu_ns"`
	Commits   int64 `json:"commits,omitempty"`
	IntakeNS  int64 `json:"intake_ns,omitempty"` // first event to the last call returning
	CommitNS  int64 `json:"commit_ns,omitempty"` // time spent in store commits (the writer's busy time)
	Failed    int64 `json:"failed,omitempty"`    // posthog: events it reported giving up on
}

// asMap is the event as an app that builds Segment events as maps holds it: what it passes
// to EnqueueAsync or Enqueue, for outbox to serialise (as posthog-go serialises its Capture).
func (e *trackEvent) asMap() map[string]any {
	return map[string]any{
		"type": e.Type, "event": e.Event, "userId": e.UserID, "anonymousId": e.AnonymousID,
		"messageId": e.MessageID, "timestamp": e.Timestamp, "properties": e.Properties, "context": e.Context,
	}
}

// readEvents decodes the events file (one JSON event per line).
func readEvents(path string) ([]trackEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []trackEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e trackEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, len(evs)+1, err)
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}

// selfCPU is the user+sys CPU time this process has used (getrusage).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runChild is `outbox-bench -child async|async-bytes|enqueue64`: one outbox client in its own
// process, sending the events file to -child-endpoint. async calls EnqueueAsync from one
// goroutine with each event as the app's map, which outbox serialises; async-bytes does the
// same with each event json.Marshal'ed by the app first; enqueue64 calls Enqueue with the maps
// from 64 goroutines. All then Flush (every done called, the queue uploaded and acknowledged)
// before the clock stops. It prints "START" when its clock starts, then its childResult.
func runChild(ctx context.Context, o options, stdout io.Writer) error {
	evs, err := readEvents(o.childEvents)
	if err != nil {
		return err
	}
	maps := make([]map[string]any, len(evs)) // built before the clock, as posthog-go's Captures are
	for i := range evs {
		maps[i] = evs[i].asMap()
	}
	var commits, commitNS atomic.Int64
	c, err := openClient(o.childDir, o.childEndpoint, uploader.WithHooks(uploader.Hooks{
		OnCommit: func(_ int, d time.Duration) { commits.Add(1); commitNS.Add(d.Nanoseconds()) },
	}))
	if err != nil {
		return err
	}
	defer closeClient(c)
	var failed atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if failed.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	stopProfile, err := startCPUProfile(o.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	fmt.Fprintln(stdout, "START")
	cpu0, start := selfCPU(), time.Now()
	done := func(err error) {
		if err != nil {
			fail(err)
		}
	}
	switch o.child {
	case "async":
		for _, m := range maps {
			if err := c.EnqueueAsync(ctx, done, m); err != nil {
				return err
			}
		}
	case "async-bytes":
		for i := range evs {
			b, err := json.Marshal(&evs[i])
			if err != nil {
				return err
			}
			if err := c.EnqueueAsync(ctx, done, b); err != nil {
				return err
			}
		}
	case "enqueue64":
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(maps) || ctx.Err() != nil {
						return
					}
					if err := c.Enqueue(ctx, maps[i]); err != nil {
						fail(err)
						return
					}
				}
			})
		}
		wg.Wait()
	default:
		return fmt.Errorf("unknown client %q (want async, async-bytes or enqueue64)", o.child)
	}
	intake := time.Since(start)
	if err := flushAll(ctx, c, o.drainLimit); err != nil {
		return err
	}
	elapsed, cpu := time.Since(start), selfCPU()-cpu0
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d calls failed, the first: %v", n, firstErr.Load())
	}
	return json.NewEncoder(stdout).Encode(childResult{
		Events: int64(len(evs)), ElapsedNS: elapsed.Nanoseconds(), CPUNS: cpu.Nanoseconds(), Commits: commits.Load(),
		IntakeNS: intake.Nanoseconds(), CommitNS: commitNS.Load(),
	})
}

// flushAll flushes until the queue is empty, within limit. Against a failing collector Flush
// returns a WaitingError while every batch in flight waits out a backoff or a Retry-After:
// the queue is not empty yet, so it flushes again once the wait has passed.
func flushAll(ctx context.Context, c *uploader.Client, limit time.Duration) error {
	fctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		err := c.Flush(fctx)
		var we *uploader.WaitingError
		if !errors.As(err, &we) {
			if err != nil {
				return fmt.Errorf("flush: %w", err)
			}
			return nil
		}
		pause := 10 * time.Millisecond
		if d := time.Until(we.Until); d > pause {
			pause = d
		}
		select {
		case <-time.After(pause):
		case <-fctx.Done():
			return fmt.Errorf("flush: %w", fctx.Err())
		}
	}
}
