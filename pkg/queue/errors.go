package queue

import (
	"errors"

	"github.com/outboxhq/outbox/pkg/store"
)

// ErrFull is returned by Enqueue when the events do not fit in Config.MaxBytes now and WhenFull is reject (retryable). It is store.ErrFull.
var ErrFull = store.ErrFull

// ErrTooLarge is returned (wrapped) by Enqueue under every WhenFull when one call's events alone exceed Config.MaxBytes: permanent, never ErrFull.
var ErrTooLarge = store.ErrTooLarge

// ErrClosed is returned by every operation on a closed Queue. It is store.ErrClosed.
var ErrClosed = store.ErrClosed

// ErrNotFound is returned for an unknown dead-letter batch id. It is store.ErrNotFound.
var ErrNotFound = store.ErrNotFound

// ErrNoBatch is returned by LeaseAfter when it is given no leased batch to follow.
var ErrNoBatch = errors.New("queue: no leased batch to lease after")
