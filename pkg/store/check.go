package store

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// errCheckAborted ends a background check when the store closes.
var errCheckAborted = errors.New("check aborted")

// checkResult is what a full check found.
type checkResult struct {
	actual, stored format.Counts
}

// checkDB verifies every record's CRC and the dead-letter headers of a file
// whose structure validateFile has checked (bbolt's own Tx.Check is never
// run: it reads in a goroutine of its own, where a damaged page would crash
// the process). It never writes. quit (may be nil) aborts it.
func checkDB(db *bolt.DB, quit <-chan struct{}) (res checkResult, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil { // db.View has rolled back
			err = panicErr(r)
		}
	}()
	err = db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(format.BucketMeta); meta != nil {
			if err := meta.ForEach(func(k, v []byte) error {
				if _, err := format.DecodeRecord(v); err != nil {
					return fmt.Errorf("meta %q: %w", k, err)
				}
				return nil
			}); err != nil {
				return err
			}
			if res.stored, err = format.ReadCounts(meta); err != nil {
				return err
			}
		}
		n := 0
		aborted := func() bool {
			n++
			if quit == nil || n%4096 != 0 {
				return false
			}
			select {
			case <-quit:
				return true
			default:
				return false
			}
		}
		if b := tx.Bucket(format.BucketEvents); b != nil {
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				p, err := format.DecodeRecord(v)
				if err != nil {
					return fmt.Errorf("event %s: %w", format.KeyString(k), err)
				}
				res.actual.Events++
				res.actual.Bytes += int64(len(p))
				if aborted() {
					return errCheckAborted
				}
			}
		}
		if b := tx.Bucket(format.BucketDead); b != nil {
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				p, err := format.DecodeRecord(v)
				if err != nil {
					return fmt.Errorf("dead batch %s: %w", format.KeyString(k), err)
				}
				h, err := format.DecodeDeadHeader(p)
				if err != nil {
					return fmt.Errorf("dead batch %s: %w", format.KeyString(k), err)
				}
				if _, err := format.DeadEvents(h); err != nil {
					return fmt.Errorf("dead batch %s: %w", format.KeyString(k), err)
				}
				res.actual.DeadBatches++
				res.actual.DeadEvents += int64(h.Events)
				res.actual.DeadBytes += h.Bytes
				if aborted() {
					return errCheckAborted
				}
			}
		}
		return nil
	})
	return res, err
}

// backgroundCheck checks a large file while intake runs. On failure it stops
// every write (they return the *CorruptError) and calls OnCorrupt.
func (s *Store) backgroundCheck() {
	defer s.checking.Store(false)
	s.dbmu.RLock()
	res, err := checkDB(s.db, s.quit)
	s.dbmu.RUnlock()
	if errors.Is(err, errCheckAborted) {
		return
	}
	if err != nil {
		ce := &CorruptError{Path: s.path, Dir: s.dir, Err: err}
		s.failed.Store(ce)
		s.log.Error("data file failed its check; intake stopped", "path", s.path, "error", err)
		if s.opt.OnCorrupt != nil {
			s.opt.OnCorrupt(ce)
		}
		return
	}
	s.log.Info("data file check passed", "path", s.path, "events", res.actual.Events)
	s.fixCounts(res)
}

// fixCounts corrects the persisted counters when a check found them off.
func (s *Store) fixCounts(res checkResult) {
	if res.actual == res.stored {
		return
	}
	d := format.Counts{
		Events: res.actual.Events - res.stored.Events, Bytes: res.actual.Bytes - res.stored.Bytes,
		DeadBatches: res.actual.DeadBatches - res.stored.DeadBatches,
		DeadEvents:  res.actual.DeadEvents - res.stored.DeadEvents, DeadBytes: res.actual.DeadBytes - res.stored.DeadBytes,
	}
	// Fewer records than counted: a damaged page header can hide records
	// (the file still passes every check), so say so where an operator looks.
	s.log.Warn("stored counters were off; corrected (fewer events than counted can mean a damaged page: outbox recover --force reports what it can read)",
		"path", s.path, "events_delta", d.Events, "bytes_delta", d.Bytes, "dead_batches_delta", d.DeadBatches)
	_ = s.submit(context.Background(), &request{kind: opFixCounts, delta: d})
}
