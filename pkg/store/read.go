package store

import (
	"bytes"
	"context"
	"encoding/binary"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// Head returns up to maxEvents oldest events totalling at most maxBytes
// (always at least one), or nil when the queue is empty. When a retry state
// was saved for the head, the batch is the saved one (its event count,
// ignoring the limits) and carries the state. A head record that fails its
// checksum is removed (counted as dropped, reason "checksum") and never
// returned; a later failing record ends the batch before it.
func (s *Store) Head(ctx context.Context, maxEvents, maxBytes int) (*Batch, error) {
	return s.HeadIn(ctx, DefaultSource, maxEvents, maxBytes)
}

// HeadIn is Head of source's events ("" is DefaultSource); the batch carries the source's name.
func (s *Store) HeadIn(ctx context.Context, source string, maxEvents, maxBytes int) (*Batch, error) {
	source = sourceName(source)
	if maxEvents <= 0 {
		maxEvents = 1
	}
	for {
		var out *Batch
		var bad []byte
		err := s.view(func(tx *bolt.Tx) error {
			out, bad = s.readHead(tx, source, maxEvents, maxBytes)
			return nil
		})
		if err != nil || bad == nil {
			return out, err
		}
		if err := s.submit(ctx, &request{kind: opDropCorrupt, source: source, keys: [][]byte{bad}}); err != nil {
			return nil, err
		}
	}
}

func (s *Store) readHead(tx *bolt.Tx, source string, maxEvents, maxBytes int) (*Batch, []byte) {
	bk := tx.Bucket(format.EventsBucket(source))
	if bk == nil {
		return nil, nil
	}
	c := bk.Cursor()
	k, v := c.First()
	b, bad, _ := s.readRun(tx, source, c, k, v, runLimit{maxEvents, maxBytes})
	return b, bad
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
	return s.ReadAfterIn(DefaultSource, after, maxEvents, maxBytes)
}

// ReadAfterIn is ReadAfter within source's events ("" is DefaultSource); a nil after reads
// from the source's head, without removing a head record that fails its checksum (HeadIn
// does). The batch carries the source's name.
func (s *Store) ReadAfterIn(source string, after []byte, maxEvents, maxBytes int) (b *Batch, more bool, err error) {
	source = sourceName(source)
	if maxEvents <= 0 {
		maxEvents = 1
	}
	err = s.view(func(tx *bolt.Tx) error {
		b, more = s.readAfter(tx, source, after, maxEvents, maxBytes)
		return nil
	})
	return b, more, err
}

func (s *Store) readAfter(tx *bolt.Tx, source string, after []byte, maxEvents, maxBytes int) (*Batch, bool) {
	bk := tx.Bucket(format.EventsBucket(source))
	if bk == nil {
		return nil, false
	}
	c := bk.Cursor()
	var k, v []byte
	if after == nil {
		k, v = c.First()
	} else if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	b, bad, more := s.readRun(tx, source, c, k, v, runLimit{maxEvents, maxBytes})
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
// follows the batch. k == nil returns nothing. A saved retry state that cannot be decoded is
// logged and read as zero: the batch starts its retries afresh rather than never leaving.
//
// Keys are copied into one allocation and events into one pooled block (see Batch.Release): a
// first walk over the run (which reads only the lengths) finds how many events the batch takes
// and their size, so each is taken once at its size, rather than one allocation per event.
func (s *Store) readRun(tx *bolt.Tx, source string, c *bolt.Cursor, k, v []byte, lim runLimit) (b *Batch, bad []byte, more bool) {
	maxEvents, maxBytes := lim.events, lim.bytes
	if k == nil {
		return nil, nil, false
	}
	retry, saved, stopAt := savedRetry(tx.Bucket(format.BucketMeta), source, k)
	if saved > 0 {
		maxEvents, maxBytes = saved, -1
	}
	n, size := runSize(c, k, v, maxEvents, maxBytes, stopAt)
	maxEvents = n                     // the walk below stops where runSize did, before the next saved batch too
	k, v = c.Seek(k)                  // back to the first key (k is still valid: the transaction holds its page)
	keys := make([]byte, 0, n*len(k)) // every key is a KSUID: n of k's length
	block := getBlock(size - cap(keys))
	b = &Batch{keys: make([][]byte, 0, n), Events: make([][]byte, 0, n), events: block, Source: source}
	b.Retry = retry // copied out of the map by savedRetry
	arena := *block
	defer func() { *block = arena }()
	var scratch format.Scratch
	bucketName := format.EventsBucket(source)
	for ; k != nil && len(b.keys) < maxEvents; k, v = c.Next() {
		if len(b.keys) > 0 && maxBytes >= 0 && b.Bytes+format.PayloadLen(v) > maxBytes {
			return b, nil, true
		}
		// Verified (a plain record's CRC, a sealed one's tag) and copied into the block in one
		// step: a sealed record is opened straight into it.
		n := len(arena)
		var err error
		arena, _, err = s.codec.Open(arena, bucketName, k, v, &scratch)
		if err != nil {
			if len(b.keys) == 0 {
				return nil, append([]byte(nil), k...), true
			}
			return b, nil, true
		}
		// Each key and event is a full slice expression into its block, so that appending to
		// one cannot overwrite the next (nor, should the run have changed between the walks,
		// which the transaction rules out, an append that outgrows a block move what is taken).
		b.Events = append(b.Events, arena[n:len(arena):len(arena)])
		b.Bytes += len(arena) - n
		n = len(keys)
		keys = append(keys, k...)
		b.keys = append(b.keys, keys[n:len(keys):len(keys)])
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
		p := format.PayloadLen(v)
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
func savedRetry(meta *bolt.Bucket, source string, k []byte) (retry []byte, count int, stopAt []byte) {
	prefix := []byte(format.RetryPrefixOf(source))
	if rv := meta.Get(format.MetaRetry); rv != nil {
		if p, err := format.DecodeRecord(rv); err == nil && len(p) >= 24 && bytes.Equal(p[:20], k) {
			retry, count = append([]byte{}, p[24:]...), int(binary.BigEndian.Uint32(p[20:24]))
		}
	}
	c := meta.Cursor()
	mk, mv := c.Seek(retryKey(source, k))
	if mk != nil && bytes.HasPrefix(mk, prefix) && bytes.Equal(mk[len(prefix):], k) {
		if p, err := format.DecodeRecord(mv); err == nil && len(p) >= 24 && bytes.Equal(p[:20], k) {
			retry, count = append([]byte{}, p[24:]...), int(binary.BigEndian.Uint32(p[20:24]))
		}
		mk, _ = c.Next()
	}
	if mk != nil && bytes.HasPrefix(mk, prefix) {
		stopAt = append([]byte(nil), mk[len(prefix):]...)
	}
	return retry, count, stopAt
}
