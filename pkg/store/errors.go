package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ErrLocked is returned by Open when another process holds the data directory.
var ErrLocked = errors.New("data directory is locked")

// ErrFull is returned by Append when the events do not fit in Options.MaxBytes.
var ErrFull = errors.New("queue is full")

// ErrTooLarge is returned (wrapped) by Append and Replay when the events alone exceed Options.MaxBytes: they can never fit.
var ErrTooLarge = errors.New("events exceed the queue's max_bytes")

// ErrClosed is returned by every operation on a closed Store.
var ErrClosed = errors.New("store is closed")

// ErrNotFound is returned when a dead-letter batch id does not exist.
var ErrNotFound = errors.New("not found")

// ErrChecksum is returned (wrapped) when a record fails its CRC-32C check.
var ErrChecksum = errors.New("record checksum mismatch")

// CorruptError reports a data file that failed to open or failed its
// consistency check. The file is left untouched; `outbox recover` salvages it.
type CorruptError struct {
	Path string // the data file
	Dir  string // the data directory, for the suggested command
	Err  error  // what failed
}

// Error names the file and the command that repairs it.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("data file %s is corrupt (%v); it was not modified; run `outbox recover --data-dir %s` to move it aside and salvage readable events", e.Path, e.Err, e.Dir)
}

// Unwrap returns the underlying failure.
func (e *CorruptError) Unwrap() error { return e.Err }

// corrupted records that a read inside bbolt panicked on the open file (a
// page damaged after the file was checked): every later write returns the
// *CorruptError, so the file is left as it is, and OnCorrupt is called (on a
// goroutine of its own: the caller may hold the store's locks). It returns
// the store's *CorruptError.
func (s *Store) corrupted(cause any) *CorruptError {
	ce := &CorruptError{Path: s.path, Dir: s.dir, Err: fmt.Errorf("%w: reading the file failed: %v", errDamaged, cause)}
	if s.failed.CompareAndSwap(nil, ce) {
		s.log.Error("data file is damaged; intake stopped", "path", s.path, "error", ce.Err)
		if s.opt.OnCorrupt != nil {
			go s.opt.OnCorrupt(ce)
		}
	}
	return s.failed.Load()
}

// guardGroup is deferred by the writer around one group's transaction: a
// panic inside bbolt rolls the transaction back, stops intake with the
// *CorruptError and answers every request of the group with it.
func (s *Store) guardGroup(tx *bolt.Tx, group []*request) {
	r := recover()
	if r == nil {
		return
	}
	_ = tx.Rollback() // ErrTxClosed when it had committed
	ce := s.corrupted(r)
	for _, req := range group {
		select {
		case req.done <- ce:
		default: // answered already
		}
	}
}
