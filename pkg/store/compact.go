package store

import (
	"context"
	"fmt"
	"os"

	"github.com/outboxhq/outbox/pkg/store/internal/datadir"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	bolt "go.etcd.io/bbolt"
)

// compactTxBytes bounds one copy transaction of bbolt.Compact. The dirty
// pages of an open write transaction (and their copies at commit) live on
// the Go heap, so this is what a compaction adds to the heap: 16 MiB took
// the agent's heap from 6 to 50-60 MB; 2 MiB keeps it within a few MB.
const compactTxBytes = 2 << 20

// compact copies the live buckets into a fresh file, fsyncs it, renames it
// over the data file and reopens. Writer goroutine only, so no append can
// slip in between the copy and the swap.
func (s *Store) compact() (err error) {
	if e := s.failed.Load(); e != nil {
		return e
	}
	defer func() {
		if r := recover(); r != nil { // a damaged page of the source; bbolt's View rolled back
			err = s.corrupted(r)
		}
	}()
	before, _ := os.Stat(s.path)
	tmp := s.path + ".compact"
	_ = os.Remove(tmp)
	// The copy is not synced per transaction (NoSync): the file is fsynced
	// once below before it replaces anything, and a crash meanwhile leaves
	// only the temporary file. Mapping about the live size up front saves
	// the remaps, each of which copies every dirty node of the open copy tx.
	dst, err := format.OpenDB(tmp, true, copyMmapSize(s.liveEstimate()))
	if err != nil {
		return fmt.Errorf("compact: create %s: %w", tmp, err)
	}
	if err := bolt.Compact(dst, s.db, compactTxBytes); err != nil {
		_ = dst.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("compact: copy: %w", err)
	}
	if err := dst.Sync(); err != nil {
		_ = dst.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("compact: sync: %w", err)
	}
	if err := dst.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact: close copy: %w", err)
	}
	if err := s.swap(tmp); err != nil {
		return err
	}
	s.compacted()
	if after, err := os.Stat(s.path); err == nil && before != nil {
		s.log.Info("data file compacted", "path", s.path, "bytes_before", before.Size(), "bytes_after", after.Size())
	}
	return nil
}

// swap closes the data file, renames tmp over it and reopens it. A failed
// reopen leaves the store failed (every later write returns the error).
func (s *Store) swap(tmp string) error {
	s.dbmu.Lock()
	defer s.dbmu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("compact: close: %w", err)
	}
	renameErr := os.Rename(tmp, s.path)
	if renameErr == nil {
		renameErr = datadir.SyncDir(s.dir)
	}
	db, err := format.OpenDB(s.path, s.opt.NoSync, 0)
	if err != nil {
		ce := &CorruptError{Path: s.path, Dir: s.dir, Err: fmt.Errorf("reopen after compaction: %w", err)}
		s.failed.Store(ce)
		if s.opt.OnCorrupt != nil {
			s.opt.OnCorrupt(ce)
		}
		return ce
	}
	s.db = db
	if renameErr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compact: rename: %w", renameErr)
	}
	return nil
}

// liveEstimate is the bytes a compacted file needs: payloads plus about 64
// bytes of key, record header and page overhead per event.
func (s *Store) liveEstimate() int64 {
	return s.w.Bytes + s.w.DeadBytes + 64*(s.w.Events+s.w.DeadEvents)
}

// copyMmapSize is the initial mapping of a compaction's destination: the
// largest power of two (whole GiBs above 1 GiB) not above live. bbolt grows
// a file under 16 MiB to its whole mapping, so mapping more than the copy
// needs would make the compacted file larger; mapping less costs one remap.
func copyMmapSize(live int64) int {
	const gib = 1 << 30
	switch {
	case live < 64<<10:
		return 0
	case live >= gib:
		return int(live / gib * gib)
	}
	m := int64(64 << 10)
	for m*2 <= live {
		m *= 2
	}
	return int(m)
}

// Compact compacts the data file of dir offline (`outbox compact`), with the keys its records
// need (nil for a plain file; see Options.Keys). It takes the directory lock, so it fails with
// errs.ErrLocked while an agent runs.
func Compact(dir string, keys *keyring.Keyring) (before, after int64, err error) {
	s, err := Open(dir, Options{CompactMinBytes: -1, Keys: keys})
	if err != nil {
		return 0, 0, err
	}
	before = s.Stats().FileBytes
	err = s.Compact(context.Background())
	after = s.Stats().FileBytes
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return before, after, err
}
