// Package errs holds the sentinel errors every layer of outbox shares, each defined once: the
// store returns them, the queue, the uploader and the agent pass them up wrapped with context,
// and callers test them with errors.Is whatever layer they talk to. It also holds KeyError, the
// error that names the configuration key at fault as data, so that a command can say where the
// bad value came from without parsing error text.
//
// Errors that only one package returns stay in that package (budget.ErrSpent,
// agent.ErrShuttingDown, …); typed errors that carry data stay with the code that fills them
// (store.CorruptError, uploader.WaitingError).
package errs

import (
	"errors"
	"fmt"
)

// Opening a data directory.
var (
	// ErrLocked is returned (wrapped, with the other process's pid) when another process owns
	// the data directory.
	ErrLocked = errors.New("data directory is locked")
	// ErrNotOwned is returned (wrapped) by store.Owner when no process holds the data
	// directory's lock: no agent runs on it.
	ErrNotOwned = errors.New("no outbox process holds the data directory")
	// ErrClosed is returned by every operation on a closed store, queue or client.
	ErrClosed = errors.New("outbox is closed")
	// ErrUnsafeDataFile is returned (wrapped, naming the file) when the data file is a
	// symbolic link: outbox does not follow it, so that whoever can write the data directory
	// cannot make the agent write, or create, a file elsewhere.
	ErrUnsafeDataFile = errors.New("data file is a symbolic link")
	// ErrDataDirPermission is returned (wrapped, with a hint) when the data directory or its
	// lock file cannot be opened for lack of permission: the process runs as another user than
	// the directory's owner.
	ErrDataDirPermission = errors.New("no permission on the data directory")
)

// Storing events.
var (
	// ErrQueueFull is returned (wrapped) when the events do not fit in queue.max_bytes now and
	// queue.when_full is reject. It is retryable: room comes back as the queue drains.
	ErrQueueFull = errors.New("queue is full")
	// ErrSourceFull is returned (wrapped) when one source's events do not fit in its share of
	// the queue (sources.<name>.max_bytes) now; only that source is refused. It wraps
	// ErrQueueFull, so everything that handles a full queue (503 with Retry-After, when_full:
	// block) handles it too.
	ErrSourceFull = fmt.Errorf("source's share of the queue is full: %w", ErrQueueFull)
	// ErrTooLarge is returned (wrapped) when events alone exceed queue.max_bytes: they can
	// never be queued, whatever queue.when_full says, so retrying is pointless.
	ErrTooLarge = errors.New("events exceed the queue's max_bytes")
	// ErrChecksum is returned (wrapped) when a stored record fails its CRC-32C check; such a
	// record is never uploaded.
	ErrChecksum = errors.New("record checksum mismatch")
	// ErrKeyMissing is returned (wrapped, naming the key ids) when the data file holds records
	// sealed with a key that queue.encryption.key_files does not hold: nothing was changed.
	ErrKeyMissing = errors.New("a key the data file needs is not configured")
)

// Dead letters.
var (
	// ErrNotFound is returned (wrapped) for an unknown dead-letter batch id.
	ErrNotFound = errors.New("not found")
)

// Configuration.
var (
	// ErrInvalidConfig is wrapped by every Validate of a configuration (uploader, agent,
	// retry budgets); the problems themselves are KeyErrors.
	ErrInvalidConfig = errors.New("invalid configuration")
)

// KeyError is an invalid configuration value: Key is the configuration key at fault
// ("upload.endpoint", "upload.headers.X-Retry-Count"), Err what is wrong with its value. A rule
// between keys names the others in Related. Validate methods return one per
// problem, joined with errors.Join, so a caller finds them with errors.As or by walking the
// join.
type KeyError struct {
	Key     string
	Related []string // the other keys of a rule between keys, if any
	Err     error
}

// Error is Err's text, which names the key itself so that the message reads on its own
// ("upload.endpoint \"ftp://x\": must be an http or https URL").
func (e *KeyError) Error() string { return e.Err.Error() }

// Unwrap returns what is wrong.
func (e *KeyError) Unwrap() error { return e.Err }

// KeyErrorf returns a *KeyError for key whose text is the formatted message (which should
// name the key).
func KeyErrorf(key, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

// KeyErrors returns every *KeyError in err, walking wrapped and joined errors, in order.
func KeyErrors(err error) []*KeyError {
	var out []*KeyError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if ke, ok := e.(*KeyError); ok {
			out = append(out, ke)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
