package uploader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/queue"
)

// Client is the embeddable uploader: a durable queue on a data directory and the one worker
// that drains it. It is safe for concurrent use.
type Client struct {
	cfg        Config
	q          *queue.Queue
	hc         *http.Client
	rb         *requestBuilder
	enc        *encoder
	classify   ClassifyFunc
	clock      budget.Clock
	rand       budget.RandFunc
	log        *slog.Logger
	hooks      Hooks
	evOpts     event.Options
	leaseBytes int // batch.max_bytes minus the envelope and commas: what Lease may take

	wake      chan struct{} // buffered 1: new events, Flush, Close → worker
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the worker has returned
	runCtx    context.Context
	cancelRun context.CancelFunc
	flushing  atomic.Int32 // Flush calls in progress: ignore batch.interval
	intake    sync.WaitGroup
	ackr      *acker        // commits the worker's acks (pipeline.go)
	acks      []*pendingAck // outstanding acks, oldest first; worker goroutine only
	ackFault  func() error  // options.ackFault
	async     asyncState    // EnqueueAsync's pending calls (async.go)

	mu       sync.Mutex // guards the fields below
	closed   bool
	closeCtx context.Context
	state    workerState
	changed  chan struct{} // closed and replaced when state changes
	counters Counters
}

// Open validates cfg (after filling zero values with defaults), opens the queue in
// cfg.DataDir and starts the worker. Close must be called to stop it and release the data
// directory.
func Open(cfg Config, opts ...Option) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{
		cfg:      cfg,
		rb:       newRequestBuilder(cfg.Upload, o.hook),
		enc:      newEncoder(cfg.Upload.Gzip),
		classify: o.classify,
		clock:    o.clock,
		rand:     o.rand,
		log:      o.logger,
		hooks:    o.hooks,
		ackFault: o.ackFault,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
	}
	if c.classify == nil {
		c.classify = Classify
	}
	if c.clock == nil {
		c.clock = budget.System
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.evOpts = event.Options{Limits: event.Limits{MaxEventBytes: cfg.Limits.MaxEventBytes}}
	c.leaseBytes = max(cfg.Batch.MaxBytes-envelopeBytes-cfg.Batch.MaxEvents, cfg.Limits.MaxEventBytes)
	hc, err := buildHTTPClient(cfg.Upload, o)
	if err != nil {
		return nil, err
	}
	c.hc = hc
	q, err := queue.Open(cfg.DataDir, c.queueConfig())
	if err != nil {
		return nil, fmt.Errorf("uploader: %w", err) // queue.Open says "open queue: …"
	}
	c.q = q
	c.runCtx, c.cancelRun = context.WithCancel(context.Background())
	c.state.Path = PathNone
	go c.forwardNotify()
	go c.run()
	return c, nil
}

// buildHTTPClient applies WithHTTPClient/WithTransport and the redirect policy.
func buildHTTPClient(cfg UploadConfig, o options) (*http.Client, error) {
	var hc *http.Client
	switch {
	case o.httpClient != nil:
		cp := *o.httpClient
		hc = &cp
	case o.transport != nil:
		hc = &http.Client{Transport: o.transport}
	default:
		var err error
		if hc, err = newHTTPClient(cfg); err != nil {
			return nil, err
		}
	}
	hc.CheckRedirect = checkRedirect
	return hc, nil
}

func (c *Client) queueConfig() queue.Config {
	return queue.Config{
		MaxBytes:     c.cfg.Queue.MaxBytes,
		WhenFull:     queue.WhenFull(c.cfg.Queue.WhenFull),
		NoSync:       c.cfg.Queue.Sync == "none",
		DeadMaxBytes: c.cfg.Dead.MaxBytes,
		Logger:       c.log,
		OnCommit:     c.hooks.OnCommit,
		OnDrop:       c.hooks.OnDrop,
		Now:          c.clock.Now,
	}
}

// Enqueue validates and normalises events (SPEC section 2) and stores them durably; it
// returns after the commit (and fsync with queue.sync: always). Each event is a
// map[string]any (or any value encoding/json turns into an object), a []byte, a string or a
// json.RawMessage of one JSON object. It is all or nothing: one bad event (an *event.Error
// with its Index) stores none. After Close it returns ErrClosed. When the queue is full it
// returns an error matching ErrQueueFull with queue.when_full: reject, waits for room or ctx
// with block, and evicts the oldest events (counted in Stats().Queue.Dropped) with drop_oldest.
// Events that alone exceed queue.max_bytes get ErrTooLarge under every policy.
func (c *Client) Enqueue(ctx context.Context, events ...any) error {
	norm, err := c.normalize(events)
	if err != nil {
		return err
	}
	return c.EnqueueNormalized(ctx, norm...)
}

// normalize validates and normalises Enqueue's arguments; the first bad one is an
// *event.Error with its index.
func (c *Client) normalize(events []any) ([][]byte, error) {
	norm := make([][]byte, len(events))
	for i, ev := range events {
		raw, err := rawEvent(ev)
		if err != nil {
			return nil, &event.Error{Index: i, Reason: err.Error()}
		}
		n, err := event.Normalize(raw, "", c.evOpts)
		if err != nil {
			return nil, withIndex(err, i)
		}
		norm[i] = n
	}
	return norm, nil
}

// EnqueueNormalized stores events that are already normalised (by event.Normalize or
// event.ParseBatch, as the agent does); it does not validate them again.
func (c *Client) EnqueueNormalized(ctx context.Context, events ...[]byte) error {
	if len(events) == 0 {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.intake.Add(1)
	c.mu.Unlock()
	defer c.intake.Done()
	if err := c.q.Enqueue(ctx, events...); err != nil {
		return fmt.Errorf("uploader: enqueue: %w", err)
	}
	c.mu.Lock()
	c.counters.EventsEnqueued += int64(len(events))
	c.mu.Unlock()
	if c.hooks.OnEnqueued != nil {
		c.hooks.OnEnqueued(len(events))
	}
	c.signal()
	return nil
}

// rawEvent turns one Enqueue argument into JSON bytes.
func rawEvent(ev any) ([]byte, error) {
	switch v := ev.(type) {
	case []byte:
		return v, nil
	case json.RawMessage:
		return v, nil
	case string:
		return []byte(v), nil
	case nil:
		return nil, fmt.Errorf("event is nil")
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode event: %w", err)
		}
		return b, nil
	}
}

// withIndex sets the index of an *event.Error from Normalize to the argument's position.
func withIndex(err error, i int) error {
	var e *event.Error
	if errors.As(err, &e) {
		cp := *e
		cp.Index = i
		return &cp
	}
	return fmt.Errorf("event %d: %w", i, err)
}

// signal wakes the worker if it is idle or waiting for the batch interval.
func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// forwardNotify turns the queue's arrival signal (events enqueued by anyone, dead letters
// replayed) into worker wake-ups until Close.
func (c *Client) forwardNotify() {
	for {
		select {
		case <-c.q.Notify():
			c.signal()
		case <-c.stop:
			return
		}
	}
}

// Queue returns the underlying queue, for dead-letter management (DeadList, DeadGet,
// DeadReplay, DeadPurge) and inspection. Do not Lease, Ack or Close it: the worker owns the
// consumer side and Close closes it.
func (c *Client) Queue() *queue.Queue { return c.q }

// Flush waits until every accepted EnqueueAsync call's done has returned, then asks the worker
// to upload now, ignoring batch.interval, and waits. It returns nil
// when the queue is empty, ctx's error when ctx ends first, a *WaitingError when the worker
// waits on a retry budget (the queue will not empty before its Until), the *HookError or
// *ConfigError that keeps the head batch from being sent, or ErrClosed after Close.
func (c *Client) Flush(ctx context.Context) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := c.waitAsync(ctx); err != nil { // every EnqueueAsync before Flush is answered first
		return err
	}
	c.flushing.Add(1)
	defer c.flushing.Add(-1)
	c.signal()
	for {
		c.mu.Lock()
		st, ch := c.state, c.changed
		c.mu.Unlock()
		switch {
		case st.Path != PathNone:
			return &WaitingError{Path: st.Path, Until: st.WaitingUntil, Err: st.WaitErr}
		case st.Paused != nil:
			return st.Paused
		case !st.Busy && c.queued() == 0:
			return nil
		}
		select {
		case <-ch:
		case <-c.done:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops intake (Enqueue and EnqueueAsync return ErrClosed), waits until every pending
// EnqueueAsync call is committed (or ctx ends), wakes the worker out of any wait, lets it
// upload until the queue is empty or ctx ends, then closes the store. It returns only once
// every accepted EnqueueAsync call's done has been called and has returned: calls still
// pending when ctx ended get ErrClosed. A retry wait longer
// than the time left before ctx's deadline is not started: that batch stays on disk with its
// retry state and goes first at the next Open. An attempt in flight when ctx ends is
// cancelled, so Close returns within ctx's deadline plus a few milliseconds whatever the
// collector does. Events left on disk are not an error. A second Close returns ErrClosed.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed, c.closeCtx = true, ctx
	c.mu.Unlock()
	c.closeAsync()
	_ = c.waitAsync(ctx) // pending EnqueueAsync events are committed before the last upload pass
	close(c.stop)        // cuts retry waits and pauses short
	c.signal()           // cuts an interval wait short
	stopCancel := context.AfterFunc(ctx, c.cancelRun)
	defer stopCancel()
	<-c.done
	c.cancelRun()
	intakeDone := make(chan struct{})
	go func() { c.intake.Wait(); close(intakeDone) }()
	select {
	case <-intakeDone:
	case <-ctx.Done():
	}
	if n := c.queued(); n > 0 {
		c.log.Info("events left on disk for the next start", "events", n)
	}
	err := c.q.Close()
	c.stopAsync() // the closed queue has answered every call it held: no done is owed after this
	if err != nil {
		return fmt.Errorf("uploader: close queue: %w", err)
	}
	return nil
}

// stopping reports whether Close was called.
func (c *Client) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// shutdownCtx returns Close's ctx; valid once stopping() is true.
func (c *Client) shutdownCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeCtx
}

// setState applies f to the worker state and wakes Flush callers.
func (c *Client) setState(f func(*workerState)) {
	c.mu.Lock()
	f(&c.state)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// now returns the client clock's time.
func (c *Client) now() time.Time { return c.clock.Now() }

// queued returns how many events are queued (from memory; no file stat).
func (c *Client) queued() int64 {
	n, _, _ := c.q.Pending()
	return n
}
