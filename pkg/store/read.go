package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// Batch is a run of events from the head of the queue, copied out of bbolt.
type Batch struct {
	Keys   [][]byte // event keys, ascending
	Events [][]byte // payloads, parallel to Keys
	Bytes  int      // sum of len(Events)
	Retry  []byte   // saved retry state when this is the saved head batch, else nil

	events *[]byte // the block Events are slices of (pooled, see Release)
}

// Release hands the block that holds the batch's Events back to the store, for the events of
// a later read: a consumer that reads batch after batch then reuses a few blocks instead of
// allocating (and faulting in) fresh memory for every batch. Call it at most once, when
// nothing refers to Events any more; Keys are held apart and stay valid. Not calling it is
// never wrong: the garbage collector reclaims the block.
func (b *Batch) Release() {
	if b == nil || b.events == nil {
		return
	}
	p := b.events
	b.events, b.Events = nil, nil
	putBlock(p)
}

// Head returns up to maxEvents oldest events totalling at most maxBytes
// (always at least one), or nil when the queue is empty. When a retry state
// was saved for the head, the batch is the saved one (its event count,
// ignoring the limits) and carries the state. A head record that fails its
// checksum is removed (counted as dropped, reason "checksum") and never
// returned; a later failing record ends the batch before it.
func (s *Store) Head(ctx context.Context, maxEvents, maxBytes int) (*Batch, error) {
	if maxEvents <= 0 {
		maxEvents = 1
	}
	for {
		var out *Batch
		var bad []byte
		err := s.view(func(tx *bolt.Tx) error {
			out, bad = readHead(tx, maxEvents, maxBytes)
			return nil
		})
		if err != nil || bad == nil {
			return out, err
		}
		if err := s.submit(ctx, &request{kind: opDropCorrupt, keys: [][]byte{bad}}); err != nil {
			return nil, err
		}
	}
}

func readHead(tx *bolt.Tx, maxEvents, maxBytes int) (*Batch, []byte) {
	c := tx.Bucket(format.BucketEvents).Cursor()
	k, v := c.First()
	b, bad, _ := readRun(tx, c, k, v, runLimit{maxEvents, maxBytes})
	return b, bad
}

// DeadBatch is one dead-letter batch. Events is filled only by DeadGet.
type DeadBatch struct {
	ID     ksuid.KSUID // also the time it was dead-lettered
	Info   []byte      // opaque to the store (pkg/queue's DeadInfo)
	Count  int         // events
	Bytes  int64       // event bytes
	Events [][]byte
}

// DeadList returns every dead batch, oldest first, without events.
func (s *Store) DeadList() ([]DeadBatch, error) {
	var out []DeadBatch
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(format.BucketDead).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			d, err := decodeDeadBatch(k, v, false)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// DeadGet returns one dead batch with its events, or errs.ErrNotFound.
func (s *Store) DeadGet(id []byte) (DeadBatch, error) {
	var out DeadBatch
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(format.BucketDead).Get(id)
		if v == nil {
			return errs.ErrNotFound
		}
		var err error
		out, err = decodeDeadBatch(id, v, true)
		return err
	})
	return out, err
}

func decodeDeadBatch(k, v []byte, withEvents bool) (DeadBatch, error) {
	id, err := ksuid.FromBytes(k)
	if err != nil {
		return DeadBatch{}, err
	}
	p, err := format.DecodeRecord(v)
	if err != nil {
		return DeadBatch{}, errors.Join(errors.New("dead batch "+id.String()), err)
	}
	h, err := format.DecodeDeadHeader(p)
	if err != nil {
		return DeadBatch{}, err
	}
	d := DeadBatch{ID: id, Info: append([]byte(nil), h.Info...), Count: h.Events, Bytes: h.Bytes}
	if withEvents {
		d.Events, err = format.DeadEvents(h)
	}
	return d, err
}

// ReadAfter returns the run of events that follows key after, cut by the same limits as Head:
// up to maxEvents events totalling at most maxBytes (always at least one). It is what Head
// would return once every key up to and including after had left the queue, so that a
// consumer can read the next batch while the previous one is still being delivered: when the
// saved retry state belongs to the first key after after, the batch is the saved one (its
// event count, ignoring the limits) and carries the state. more reports that at least one
// event follows the batch. b is nil when no event follows after; it is nil with more true
// when the first event after after fails its checksum — Head, once the events before it are
// gone, removes it. ReadAfter never writes.
func (s *Store) ReadAfter(after []byte, maxEvents, maxBytes int) (b *Batch, more bool, err error) {
	if maxEvents <= 0 {
		maxEvents = 1
	}
	err = s.view(func(tx *bolt.Tx) error {
		b, more = readAfter(tx, after, maxEvents, maxBytes)
		return nil
	})
	return b, more, err
}

func readAfter(tx *bolt.Tx, after []byte, maxEvents, maxBytes int) (*Batch, bool) {
	c := tx.Bucket(format.BucketEvents).Cursor()
	k, v := c.Seek(after)
	if k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	b, bad, more := readRun(tx, c, k, v, runLimit{maxEvents, maxBytes})
	if bad != nil {
		return nil, true
	}
	return b, more
}

// runLimit is how much one batch may hold: events, and bytes of them (-1: no byte limit).
type runLimit struct{ events, bytes int }

// readRun reads the batch that starts at the cursor c, positioned on k, v: up to maxEvents
// events totalling at most maxBytes (always at least one), or the saved batch when the retry
// state belongs to k. It verifies every record and stops before the first that fails; when
// that is k itself it returns a nil batch and bad, a copy of k. more reports that an event
// follows the batch. k == nil returns nothing.
//
// Keys are copied into one allocation and events into one pooled block (see Batch.Release): a
// first walk over the run (which reads only the lengths) finds how many events the batch takes
// and their size, so each is taken once at its size, rather than one allocation per event.
func readRun(tx *bolt.Tx, c *bolt.Cursor, k, v []byte, lim runLimit) (b *Batch, bad []byte, more bool) {
	maxEvents, maxBytes := lim.events, lim.bytes
	if k == nil {
		return nil, nil, false
	}
	retry, saved, stopAt := savedRetry(tx.Bucket(format.BucketMeta), k)
	if saved > 0 {
		maxEvents, maxBytes = saved, -1
	}
	n, size := runSize(c, k, v, maxEvents, maxBytes, stopAt)
	maxEvents = n                     // the walk below stops where runSize did, before the next saved batch too
	k, v = c.Seek(k)                  // back to the first key (k is still valid: the transaction holds its page)
	keys := make([]byte, 0, n*len(k)) // every key is a KSUID: n of k's length
	block := getBlock(size - cap(keys))
	b = &Batch{Retry: retry, Keys: make([][]byte, 0, n), Events: make([][]byte, 0, n), events: block}
	arena := *block
	defer func() { *block = arena }()
	for ; k != nil && len(b.Keys) < maxEvents; k, v = c.Next() {
		p, err := format.DecodeRecord(v)
		if err != nil {
			if len(b.Keys) == 0 {
				return nil, append([]byte(nil), k...), true
			}
			return b, nil, true
		}
		if len(b.Keys) > 0 && maxBytes >= 0 && b.Bytes+len(p) > maxBytes {
			return b, nil, true
		}
		// Each key and event is a full slice expression into its block, so that appending to
		// one cannot overwrite the next (nor, should the run have changed between the walks,
		// which the transaction rules out, an append that outgrows a block move what is taken).
		n := len(keys)
		keys = append(keys, k...)
		b.Keys = append(b.Keys, keys[n:len(keys):len(keys)])
		n = len(arena)
		arena = append(arena, p...)
		b.Events = append(b.Events, arena[n:len(arena):len(arena)])
		b.Bytes += len(p)
	}
	return b, nil, k != nil
}

// runSize walks the run from k, v (where c is positioned) as readRun cuts it, and returns how
// many events it holds and the bytes of their keys and payloads. It reads only lengths, so a
// record that fails its checksum is counted: readRun, which verifies, ends the batch there.
// c is left past the run.
func runSize(c *bolt.Cursor, k, v []byte, maxEvents, maxBytes int, stopAt []byte) (n, size int) {
	total := 0
	for ; k != nil && n < maxEvents; k, v = c.Next() {
		if n > 0 && stopAt != nil && bytes.Compare(k, stopAt) >= 0 {
			break
		}
		p := max(len(v)-format.RecordHeader, 0)
		if n > 0 && maxBytes >= 0 && total+p > maxBytes {
			break
		}
		n++
		total += p
		size += len(k) + p
	}
	return n, size
}

// savedRetry looks up the retry state saved for the batch that starts at key k: its state and
// event count (0 when none was saved), and stopAt, the first key of the next batch with a saved
// state (nil when none): a run read from k ends before it, so that every batch that was in
// flight comes back whole with its own state after a restart, whatever was acknowledged
// around it. The single head state of older files (format.MetaRetry) is honoured too.
func savedRetry(meta *bolt.Bucket, k []byte) (retry []byte, count int, stopAt []byte) {
	if rv := meta.Get(format.MetaRetry); rv != nil {
		if p, err := format.DecodeRecord(rv); err == nil && len(p) >= 24 && bytes.Equal(p[:20], k) {
			retry, count = append([]byte{}, p[24:]...), int(binary.BigEndian.Uint32(p[20:24]))
		}
	}
	c := meta.Cursor()
	mk, mv := c.Seek(retryKey(k))
	if mk != nil && bytes.Equal(mk[len(format.RetryPrefix):], k) && bytes.HasPrefix(mk, []byte(format.RetryPrefix)) {
		if p, err := format.DecodeRecord(mv); err == nil && len(p) >= 24 && bytes.Equal(p[:20], k) {
			retry, count = append([]byte{}, p[24:]...), int(binary.BigEndian.Uint32(p[20:24]))
		}
		mk, _ = c.Next()
	}
	if mk != nil && bytes.HasPrefix(mk, []byte(format.RetryPrefix)) {
		stopAt = append([]byte(nil), mk[len(format.RetryPrefix):]...)
	}
	return retry, count, stopAt
}
