package queue

import (
	"fmt"
	"maps"
	"sync/atomic"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
)

// policy is the queue's bound on what the store keeps: queue.max_bytes with queue.when_full
// for events, dead.max_bytes for dead letters. The store asks it inside its transactions (see
// store.Policy); Block is not the store's business: Enqueue waits and asks again.
type policy struct {
	maxBytes     int64         // stored event bytes
	deadMaxBytes int64         // dead-letter event bytes
	evict        bool          // when_full: drop_oldest
	sourceMax    *sourceShares // each source's own share (sources.<name>.max_bytes); absent: none
}

// sourceShares are the sources' own shares of the queue, replaced whole by
// Queue.SetSourceMaxBytes while the store asks AdmitSource from its transactions.
type sourceShares struct {
	m atomic.Pointer[map[string]int64]
}

func newSourceShares(m map[string]int64) *sourceShares {
	s := &sourceShares{}
	s.set(m)
	return s
}

func (s *sourceShares) set(m map[string]int64) {
	cp := maps.Clone(m) // the caller may change m; a nil map reads as no shares
	s.m.Store(&cp)
}

func (s *sourceShares) get(source string) (int64, bool) {
	v, ok := (*s.m.Load())[source]
	return v, ok
}

// Policy returns the store.Policy of cfg (zero values meaning their defaults), the one Open
// gives its store.
func Policy(cfg Config) store.Policy {
	return newPolicy(cfg, newSourceShares(cfg.SourceMaxBytes))
}

// newPolicy is Policy(cfg) with the sources' shares in shares (which the queue keeps to replace them).
func newPolicy(cfg Config, shares *sourceShares) policy {
	cfg = cfg.withDefaults()
	return policy{maxBytes: cfg.MaxBytes, deadMaxBytes: cfg.DeadMaxBytes, evict: cfg.WhenFull == DropOldest, sourceMax: shares}
}

// Fits refuses events that alone exceed queue.max_bytes: no policy can make room for them.
func (p policy) Fits(need int64) error {
	if need > p.maxBytes {
		return fmt.Errorf("%d bytes of events, over the quota of %d: %w", need, p.maxBytes, errs.ErrTooLarge)
	}
	return nil
}

// Admit lets events in while they fit; past the bound, drop_oldest evicts what makes room and
// the other policies refuse with errs.ErrQueueFull. Replayed dead batches never evict queued
// events: they wait for room like a rejected Enqueue.
func (p policy) Admit(stored, need int64, replay bool) (int64, error) {
	switch {
	case need > p.maxBytes && replay:
		return 0, fmt.Errorf("%d bytes of dead events, over the quota of %d: %w", need, p.maxBytes, errs.ErrTooLarge)
	case need > p.maxBytes:
		return 0, p.Fits(need)
	case stored+need <= p.maxBytes:
		return 0, nil
	case p.evict && !replay:
		return stored + need - p.maxBytes, nil
	}
	return 0, errs.ErrQueueFull
}

// AdmitSource refuses a source's events past its own share, whatever queue.when_full says:
// evicting another source's events for them would let one source crowd the others out, and
// evicting its own would drop what it was told was accepted. Its SDKs are told to come back.
func (p policy) AdmitSource(source string, stored, need int64) error {
	limit, ok := p.sourceMax.get(source)
	if !ok || limit <= 0 || stored+need <= limit {
		return nil
	}
	if need > limit {
		return fmt.Errorf("%d bytes of events, over source %s's share of %d (sources.%s.max_bytes): %w", need, source, limit, source, errs.ErrTooLarge)
	}
	return fmt.Errorf("source %s holds %d of its %d bytes (sources.%s.max_bytes): %w", source, stored, limit, source, errs.ErrSourceFull)
}

// DeadExcess is how far the dead letters are past dead.max_bytes.
func (p policy) DeadExcess(dead int64) int64 { return max(dead-p.deadMaxBytes, 0) }
