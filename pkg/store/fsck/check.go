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
	// ActualSources and StoredSources are each source's events and bytes (Events and Bytes
	// only), counted and as meta holds them (the default source's: the totals less the others').
	ActualSources, StoredSources map[string]format.Counts
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
		res.ActualSources, res.StoredSources = map[string]format.Counts{}, map[string]format.Counts{}
		def := format.Counts{Events: res.Stored.Events, Bytes: res.Stored.Bytes}
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
		if err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			src, ok := format.SourceOfBucket(name)
			if !ok {
				return nil
			}
			var got format.Counts
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				p, err := open(name, k, v)
				if err != nil {
					return fmt.Errorf("event %s of source %s: %w", format.KeyString(k), src, err)
				}
				got.Events++
				got.Bytes += int64(len(p))
				if aborted() {
					return ErrCheckAborted
				}
			}
			res.Actual.Events += got.Events
			res.Actual.Bytes += got.Bytes
			res.ActualSources[src] = got
			if src != format.DefaultSource {
				var stored format.Counts
				if meta := tx.Bucket(format.BucketMeta); meta != nil {
					if v := meta.Get(format.SourceCountsKey(src)); v != nil {
						e, n, err := format.DecodeSourceCounts(v)
						if err != nil {
							return fmt.Errorf("source %s: %w", src, err)
						}
						stored = format.Counts{Events: e, Bytes: n}
					}
				}
				res.StoredSources[src] = stored
				def.Events -= stored.Events
				def.Bytes -= stored.Bytes
			}
			return nil
		}); err != nil {
			return err
		}
		res.StoredSources[format.DefaultSource] = def
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
