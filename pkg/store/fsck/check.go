package fsck

import (
	"fmt"
	"runtime/debug"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	bolt "go.etcd.io/bbolt"
)

// The check of every record (the second half of the full check, after the structure check):
// read through bbolt, so only on a file ValidateFile passed.

// CheckResult is what a full check found.
type CheckResult struct {
	Actual, Stored format.Counts
	// Seal is what the events and dead records are: the keys that sealed them, and whether a
	// plain one is among them (the exact seal set).
	Seal format.SealSet
}

// CheckRecords verifies every record's CRC (a sealed record's tag, with kr, whose keys the
// records need) and the dead-letter headers of a file whose structure ValidateFile has checked
// (bbolt's own Tx.Check is never run: it reads in a goroutine of its own, where a damaged page
// would crash the process). With keys, a plain record of events or dead fails the check too (an
// encrypted queue holds none), unless plainOK (the store seals those at start). It never
// writes. quit (may be nil) aborts it.
func CheckRecords(db *bolt.DB, kr *keyring.Keyring, plainOK bool, quit <-chan struct{}) (res CheckResult, err error) {
	codec := format.NewCodec(kr)
	var scratch format.Scratch
	var buf []byte
	open := func(bucket, k, v []byte) ([]byte, error) {
		var p []byte
		var err error
		if plainOK {
			buf, p, err = codec.OpenAny(buf[:0], bucket, k, v, &scratch)
		} else {
			buf, p, err = codec.Open(buf[:0], bucket, k, v, &scratch)
		}
		if err != nil {
			return nil, err
		}
		if id, ok := format.SealedBy(v); ok {
			res.Seal = res.Seal.With(id)
		} else {
			res.Seal.Plain = true
		}
		return p, nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil { // db.View has rolled back
			err = PanicErr(r)
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
			if res.Stored, err = format.ReadCounts(meta); err != nil {
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
				p, err := open(format.BucketEvents, k, v)
				if err != nil {
					return fmt.Errorf("event %s: %w", format.KeyString(k), err)
				}
				res.Actual.Events++
				res.Actual.Bytes += int64(len(p))
				if aborted() {
					return ErrCheckAborted
				}
			}
		}
		if b := tx.Bucket(format.BucketDead); b != nil {
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				p, err := open(format.BucketDead, k, v)
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
				res.Actual.DeadBatches++
				res.Actual.DeadEvents += int64(h.Events)
				res.Actual.DeadBytes += h.Bytes
				if aborted() {
					return ErrCheckAborted
				}
			}
		}
		return nil
	})
	return res, err
}
