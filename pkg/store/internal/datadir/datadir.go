// Package datadir holds what a data directory is made of on disk, shared by the running store
// (pkg/store) and the offline tools (pkg/store/fsck): the names of its two files, the lock that
// makes one process its only owner, and the directory sync that makes a rename durable.
//
// The lock is an exclusive, non-blocking flock on <dir>/outbox.lock, which holds the owner's
// pid so that a second opener can name it in its error. It is taken before the data file is
// opened and released after it is closed; the lock file itself is never removed (removing it
// would race a new owner).
package datadir

import "os"

// FileName is the name of the bbolt file inside the data directory.
const FileName = "outbox.db"

// LockFile is the name of the lock file inside the data directory. It holds
// the pid of the owner; the lock itself is a non-blocking flock on it.
const LockFile = "outbox.lock"

// SyncDir fsyncs the directory dir, so that a rename inside it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
