// Package uploader is outbox's embeddable client: a durable queue on a data directory (pkg/queue)
// and one worker goroutine that drains it into batches for a destination — HTTP POSTs to a
// Segment-compatible collector (pkg/httpdest, which segment.Open of pkg/segment builds from the
// upload.* keys), or any Destination passed with WithDestination (pkg/kafka) — retrying through two budgets
// (pkg/budget) and dead-lettering what cannot be delivered. The Client is the intake and the
// lifecycle; the worker (worker.go, dispatch.go, gate.go, attempt.go) is the consumer side; a
// Destination only sends one batch and says what happened (an Outcome), including what the
// answer means for delivery control (back-pressure, a Retry-After, refused credentials, a
// rejection worth splitting): this package never reads an HTTP status. Destination, Batch,
// Outcome and the classes are pkg/delivery's, the seam every destination is built on; this
// package imports no destination (destination.go: WithDestination, or a DestinationFunc that
// Open calls once it has read the configuration, as segment.Open passes the HTTP one). The
// agent (pkg/agent) is this client behind an HTTP intake.
//
// # Using it
//
//	cfg := uploader.DefaultConfig()          // every default of the configuration keys
//	cfg.DataDir = "/var/lib/myapp/outbox"
//	cfg.Upload.WriteKey = os.Getenv("SEGMENT_WRITE_KEY")
//	c, err := segment.Open(cfg, uploader.WithLogger(logger)) // pkg/segment: the HTTP destination
//	...
//	err = c.Enqueue(ctx, map[string]any{"type": "track", "event": "Signed Up", "userId": "u1"})
//	...
//	err = c.Close(shutdownCtx)              // last bounded upload pass, then the store is closed
//
// Enqueue validates and normalises each event (pkg/event: messageId, timestamp, context.library)
// and returns once the events are committed (and fsynced with queue.sync: always): an accepted
// event survives a crash. It is all or nothing. When the stored events would pass
// queue.max_bytes it returns errs.ErrQueueFull (queue.when_full: reject, the default), waits for
// room or ctx (block) or evicts the oldest events (drop_oldest); events that alone exceed
// queue.max_bytes get errs.ErrTooLarge, since no policy can make room for them. Delivery is at least once: a
// crash between an upload and its acknowledgement sends that batch again with the same
// messageIds, which collectors deduplicate.
//
// EnqueueAsync is the same without the wait: it validates and normalises at once (bad input
// is returned), hands the events to the store's writer and returns; done is called once, from
// the client's own goroutine, with nil when they are committed or with the error that kept
// them off the disk (errs.ErrQueueFull under reject: the quota applies at commit). The events it
// holds uncommitted are bounded by queue.max_pending_bytes (backpressure: it waits for room or
// ctx). The writer takes everything pending, sync and async alike, into one transaction, so a
// single goroutine calling EnqueueAsync fills commits of hundreds of events with no timer on
// the path. Use Enqueue where the caller must know the event is durable before it goes on,
// EnqueueAsync where an SDK call would sit in a loop or a handler. Flush and Close wait for
// every pending done; a crash loses only the events whose done(nil) had not been called.
//
// # The worker
//
// One goroutine owns the consumer side. It leases a batch from the head of the queue when the
// queue holds batch.max_events or batch.max_bytes (measured on the uncompressed body), when the
// oldest event is batch.interval old, during Flush, or during Close; it never sends an empty
// body. Each batch is carried until it is delivered whole (acked or dead-lettered, with its
// retries and splits):
//
//	due ──► lease ──► prepare ──► gate ──► attempt ──2xx──────────────────────────► ack
//	                                ▲        │  ├─rate-limited (Retry-After) ──► rate-limit wait ─┐
//	                                │        │  ├─retryable status / network ───► counted wait ───┤
//	                                │        │  │        (either budget spent ──► dead letter)    │
//	                                │        │  ├─413, or a splittable rejection ► split in half ─┤
//	                                │        │  ├─refused credentials ──────────► probe wait ─────┤
//	                                │        │  └─other rejection ──────────────► dead letter     │
//	                                └────────┴──────────────── next attempt ◄─────────────────────┘
//
// One dispatcher serves every upload.concurrency (dispatch.go): it leases from the head, then
// each next full batch after the last one leased, and carries each lease on a goroutine of its
// own, with its own budget and X-Retry-Count, until it was delivered, dead-lettered or split
// into halves that were. One batch more than the limit is leased, so that a destination that
// builds its payload ahead (the HTTP one: the gzipped body) builds the next batch's while the
// ones before it are in flight. The gate (gate.go) admits every attempt by composing four
// policies: per source a hold (hold.go: a usable Retry-After, refused credentials) and a
// breaker (breaker.go: after a failure nothing new starts while an answer is pending; during
// an outage one probe at a time, paced by its own backoff), per endpoint a limit (limit.go:
// fixed, or auto's slow start, additive increase, multiplicative decrease), and the slots
// (slots.go: a lease's rank among those of its endpoint not waiting must be below the limit).
// A held source's batches take no place and the dispatcher leases none of it (isolation.go):
// a 429, a 401 or an outage of one source never delays another's events. upload.concurrency: 1 (or a
// destination that takes one batch at a time) is a limit of one with acks in order: only the
// oldest lease may send, and it holds its place until its ack has committed, so delivery is
// FIFO. Otherwise each accepted batch is acked in its own transaction, in any order, and a
// batch waiting out its backoff is overtaken. A failed ack pauses that lease, which sends the
// batch again (a duplicate the collector dedupes by messageId, never a loss). Retry states
// are saved per batch. Close cuts every wait and, at its deadline, every request in flight;
// what is not delivered stays queued. docs/design/delivery.md states each rule with the test
// that holds it.
//
// The HTTP destination (pkg/httpdest has its model) splices the stored events into the Segment
// body {"batch":[…],"sentAt":…}, gzipped when upload.gzip, built ahead of a batch's first
// attempt; every attempt builds its request anew (Basic auth from upload.write_key,
// upload.headers, the RequestHook, and X-Retry-Count: absent on a batch's first attempt, then
// 1, 2, 3 … for every retry, rate-limited ones included). The halves of a split batch are new
// batches (no X-Retry-Count on their first attempt). upload.timeout bounds one attempt. Only 307
// and 308 redirects are followed; a 301, 302 or 303 is rejected.
//
// Classify (replaceable with WithClassifier) puts each attempt in one class. A rate-limited
// attempt waits min(Retry-After, retry.retry_after_cap) and does not spend the retry count; the
// episode is bounded by retry.max_rate_limit_duration. A retryable status or a network error
// (never_sent or maybe_sent) waits on the counted exponential backoff, bounded by
// retry.max_retries and retry.max_total_backoff. After every failed attempt the batch's retry
// state (attempts, budget start times) is saved with it, so a restart resumes the count instead
// of resetting it; a pending wait is not kept — after a restart the head batch is tried at once.
// A RequestHook error, or a configuration error found when building the request, is neither:
// it spends no budget, the batch stays queued, Flush reports it, and the worker tries again
// after batch.interval.
//
// A 401 or 403 (ClassAuthRefused) says our credentials are wrong, not the events. With
// upload.on_auth_failure: pause (the default) delivery of that source pauses (authpause.go): no
// new attempt of any of its batches starts, they stay queued with their budgets untouched (no
// retry counted, no X-Retry-Count), and its head batch alone is tried again once a minute
// until one is accepted, which resumes the source; the other sources go on. Stats().Sources
// and Stats().AuthPause say so, Flush returns an *AuthPausedError (ErrAuthRefused) once only
// paused sources have events left, and a warn line names the source and the key to fix. With dead_letter the batch is
// dead-lettered as any rejection.
//
// # Reconfigure
//
// Reconfigure changes batch.*, retry.*, upload.write_key, upload.headers, upload.timeout,
// upload.concurrency and upload.split_rejected of a running client (live.go, reconfigure.go):
// one atomic swap of the settings, which the worker reads at the start of each lease and of
// each attempt, and of the HTTP destination's credentials (httpdest's SetCredentials), which
// each attempt reads once.
// An attempt in flight finishes with what it read; a batch's retry budget is set when it is
// leased. A change of upload.concurrency changes the gate's limit: the batches in flight
// finish the attempt they are in and wait for their place before the next. A Reconfigure that changes upload.write_key
// or upload.headers ends the wait of a pause on refused credentials: the head is probed at once.
//
// Reconfigure also replaces the named sources (sources.<name>.*, sources_reload.go): a new one
// is routed at once, a changed one's next attempts read its new route, and a removed one is
// kept, with its last route, while its FIFO holds events or an enqueue into it begun before
// the removal is on its way (Stats shows it Removed); then it is forgotten. The route each
// attempt asks for is read under the registry's lock, so an attempt never mixes two routes.
//
// Every wait (interval, retry, pause) is one budget.Sleep on the injected clock, which Close cuts
// short. Logs: one info line per batch outcome, one warn line per retry (path, attempt, wait,
// status or error_class); the write key is never logged.
//
// # Privacy
//
// Config.Privacy scrubs fields of every event before it is stored (privacy.rules: remove,
// mask or hash by field path) and drops the events of users on a suppress list
// (privacy.suppress_file), in Enqueue and, through IntakeOptions and CountSuppressed, in the
// agent's ingest: one intake. Forget deletes a user's queued and dead-lettered events in one
// transaction (forget.go): the worker holds new sends while it runs, waits for the sends in
// progress, and afterwards sends a batch read before the forget without the events it
// deleted, so nothing of that user is sent once Forget returns.
//
// # Flush and Close
//
// Flush uploads now, ignoring batch.interval, and returns nil once the queue is empty, ctx's
// error, a *WaitingError when the worker waits on a budget (its Path and Until), or the error
// holding the head batch. Close stops intake (Enqueue returns errs.ErrClosed), wakes the worker out
// of any wait, and lets it upload until the queue is empty or ctx ends; it never starts a wait
// that would end after ctx's deadline and cancels the attempt in flight at the deadline, so it
// returns within the deadline plus a few milliseconds whatever the collector does. What is not
// uploaded stays on disk with its retry state and goes first at the next Open.
//
// # Concurrency
//
// A Client is safe for concurrent use. Hooks must return quickly. OnAttempt, OnRetry and
// OnDeadLetter run on the worker goroutine; OnDelivered on the acker goroutine (in delivery
// order, possibly while the worker calls the others for a later batch); OnCommit and OnDrop
// on the store's committing goroutine; OnEnqueued on the goroutine that called Enqueue (for
// EnqueueAsync, on the goroutine that calls done, after the dones of a commit). When
// Flush returns nil or Close returns, every OnDelivered of the batches acked so far has
// returned.
package uploader
