package store

import (
	"errors"
	"fmt"
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
