package format

import (
	"fmt"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// PageSize is the page size of the files outbox creates (an existing file keeps its
// own, which bbolt reads from its meta page). See doc.go.
const PageSize = 16 << 10

// OpenDB opens path with the options that suit an append-only queue. bbolt
// scans the whole tree of an existing file here (the freelist is rebuilt, see
// below), so path must be a file that passed fsck.ValidateFile or one this
// process wrote itself.
func OpenDB(path string, noSync bool, mmap int) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil { // bbolt may panic on a broken file
			db, err = nil, fmt.Errorf("open panicked: %v", r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		// We hold our own flock first, so bbolt's must never wait.
		Timeout: 200 * time.Millisecond,
		// The freelist is not written on every commit: an append-only queue
		// frees pages on every ack, and syncing a large freelist would cost
		// pages per tx. It is rebuilt by a page scan at open instead.
		NoFreelistSync: true,
		// The hashmap freelist allocates contiguous runs in near O(1), which
		// matters after a big drain leaves many free pages.
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: mmap,
		PageSize:        PageSize,
	})
	if err != nil {
		return nil, err
	}
	db.NoSync = noSync
	return db, nil
}
