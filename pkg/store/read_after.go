package store

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// arenaChunk is the size of the blocks ReadAfter copies event bytes into: one allocation per
// block instead of one per event.
const arenaChunk = 256 << 10

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
	c := tx.Bucket(bucketEvents).Cursor()
	k, v := c.Seek(after)
	if k != nil && bytes.Equal(k, after) {
		k, v = c.Next()
	}
	b, bad, more := readRun(tx, c, k, v, maxEvents, maxBytes)
	if bad != nil {
		return nil, true
	}
	return b, more
}

// readRun reads the batch that starts at the cursor c, positioned on k, v: up to maxEvents
// events totalling at most maxBytes (always at least one), or the saved batch when the retry
// state belongs to k. It verifies every record and stops before the first that fails; when
// that is k itself it returns a nil batch and bad, a copy of k. more reports that an event
// follows the batch. Keys and events are copied into arenas of arenaChunk bytes: one
// allocation per block instead of two per event. k == nil returns nothing.
func readRun(tx *bolt.Tx, c *bolt.Cursor, k, v []byte, maxEvents, maxBytes int) (b *Batch, bad []byte, more bool) {
	if k == nil {
		return nil, nil, false
	}
	var retry []byte
	if rv := tx.Bucket(bucketMeta).Get(metaRetry); rv != nil {
		if p, err := decodeRecord(rv); err == nil && len(p) >= 24 && bytes.Equal(p[:20], k) {
			maxEvents = int(binary.BigEndian.Uint32(p[20:24]))
			maxBytes = -1
			retry = append([]byte{}, p[24:]...)
		}
	}
	b = &Batch{Retry: retry, Keys: make([][]byte, 0, min(maxEvents, 1024)), Events: make([][]byte, 0, min(maxEvents, 1024))}
	var arena []byte
	for ; k != nil && len(b.Keys) < maxEvents; k, v = c.Next() {
		p, err := decodeRecord(v)
		if err != nil {
			if len(b.Keys) == 0 {
				return nil, append([]byte(nil), k...), true
			}
			return b, nil, true
		}
		if len(b.Keys) > 0 && maxBytes >= 0 && b.Bytes+len(p) > maxBytes {
			return b, nil, true
		}
		if cap(arena)-len(arena) < len(k)+len(p) {
			arena = make([]byte, 0, max(arenaChunk, len(k)+len(p)))
		}
		// Each key and event is a full slice expression into the arena, so that appending to
		// one cannot overwrite the next.
		n := len(arena)
		arena = append(arena, k...)
		b.Keys = append(b.Keys, arena[n:len(arena):len(arena)])
		n = len(arena)
		arena = append(arena, p...)
		b.Events = append(b.Events, arena[n:len(arena):len(arena)])
		b.Bytes += len(p)
	}
	return b, nil, k != nil
}
