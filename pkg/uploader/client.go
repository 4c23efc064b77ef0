package uploader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// Client is the embeddable uploader: a durable queue on a data directory and the one worker
// that drains it to a destination. The Client is the intake (Enqueue) and the lifecycle (Open,
// Flush, Close, Stats); the worker (worker.go) is the consumer side. It is safe for concurrent
// use.
type Client struct {
	cfg     Config
	q       *queue.Queue
	w       *worker
	creds   credentialSetter // the destination Open built, when a reload can change its credentials
	sources *sources         // the configured and relay sources (sources.go)
	board   *board
	log     *slog.Logger
	hooks   Hooks
	evOpts  event.Options

	mu     sync.Mutex // guards closed and async
	closed bool       // Close has begun: Enqueue, EnqueueAsync and Flush return errs.ErrClosed
	async  asyncState // EnqueueAsync's pending calls (async.go)

	// priv is what intake applies of the privacy section (privacy.go); privMu serialises its
	// changes: Forget, Unsuppress, ReloadSuppressList, Reconfigure.
	priv   atomic.Pointer[privacy]
	privMu sync.Mutex

	reconf      sync.Mutex        // one Reconfigure at a time; guards the fields below
	credentials string            // upload.write_key in use
	headers     map[string]string // upload.headers in use
}

// Open validates cfg (after filling zero values with defaults), opens the queue in
// cfg.DataDir and starts the worker. Close must be called to stop it and release the data
// directory.
func Open(cfg Config, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		if o.destination != nil {
			_ = o.destination.Close()
		}
		return nil, err
	}
	if o.clock == nil {
		o.clock = budget.System
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	priv, err := cfg.Privacy.load() // validated: only a file changed since can fail
	if err != nil {
		if o.destination != nil {
			_ = o.destination.Close()
		}
		return nil, err
	}
	srcs := newSources(cfg.Sources)
	if deliver := o.hooks.OnDelivered; true {
		o.hooks.OnDelivered = func(b BatchInfo) { // every source's last delivery, for Stats
			srcs.delivered(b.Source, o.clock.Now())
			if deliver != nil {
				deliver(b)
			}
		}
	}
	dest := o.destination
	var creds credentialSetter
	if dest == nil {
		if o.destFunc == nil {
			return nil, errNoDestination
		}
		warnMissingWriteKey(o.logger, cfg.Upload, o.hook)
		var err error
		if dest, err = o.destFunc(DestinationParams{Upload: cfg.Upload, Routes: srcs.route, Clock: o.clock, Logger: o.logger,
			HTTPClient: o.httpClient, Transport: o.transport, Hook: o.hook, Classify: o.classify}); err != nil {
			return nil, err
		}
		creds, _ = dest.(credentialSetter)
	}
	c := &Client{
		cfg:    cfg,
		board:  newBoard(),
		log:    o.logger,
		hooks:  o.hooks,
		evOpts: event.Options{Limits: event.Limits{MaxEventBytes: cfg.Limits.MaxEventBytes}},

		creds:       creds,
		sources:     srcs,
		credentials: cfg.Upload.WriteKey,
		headers:     maps.Clone(cfg.Upload.Headers),
	}
	c.priv.Store(priv)
	qc, err := queueConfig(cfg, o)
	if err != nil {
		_ = dest.Close()
		return nil, err
	}
	q, err := queue.Open(cfg.DataDir, qc)
	if err != nil {
		_ = dest.Close()
		return nil, fmt.Errorf("uploader: %w", err) // queue.Open says "open queue: …"
	}
	c.q = q
	if err := srcs.load(q); err != nil {
		_ = q.Close()
		_ = dest.Close()
		return nil, fmt.Errorf("uploader: %w", err)
	}
	c.w = &worker{
		q:        q,
		dest:     dest,
		clock:    o.clock,
		rand:     o.rand,
		log:      o.logger,
		hooks:    o.hooks,
		board:    c.board,
		ackFault: o.ackFault,
	}
	c.w.live.Store(newSettings(cfg))
	c.w.prep, _ = dest.(delivery.PreparingDestination)
	// The gate admits every attempt, in every mode (gate.go).
	bound := destinationBound(dest)
	var endpoint func(string) string // one limit for a destination given whole (Kafka's)
	if o.destination == nil {        // built with the sources' routes: a limit per endpoint
		endpoint = srcs.endpointOf(cfg.Upload.Endpoint) // sources sharing an endpoint share its limit
	}
	c.w.gate = newGate(cfg.Upload, bound, o.clock, c.w.probePace, endpoint)
	c.w.sources = srcs
	c.w.start()
	return c, nil
}

// queueConfig is the queue's part of cfg, with the keys of queue.encryption.key_files read.
func queueConfig(cfg Config, o options) (queue.Config, error) {
	var now func() time.Time // nil: the queue's own default
	if o.clock != nil {
		now = o.clock.Now
	}
	keys, err := keyring.Load(cfg.Queue.Encryption.KeyFiles)
	if err != nil {
		return queue.Config{}, fmt.Errorf("uploader: %w: %w", errs.ErrInvalidConfig, &errs.KeyError{Key: "queue.encryption.key_files", Err: err})
	}
	return queue.Config{
		Keys:           keys,
		MaxBytes:       cfg.Queue.MaxBytes,
		WhenFull:       queue.WhenFull(cfg.Queue.WhenFull),
		NoSync:         cfg.Queue.Sync == "none",
		DeadMaxBytes:   cfg.Dead.MaxBytes,
		SourceMaxBytes: cfg.Sources.sourceMaxBytes(),
		Quantum:        int64(cfg.Batch.MaxBytes),
		Logger:         o.logger,
		OnCommit:       o.hooks.OnCommit,
		OnDrop:         o.hooks.OnDrop,
		OnCorrupt:      o.hooks.OnCorrupt,
		Now:            now,
	}, nil
}

// Enqueue validates and normalises events (pkg/event: messageId, timestamp, context.library) and stores them durably; it
// returns after the commit (and fsync with queue.sync: always). Each event is a
// map[string]any (or any value encoding/json turns into an object), a []byte, a string or a
// json.RawMessage of one JSON object. It is all or nothing: one bad event (an *event.Error
// with its Index) stores none. After Close it returns errs.ErrClosed. When the queue is full it
// returns an error matching errs.ErrQueueFull with queue.when_full: reject, waits for room or ctx
// with block, and evicts the oldest events (counted in Stats().Queue.Dropped) with drop_oldest.
// Events that alone exceed queue.max_bytes get errs.ErrTooLarge under every policy.
func (c *Client) Enqueue(ctx context.Context, events ...any) error {
	call, err := c.normalize(events)
	if err != nil {
		return err
	}
	defer call.release() // the queue holds nothing of the bytes once it has returned
	return c.EnqueueNormalized(ctx, call.events...)
}

// EnqueueNormalized stores events that are already normalised (by event.Normalize or
// event.ParseBatch, as the agent does); it does not validate them again. Like Enqueue, it is
// EnqueueNormalizedAsync and a wait for done (franz-go's ProduceSync over Produce): one intake
// path and one pending account, so its events count against queue.max_pending_bytes until
// their commit, and Close waits for them as for any EnqueueAsync call. Once it returns it
// holds nothing of the events' bytes (the store copies them before the call returns), so the
// caller may reuse their buffer (the agent reuses its request bodies this way).
func (c *Client) EnqueueNormalized(ctx context.Context, events ...[]byte) error {
	return c.enqueueNormalizedWait(ctx, DefaultSource, events)
}

// enqueueNormalizedWait is EnqueueNormalized into source.
func (c *Client) enqueueNormalizedWait(ctx context.Context, source string, events [][]byte) error {
	if len(events) == 0 {
		return nil
	}
	answer := make(chan error, 1) // holds the answer when the caller has gone (ctx ended)
	if err := c.enqueueNormalized(ctx, source, true, func(err error) { answer <- err }, events); err != nil {
		return err
	}
	select {
	case err := <-answer:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	c.w.signal()
	return nil
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

// Flush waits until every accepted EnqueueAsync call's done has returned, then asks the worker
// to upload now, ignoring batch.interval, and waits. It returns nil when the queue is empty,
// ctx's error when ctx ends first, a *WaitingError when the worker waits on a retry budget
// (once every batch in flight waits, so not while another source's batch still delivers; the
// queue will not empty before its Until), the *HookError or *ConfigError that keeps the head batch from being sent,
// an *AuthPausedError once only sources whose credentials the destination refuses have events
// left, or errs.ErrClosed after Close.
func (c *Client) Flush(ctx context.Context) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errs.ErrClosed
	}
	if err := c.waitAsync(ctx); err != nil { // every EnqueueAsync before Flush is answered first
		return err
	}
	c.w.flushing.Add(1)
	defer c.w.flushing.Add(-1)
	c.w.signal()
	for {
		st, ch, _ := c.board.read()
		auth := c.authPause()
		switch {
		case auth.Paused && heldQueued(c.q, c.w.gate.authHeld()):
			// Only the sources paused on refused credentials have events left.
			return &AuthPausedError{AuthPauseStats: auth}
		case st.Path != PathNone && st.Path != PathAuth && st.InFlight == 0:
			// Only once every batch in flight waits: InFlight counts those sending or
			// ready to, of sources not held, so while one of them is still delivering
			// (another source's, with several sources) Flush waits for it. A batch waiting
			// out its own backoff, and every batch of a source on a Retry-After or whose
			// breaker is not closed, are not in flight. A source paused on refused
			// credentials does not end Flush while another source still has events (the
			// case above).
			return &WaitingError{Path: st.Path, Until: st.WaitingUntil, Err: st.WaitErr}
		case st.Paused != nil:
			return st.Paused
		case !st.Busy && c.queued() == 0:
			return nil
		}
		select {
		case <-ch:
		case <-c.w.done:
			return errs.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops intake (Enqueue and EnqueueAsync return errs.ErrClosed), waits until every
// pending Enqueue and EnqueueAsync call is committed (or ctx ends), wakes the worker out of any wait, lets
// it upload until the queue is empty or ctx ends, then closes the store. It returns only once
// every accepted EnqueueAsync call's done has been called and has returned: calls still
// pending when ctx ended get errs.ErrClosed. A retry wait longer
// than the time left before ctx's deadline is not started: that batch stays on disk with its
// retry state and goes first at the next Open. An attempt in flight when ctx ends is
// cancelled, so Close returns within ctx's deadline plus a few milliseconds whatever the
// collector does. Events left on disk are not an error. A second Close returns errs.ErrClosed.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errs.ErrClosed
	}
	c.closed = true
	c.async.wakeRoomWaiters()
	c.mu.Unlock()
	_ = c.waitAsync(ctx) // pending EnqueueAsync events are committed before the last upload pass
	c.w.stopWith(ctx)
	if n := c.queued(); n > 0 {
		c.log.Info("events left on disk for the next start", "events", n)
	}
	destErr := c.w.dest.Close()
	err := c.q.Close()
	c.stopAsync() // the closed queue has answered every call it held: no done is owed after this
	if err != nil {
		return fmt.Errorf("uploader: close queue: %w", err)
	}
	if destErr != nil {
		return fmt.Errorf("uploader: close %s destination: %w", c.w.dest.Name(), destErr)
	}
	return nil
}

// queued returns how many events are queued (from memory; no file stat).
func (c *Client) queued() int64 {
	n, _, _ := c.q.Pending()
	return n
}
