package store

// Policy is the queue's say over how much the store keeps. The store stores, counts and evicts
// records; whether events fit, what happens when they do not, and how many dead letters are
// kept are the queue's decisions (pkg/queue implements Policy from queue.max_bytes,
// queue.when_full and dead.max_bytes). The writer asks inside the transaction that stores the
// data, so a decision and the counts it was made on cannot drift apart. A nil Policy keeps
// everything.
type Policy interface {
	// Fits reports whether events of need bytes could ever be stored (errs.ErrTooLarge,
	// wrapped, when not). Append asks it before the writer, so that such events are refused
	// at once and nothing is evicted for them.
	Fits(need int64) error
	// Admit is asked before events of need bytes are stored, with the event bytes stored now
	// (earlier requests of the same transaction included). It returns how many bytes to
	// evict from the head first (0: none), or the error that refuses the events. replay is
	// set for dead batches moved back to the queue.
	Admit(stored, need int64, replay bool) (evict int64, err error)
	// AdmitSource is asked before events of need bytes are stored in source, with the bytes
	// that source holds now, before Admit: it returns errs.ErrSourceFull (wrapped) when the
	// source's own share is full, which refuses only that source's events (never evicting).
	AdmitSource(source string, stored, need int64) error
	// DeadExcess is asked after a dead batch was stored, with the dead-letter bytes now: the
	// store drops the oldest dead batches until that many bytes are gone.
	DeadExcess(dead int64) (drop int64)
}
