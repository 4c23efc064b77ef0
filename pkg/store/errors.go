package store

import (
	"fmt"
)

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
