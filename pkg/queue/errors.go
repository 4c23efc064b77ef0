package queue

import (
	"errors"

	"github.com/outboxhq/outbox/pkg/store"
)

// ErrNoBatch is returned by LeaseAfter when it is given no leased batch to follow.
var ErrNoBatch = errors.New("queue: no leased batch to lease after")

// CorruptError reports a data file that failed to open or failed its check (Open), or damage
// found while the queue is open (every later write returns it): the store's error, named here
// so the queue's users match it with errors.As without reaching into pkg/store.
type CorruptError = store.CorruptError
