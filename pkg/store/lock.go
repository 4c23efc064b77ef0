package store

import "github.com/outboxhq/outbox/pkg/store/internal/datadir"

// The data directory's files and its lock, as the store's API; the lock itself is
// internal/datadir's, which the offline tools (pkg/store/fsck) take too.

// FileName is the name of the bbolt file inside the data directory.
const FileName = datadir.FileName

// LockFile is the name of the lock file inside the data directory. It holds
// the pid of the owner; the lock itself is a non-blocking flock on it.
const LockFile = datadir.LockFile

// Owner returns the pid of the process that holds dir's lock (an agent running on it, which
// `outbox reload` signals). When no process holds it (no lock file, or its lock is free) the
// error wraps errs.ErrNotOwned. Owner never takes the lock for longer than the probe, and
// never writes the file.
func Owner(dir string) (int, error) { return datadir.Owner(dir) }
