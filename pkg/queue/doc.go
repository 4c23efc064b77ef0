// Package queue is the durable FIFO the rest of outbox uses, on top of
// pkg/store (one bbolt file per data directory).
//
// # States of an event
//
//	Enqueue ──► queued ──Lease──► leased (still stored, at its place)
//	                                 │
//	             Lease.Ack ◄─────────┼─────────► Lease.DeadLetter ──► dead ──DeadReplay──► queued (tail)
//	               (deleted, one tx) │           (moved, one tx)         └─DeadPurge──► gone
//	                                 └─Lease.Retry: the batch's retry state, kept across restarts
//
// Enqueue returns nil only after its events are committed (and fsynced unless
// NoSync); concurrent producers share one transaction and one fsync. Lease
// does not remove anything: a crash between an upload and its Ack re-sends
// that batch (at-least-once; collectors dedupe on messageId). There is a
// single consumer: Lease always starts at the head. A consumer may read ahead
// with LeaseAfter (the batch Lease will return once the given one has left).
// A Lease (lease.go) owns what happens to its batch: Ack, Retry (its retry
// state), DeadLetter, Split and Release, each write under the caller's
// context. The queue owns the encoding of a retry state (retrystate.go); the
// store keeps it as opaque bytes.
//
// Batch, DeadBatch, DeadInfo and Stats are pkg/store's types (aliases): a lease
// wraps the batch the store read, a dead letter is the one it decoded, so
// pkg/uploader names them through this package and never imports pkg/store.
//
// # Several batches in flight
//
// A consumer may hold many leases at once (Lease, then LeaseAfter the last one
// leased) and settle them in any order, from several goroutines: a lease's
// Ack, DeadLetter and Retry touch only its own keys, in one transaction (concurrent calls share the store's group commit). Each batch's
// retry state is saved under its first key, so after a crash every batch that
// was in flight comes back whole with its own state: a run read from the head
// (or after a batch) ends before the next batch with a saved state, and a saved
// batch keeps its saved event count. Nothing acknowledged can come back, and
// what comes back again is at most the batches that were in flight.
//
// # Sources
//
// The queue is one FIFO per source (sources.go; the store keeps each in a bucket of its own,
// all in one group commit). EnqueueIn, EnqueueAsyncIn and EnqueueAwaitedIn name the source;
// the other intake calls use DefaultSource. A batch is read from one source and names it
// (Batch.Source); a lease's Ack, Retry and DeadLetter go back to that source, and a dead
// batch replays into it. Lease and LeaseAfter take the sources that hold events in turn, by
// deficit round robin weighted by bytes (drr.go: in its turn a source is credited
// Config.Quantum bytes and keeps the turn while its credit lasts), so a backlog in one source
// delays the others by about one batch. A chain of leases (Lease, then LeaseAfter the last)
// carries how far it has read each source (Batch.Chain), so LeaseAfter reads the next batch of
// whichever source's turn it is without the queue keeping track of what the consumer holds.
// Config.SourceMaxBytes gives a source its own share of MaxBytes: past it only that source is
// refused (errs.ErrSourceFull, which matches errs.ErrQueueFull; counted as "source_full"),
// under every WhenFull.
//
// # Quota
//
// The quota is the queue's: policy.go implements store.Policy, which the
// store's writer asks inside the transaction that would store events or a dead
// batch, and evicts or drops only what it answers. MaxBytes bounds the stored
// event bytes. WhenFull decides what a full queue does: reject (errs.ErrQueueFull), block (wait for room or ctx) or drop_oldest
// (evict from the head; counted in Stats.Dropped["drop_oldest"] and OnDrop,
// logged at warn). DeadMaxBytes bounds the dead-letter bucket the same way
// (reason "dead_overflow").
//
// Events of one Enqueue that alone total more than MaxBytes can never fit:
// Enqueue returns errs.ErrTooLarge (wrapped; it is not errs.ErrQueueFull) at once under every
// policy — reject does not call it retryable, block does not wait, drop_oldest
// evicts nothing. Under drop_oldest anything up to MaxBytes fits: eviction may
// empty the queue (events committed earlier in the same group commit
// included) but never fails after evicting. DeadReplay of more than MaxBytes
// is errs.ErrTooLarge too.
//
// # Intake time
//
// Oldest is the head event's intake time as the queue's clock (Config.Now)
// gave it, to the millisecond, for events this process enqueued or replayed;
// an event enqueued before the queue was opened reports its key's second,
// rounded down (so it looks up to 1 s older, never younger). pkg/store's doc
// explains how.
package queue
