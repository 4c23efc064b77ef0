package store

import (
	"context"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// compactTxBytes bounds one copy transaction of bbolt.Compact.
const compactTxBytes = 16 << 20

// maybeCompact compacts when the file is much larger than the live data
// (more than 2 × live + 1 MiB) and either the queue is drained (file over
// 1 MiB) or its live data is under 16 MiB (file over CompactMinBytes). It runs on the writer goroutine, so no
// append can slip in between the copy and the swap.
func (s *Store) maybeCompact() {
	if s.opt.CompactMinBytes < 0 || s.checking.Load() || s.failed.Load() != nil {
		return
	}
	live := s.w.Bytes + s.w.DeadBytes + 64*(s.w.Events+s.w.DeadEvents)
	if s.w.Events > 0 && live > 16<<20 {
		return
	}
	floor := s.opt.CompactMinBytes
	if s.w.Events == 0 {
		// Drained: rewriting costs only the dead letters, so go back to a
		// near-minimal file whenever 1 MiB or more is garbage.
		floor = min(floor, 1<<20)
	}
	fi, err := os.Stat(s.path)
	if err != nil || fi.Size() <= floor || fi.Size() <= 2*live+1<<20 {
		return
	}
	if err := s.compact(); err != nil {
		s.log.Warn("online compaction failed; will retry after the next drain", "error", err)
	}
}

// compact copies the live buckets into a fresh file, fsyncs it, renames it
// over the data file and reopens. Writer goroutine only.
func (s *Store) compact() error {
	if e := s.failed.Load(); e != nil {
		return e
	}
	before, _ := os.Stat(s.path)
	tmp := s.path + ".compact"
	_ = os.Remove(tmp)
	dst, err := openDB(tmp, false, 0)
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
	s.dbmu.Lock()
	defer s.dbmu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("compact: close: %w", err)
	}
	renameErr := os.Rename(tmp, s.path)
	if renameErr == nil {
		renameErr = syncDir(s.dir)
	}
	db, err := openDB(s.path, s.opt.NoSync, 0)
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
	if after, err := os.Stat(s.path); err == nil && before != nil {
		s.log.Info("data file compacted", "path", s.path, "bytes_before", before.Size(), "bytes_after", after.Size())
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Compact compacts the data file of dir offline (`outbox compact`). It takes
// the directory lock, so it fails with ErrLocked while an agent runs.
func Compact(dir string) (before, after int64, err error) {
	s, err := Open(dir, Options{CompactMinBytes: -1})
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
