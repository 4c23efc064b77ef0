package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
)

// Batch is a leased run of events from the head of the queue: the store's batch itself, so a
// lease hands the consumer what the store read, with nothing converted. Its Release, Len and
// Split are store.Batch's; a Lease (lease.go) is a Batch that owns its ack.
type Batch = store.Batch

// Stats is the store's snapshot of the queue's counters (Queue.Stats).
type Stats = store.Stats

// DropReasons returns every reason an event may be dropped for, the keys Stats.Dropped may
// hold: store.ReasonDropOldest, store.ReasonDeadOverflow, store.ReasonChecksum,
// store.ReasonSuppressed, store.ReasonPurged and store.ReasonSourceFull.
func DropReasons() []string { return store.DropReasons() }

// DropReasonPurged is the drop reason of the events in dead batches an operator purged.
const DropReasonPurged = store.ReasonPurged

// Queue is the durable FIFO of one data directory. Enqueue is safe for
// concurrent use. Lease and LeaseAfter assume a single consumer, which may settle the
// leases it holds (Lease.Ack, Lease.DeadLetter, Lease.Retry) from several goroutines, in any order.
type Queue struct {
	storeView // what the store answers as it is: the queue adds nothing to it
	s         *store.Store
	cfg       Config
	policy    store.Policy // the store asks it inside its transactions; Fits asks it up front
	log       *slog.Logger
	turns     *drr          // whose turn it is to lease (sources.go)
	shares    *sourceShares // the sources' own shares, which policy reads (SetSourceMaxBytes)
}

// Open opens (creating) the queue in dir. It fails with errs.ErrLocked
// (wrapped) when another process owns dir and with a *CorruptError
// when the file cannot be opened or fails its check.
func Open(dir string, cfg Config) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	shares := newSourceShares(cfg.SourceMaxBytes)
	policy := newPolicy(cfg, shares)
	s, err := store.Open(dir, store.Options{
		NoSync: cfg.NoSync, Policy: policy, Logger: cfg.Logger, OnCommit: cfg.OnCommit,
		OnDrop: cfg.OnDrop, OnCorrupt: cfg.OnCorrupt, Now: cfg.Now, Keys: cfg.Keys,
	})
	if err != nil {
		return nil, fmt.Errorf("open queue: %w", err)
	}
	return &Queue{storeView: s, s: s, cfg: cfg, policy: policy, log: cfg.Logger, turns: newDRR(cfg.Quantum), shares: shares}, nil
}

// storeView is the part of the store a consumer reads through the queue unchanged (its
// methods' docs are the store's): the commit signal, counters from memory, the data
// directory, its lifecycle, the source registry, the salt and the last key handed out. The
// queue embeds it instead of forwarding each; what changes the queue's records goes through
// the queue's own methods, which apply its policy.
type storeView interface {
	Notify() <-chan struct{}
	Oldest() (time.Time, bool)
	Pending() (events, bytes int64, oldest time.Time)
	Dir() string
	Close() error
	Compact(ctx context.Context) error
	Stats() store.Stats
	Sources() []store.SourceStats
	SourceRecords() (map[string][]byte, error)
	LastKey() []byte
	Salt(ctx context.Context) ([]byte, error)
}

// Enqueue appends events (already normalised) at the tail. When it returns
// nil they are committed (and fsynced unless NoSync). It is EnqueueAwaited and a wait for its
// done, like franz-go's ProduceSync over Produce: one intake path, so concurrent Enqueue and
// EnqueueAsync calls share commits. When the events do not fit in MaxBytes now, WhenFull decides:
// reject returns errs.ErrQueueFull, block waits for room, drop_oldest evicts from the
// head. When the events alone total more than MaxBytes they can never fit:
// Enqueue returns errs.ErrTooLarge (wrapped) at once under every policy, without
// waiting or evicting anything. When ctx ends first it returns ctx.Err(), and
// the events may or may not have been stored.
func (q *Queue) Enqueue(ctx context.Context, events ...[]byte) error {
	return q.enqueue(ctx, DefaultSource, events)
}

func (q *Queue) enqueue(ctx context.Context, source string, events [][]byte) error {
	if len(events) == 0 {
		return nil
	}
	answer := make(chan error, 1) // holds the answer when the caller has gone (ctx ended)
	if err := q.EnqueueAwaitedIn(ctx, source, func(err error) { answer <- err }, events...); err != nil {
		return err
	}
	var err error
	select {
	case err = <-answer:
	case <-ctx.Done():
		return ctx.Err()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errs.ErrQueueFull):
		return errs.ErrQueueFull
	case errors.Is(err, ctx.Err()):
		return err
	}
	return fmt.Errorf("enqueue: %w", err)
}

// Lease returns the oldest events of one source as one batch: at most maxEvents, at most
// maxBytes (but always at least one event), or nil, nil when the queue is
// empty. It does not block and does not remove anything: the batch stays at
// the head until Ack or DeadLetter. After a restart a batch whose retry state was
// saved comes back whole, with that state (RetryState). With several sources holding events,
// the source is the one whose turn it is (deficit round robin by bytes, drr.go); the batch
// names it (Batch.Source).
func (q *Queue) Lease(ctx context.Context, maxEvents, maxBytes int) (*Lease, error) {
	return q.LeaseSkipping(ctx, maxEvents, maxBytes, nil)
}

// LeaseSkipping is Lease among the sources for which skip (nil: none) returns false: the
// consumer's way to pass over a source it holds (a Retry-After of its write key, refused
// credentials, an outage of its endpoint) without that source's events holding up the
// others'. A skipped source keeps its place in its own FIFO; it takes no turn while skipped.
func (q *Queue) LeaseSkipping(ctx context.Context, maxEvents, maxBytes int, skip func(source string) bool) (*Lease, error) {
	src := q.turns.next(q.pending(store.Chain{}, skip))
	if src == "" {
		return nil, nil
	}
	b, err := q.s.HeadIn(ctx, src, maxEvents, maxBytes)
	if err != nil || b == nil {
		return q.lease(b), err
	}
	q.turns.charge(src, int64(b.Bytes))
	b.Chain = store.Chain{}.With(src, b.Keys()[len(b.Keys())-1])
	return q.lease(b), nil
}

// Fits reports whether events of need bytes could ever be queued: errs.ErrTooLarge (wrapped)
// when they alone exceed MaxBytes, under every WhenFull. Enqueue and EnqueueAsync ask it
// themselves; a caller that must refuse such events before doing anything else (waiting for
// room of its own) asks it first.
func (q *Queue) Fits(need int64) error { return q.policy.Fits(need) }

// LeaseAfter returns the batch that follows prev, which must be a batch returned by Lease or
// LeaseAfter (or a half of one) that is still queued: the batch Lease will return once prev
// and the batches leased before it have left the queue, so that the consumer can read (and
// encode) the next batch while those are being delivered — including a saved retry state,
// should it belong to that batch. It does not block and removes nothing. more reports that at
// least one event follows the returned batch (in any source).
//
// With several sources the batch is from the source whose turn it is (drr.go), read after
// what prev's chain of leases has read of that source (Batch.Chain): a source with a backlog
// takes its turn, not every turn.
//
// b is nil when nothing follows prev. It is nil with more true when the event after prev
// fails its checksum: Lease, once prev has left the queue, removes that event and goes on.
// A nil or empty prev returns ErrNoBatch.
func (q *Queue) LeaseAfter(prev *Lease, maxEvents, maxBytes int) (l *Lease, more bool, err error) {
	return q.LeaseAfterSkipping(prev, maxEvents, maxBytes, nil)
}

// LeaseAfterSkipping is LeaseAfter among the sources for which skip (nil: none) returns
// false (see LeaseSkipping); more counts only the events of sources not skipped after the
// batch's own. The chain keeps how far it has read a skipped source, so once no longer
// skipped that source goes on where it was.
func (q *Queue) LeaseAfterSkipping(prev *Lease, maxEvents, maxBytes int, skip func(source string) bool) (l *Lease, more bool, err error) {
	if prev.empty() {
		return nil, false, ErrNoBatch
	}
	chain := prev.Chain.With(prev.Source, prev.Keys()[len(prev.Keys())-1])
	src := q.turns.next(q.pending(chain, skip))
	if src == "" {
		return nil, false, nil
	}
	b, more, err := q.s.ReadAfterIn(src, chain.After(src), maxEvents, maxBytes)
	if err != nil || b == nil {
		return q.lease(b), more, err
	}
	q.turns.charge(src, int64(b.Bytes))
	b.Chain = chain.With(src, b.Keys()[len(b.Keys())-1])
	if !more {
		more = len(q.pending(b.Chain, skip)) > 0
	}
	return q.lease(b), more, nil
}
