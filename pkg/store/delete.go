package store

import (
	"bytes"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// deleteEvents removes the events stored under keys and subtracts them from w's counters; keys
// that are not stored are ignored. visit, when not nil, sees each deleted record's key and
// record (not verified; aliasing the page, so valid only during the call) in the order they
// are deleted: last key first.
//
// An ack deletes a contiguous run of keys (one batch, or several consecutive ones), so this
// walks one cursor instead of searching the tree twice per key (Get for the size, then
// Delete): one Seek to the last key, then Cursor.Delete and Cursor.Prev down to the first.
// Every key the cursor lands on is compared with the key expected next; when it differs (the
// keys are not one run: a key is missing, or lies elsewhere) that key is looked up with a Seek
// of its own, which is the per-key path. So only the given keys are ever deleted, and each
// one's size comes from the value the cursor holds, keeping the counters exact.
//
// The walk goes backwards on purpose. After Cursor.Delete, bbolt leaves the cursor where it
// was; when the leaf had been loaded into a node before the cursor reached it (an earlier
// write in this transaction), the deletion shifts the next element under the cursor and a
// Next would skip it (etcd-io/bbolt#146, boltdb/bolt#620), while on a leaf read from its page
// the cursor keeps reading the unchanged page. Prev is right in both cases: the element
// before the deleted one has not moved.
func (s *Store) deleteEvents(b *buckets, source string, keys [][]byte, w *writerState, visit func(k, rec []byte)) error {
	bk := b.lookup(source)
	if bk == nil || len(keys) == 0 {
		return nil
	}
	src := s.source(w, source, true)
	c := bk.Cursor()
	var k, v []byte // where the cursor is; k == nil: unknown, seek
	for i := len(keys) - 1; i >= 0; i-- {
		want := keys[i]
		if k == nil || !bytes.Equal(k, want) {
			if k, v = c.Seek(want); k == nil || !bytes.Equal(k, want) {
				k = nil // not stored
				continue
			}
		}
		if err := deleteAt(c, k, v, w, src, visit); err != nil {
			return err
		}
		k, v = c.Prev()
	}
	return nil
}

// deleteAt deletes the event under c, whose key and value are k and v, from the bucket and the
// counters (the totals and its source's).
func deleteAt(c *bolt.Cursor, k, v []byte, w *writerState, src *sourceState, visit func(k, rec []byte)) error {
	if visit != nil {
		visit(k, v)
	}
	n := int64(format.PayloadLen(v))
	if err := c.Delete(); err != nil {
		return err
	}
	w.Events--
	w.Bytes -= n
	src.events--
	src.bytes -= n
	return nil
}

// evictOldest deletes the oldest events of the queue, whatever their source (the source whose
// head key is the smallest, one event at a time), until at least bytes of them are gone (the
// Policy's answer), and returns how many it deleted; emptying the queue always makes room. The
// cursor goes back to First after each deletion rather than to Next (see deleteEvents on Next
// after Delete); First does not search. Should every bucket run empty while the byte counter
// still says otherwise, the counters were wrong: they are set to the truth (nothing queued),
// logged, so that the append fits instead of failing after everything was evicted. The retry
// states saved for batches that started among the evicted events go with them: no lease can
// find them any more, and they would stay in meta for good.
func (s *Store) evictOldest(b *buckets, bytes int64, w *writerState) (int, error) {
	s.sealer.wait(&s.scratch) // it may evict records appended earlier in the group
	type span struct{ first, last []byte }
	spans := map[string]*span{}
	evicted := 0
	for target := w.Bytes - bytes; w.Bytes > target; {
		var (
			name string
			c    *bolt.Cursor
			k, v []byte
		)
		for n, p := range w.sources {
			if p.events <= 0 {
				continue
			}
			bk := b.lookup(n)
			if bk == nil {
				continue
			}
			cc := bk.Cursor()
			if kk, vv := cc.First(); kk != nil && (k == nil || string(kk) < string(k)) {
				name, c, k, v = n, cc, kk, vv
			}
		}
		if k == nil {
			s.log.Warn("queue counters were off; reset to an empty queue", "events", w.Events, "bytes", w.Bytes)
			w.Events, w.Bytes = 0, 0
			for n := range w.sources {
				p := s.source(w, n, true)
				p.events, p.bytes = 0, 0
			}
			break
		}
		sp := spans[name]
		if sp == nil {
			sp = &span{first: append([]byte(nil), k...)}
			spans[name] = sp
		}
		sp.last = append(sp.last[:0], k...)
		if err := deleteAt(c, k, v, w, s.source(w, name, true), nil); err != nil {
			return evicted, err
		}
		evicted++
	}
	for name, sp := range spans {
		if err := clearRetry(b, name, sp.first, sp.last); err != nil {
			return evicted, err
		}
	}
	return evicted, nil
}
