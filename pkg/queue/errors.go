package queue

import (
	"errors"
)

// ErrNoBatch is returned by LeaseAfter when it is given no leased batch to follow.
var ErrNoBatch = errors.New("queue: no leased batch to lease after")
