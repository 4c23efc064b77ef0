package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/segmentio/ksuid"
)

// apply runs one request inside the group's transaction, updating w.
func (s *Store) apply(b buckets, r *request, w *writerState) error {
	switch r.kind {
	case opAppend:
		return s.applyAppend(b, *r.block, r.count, r.need, w)
	case opDelete:
		if err := deleteEvents(b, r.keys, w, nil); err != nil {
			return err
		}
		if len(r.keys) > 0 {
			return clearRetry(b, r.keys[0], r.keys[len(r.keys)-1])
		}
		return nil
	case opDead:
		return s.applyDead(b, r.keys, r.info, w)
	case opRetry:
		if b.events.Get(r.keys[0]) == nil {
			return nil
		}
		if err := clearLegacyRetry(b, r.keys[0]); err != nil {
			return err
		}
		v := append(append([]byte(nil), r.keys[0]...), binary.BigEndian.AppendUint32(nil, uint32(r.count))...)
		return b.meta.Put(retryKey(r.keys[0]), encodeRecord(append(v, r.info...)))
	case opReplay:
		return s.applyReplay(b, r, w)
	case opPurge:
		return s.applyPurge(b, r, w)
	case opDropCorrupt:
		n := w.Events
		if err := deleteEvents(b, r.keys[:1], w, nil); err != nil {
			return err
		}
		if w.Events < n {
			s.drop(w, ReasonChecksum, 1, "key", fmt.Sprintf("%x", r.keys[0]))
		}
		return clearRetry(b, r.keys[0], r.keys[0])
	case opFixCounts:
		w.Events += r.delta.Events
		w.Bytes += r.delta.Bytes
		w.DeadBatches += r.delta.DeadBatches
		w.DeadEvents += r.delta.DeadEvents
		w.DeadBytes += r.delta.DeadBytes
		return nil
	}
	return fmt.Errorf("unknown op %d", r.kind)
}

// appendBlock builds, on the caller's goroutine (so the writer, which every
// producer waits on, does not), one block holding every event's record, each
// after its record's length (4 bytes) and a key slot that the writer fills in:
// the CRC and copy of each event are off the writer's path, and the request
// needs nothing of the caller's slices once it is built. bbolt keeps referring to keys and values until the
// transaction ends, which the block outlives: the writer hands it back to the
// pool (putBlock) only after that, so appends reuse blocks instead of
// allocating one per request.
func appendBlock(events [][]byte) *[]byte {
	n := 0
	for _, e := range events {
		n += blockEntryHeader + recordHeader + len(e)
	}
	p := getBlock(n)
	buf := *p
	for _, e := range events {
		buf = binary.BigEndian.AppendUint32(buf, uint32(recordHeader+len(e)))
		buf = append(buf, ksuid.Nil[:]...)
		buf = appendRecord(buf, e)
	}
	*p = buf
	return p
}

// blockEntryHeader is what precedes each record in an append block: its length and its key.
const blockEntryHeader = 4 + len(ksuid.Nil)

// applyAppend stores the count events of block (need bytes in all; Append has already
// refused events that could never fit, so eviction can always make room).
func (s *Store) applyAppend(b buckets, block []byte, count int, need int64, w *writerState) error {
	if err := s.admit(b, need, false, w); err != nil {
		return err
	}
	now := s.opt.Now()
	var first ksuid.KSUID
	off := 0
	for i := range count {
		k := w.nextKey(now)
		if i == 0 {
			first = k
		}
		size := int(binary.BigEndian.Uint32(block[off:]))
		off += 4
		key := block[off : off+len(k) : off+len(k)]
		copy(key, k[:])
		off += len(k)
		end := off + size
		if err := b.events.Put(key, block[off:end:end]); err != nil {
			return err
		}
		off = end
		w.Events++
		w.Bytes += int64(size - recordHeader)
		w.enqueued++
	}
	s.pendingRuns = append(s.pendingRuns, intakeRun{first: first, last: w.last, at: now})
	return nil
}

// nextKey returns a KSUID for now, strictly greater than every earlier one.
func (w *writerState) nextKey(now time.Time) ksuid.KSUID {
	if now.Unix() > w.last.Time().Unix() || w.last.IsNil() {
		if k, err := ksuid.NewRandomWithTime(now); err == nil && ksuid.Compare(k, w.last) > 0 {
			w.last = k
			return k
		}
	}
	w.last = w.last.Next()
	return w.last
}

// clearRetry deletes the retry states saved for batches that start between first and last
// (the keys of one batch, or of several consecutive ones acknowledged together), in either
// form (see retryKey).
func clearRetry(b buckets, first, last []byte) error {
	if err := clearLegacyRetry(b, first); err != nil {
		return err
	}
	var gone [][]byte
	c := b.meta.Cursor()
	for k, _ := c.Seek(retryKey(first)); k != nil && bytes.HasPrefix(k, []byte(retryPrefix)) &&
		bytes.Compare(k[len(retryPrefix):], last) <= 0; k, _ = c.Next() {
		gone = append(gone, append([]byte(nil), k...))
	}
	for _, k := range gone {
		if err := b.meta.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// clearLegacyRetry deletes the single head retry state of files written before several
// batches could be in flight, when it belongs to headKey.
func clearLegacyRetry(b buckets, headKey []byte) error {
	if v := b.meta.Get(metaRetry); v != nil && len(v) >= recordHeader+20 && bytes.Equal(v[recordHeader:recordHeader+20], headKey) {
		return b.meta.Delete(metaRetry)
	}
	return nil
}

// retryKey is the meta key of the retry state of the batch whose first event key is headKey:
// one per batch in flight, so that each keeps its own across a restart. The prefix sorts
// before every other meta key ("counts", "format", "retry"), and a cursor seek finds the next
// saved batch at or after a key.
func retryKey(headKey []byte) []byte {
	return append(append(make([]byte, 0, len(retryPrefix)+len(headKey)), retryPrefix...), headKey...)
}

// retryPrefix starts every per-batch retry key in meta.
const retryPrefix = "r/"

func (s *Store) applyDead(b buckets, keys [][]byte, info []byte, w *writerState) error {
	events := make([][]byte, 0, len(keys))
	err := deleteEvents(b, keys, w, func(p []byte) { events = append(events, append([]byte(nil), p...)) })
	if err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	slices.Reverse(events) // deleted last key first
	if err := clearRetry(b, keys[0], keys[len(keys)-1]); err != nil {
		return err
	}
	id := w.nextKey(s.opt.Now())
	payload := encodeDead(info, events)
	if err := b.dead.Put(id[:], encodeRecord(payload)); err != nil {
		return err
	}
	h, _ := decodeDeadHeader(payload)
	w.DeadBatches++
	w.DeadEvents += int64(h.events)
	w.DeadBytes += h.bytes
	if s.opt.Policy == nil {
		return nil
	}
	for excess := s.opt.Policy.DeadExcess(w.DeadBytes); excess > 0; {
		k, v := b.dead.Cursor().First()
		if k == nil {
			break
		}
		dh := deadHeaderOf(v)
		if err := b.dead.Delete(k); err != nil {
			return err
		}
		w.DeadBatches--
		w.DeadEvents -= int64(dh.events)
		w.DeadBytes -= dh.bytes
		excess -= max(dh.bytes, 1)
		s.drop(w, ReasonDeadOverflow, dh.events, "dead_id", ksuidString(k))
	}
	return nil
}

// admit asks the policy whether need more bytes of events may be stored, and evicts from the
// head what it says (counted as dropped).
func (s *Store) admit(b buckets, need int64, replay bool, w *writerState) error {
	if s.opt.Policy == nil {
		return nil
	}
	evict, err := s.opt.Policy.Admit(w.Bytes, need, replay)
	if err != nil || evict <= 0 {
		return err
	}
	evicted, err := s.evictOldest(b, evict, w)
	if err != nil {
		return err
	}
	s.drop(w, ReasonDropOldest, evicted)
	return nil
}

// deadHeaderOf decodes a dead record's header; a broken one counts as empty.
func deadHeaderOf(v []byte) deadHeader {
	p, err := decodeRecord(v)
	if err != nil {
		return deadHeader{}
	}
	h, _ := decodeDeadHeader(p)
	return h
}

func ksuidString(k []byte) string {
	id, err := ksuid.FromBytes(k)
	if err != nil {
		return fmt.Sprintf("%x", k)
	}
	return id.String()
}

// deadKeys resolves ids (all when empty) to existing dead keys, oldest first.
func deadKeys(b buckets, ids [][]byte) ([][]byte, error) {
	if len(ids) == 0 {
		var out [][]byte
		c := b.dead.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			out = append(out, append([]byte(nil), k...))
		}
		return out, nil
	}
	out := make([][]byte, 0, len(ids))
	for _, id := range ids {
		if b.dead.Get(id) == nil {
			return nil, fmt.Errorf("dead batch %s: %w", ksuidString(id), errs.ErrNotFound)
		}
		out = append(out, id)
	}
	sortKeys(out)
	return out, nil
}

func (s *Store) applyReplay(b buckets, r *request, w *writerState) error {
	keys, err := deadKeys(b, r.keys)
	if err != nil {
		return err
	}
	type item struct {
		key    []byte
		h      deadHeader
		events [][]byte
	}
	items := make([]item, 0, len(keys))
	var need int64
	for _, k := range keys {
		p, err := decodeRecord(b.dead.Get(k))
		if err != nil {
			return fmt.Errorf("dead batch %s: %w", ksuidString(k), err)
		}
		h, err := decodeDeadHeader(p)
		if err != nil {
			return fmt.Errorf("dead batch %s: %w", ksuidString(k), err)
		}
		evs, err := deadEvents(h)
		if err != nil {
			return fmt.Errorf("dead batch %s: %w", ksuidString(k), err)
		}
		items = append(items, item{k, h, evs})
		need += h.bytes
	}
	if err := s.admit(b, need, true, w); err != nil {
		return err
	}
	now := s.opt.Now()
	run := intakeRun{at: now}
	for _, it := range items {
		for _, e := range it.events {
			k := w.nextKey(now)
			if run.first.IsNil() {
				run.first = k
			}
			if err := b.events.Put(k[:], encodeRecord(e)); err != nil {
				return err
			}
			w.Events++
			w.Bytes += int64(len(e))
			r.n++
		}
		if err := b.dead.Delete(it.key); err != nil {
			return err
		}
		w.DeadBatches--
		w.DeadEvents -= int64(it.h.events)
		w.DeadBytes -= it.h.bytes
	}
	if r.n > 0 {
		run.last = w.last
		s.pendingRuns = append(s.pendingRuns, run)
	}
	return nil
}

func (s *Store) applyPurge(b buckets, r *request, w *writerState) error {
	keys, err := deadKeys(b, r.keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		h := deadHeaderOf(b.dead.Get(k))
		if err := b.dead.Delete(k); err != nil {
			return err
		}
		w.DeadBatches--
		w.DeadEvents -= int64(h.events)
		w.DeadBytes -= h.bytes
		r.n++
	}
	return nil
}

// drop counts n events dropped for reason and logs it at warn.
func (s *Store) drop(w *writerState, reason string, n int, attrs ...any) {
	if n <= 0 {
		return
	}
	w.addDropped(reason, int64(n))
	s.pendingDrops = append(s.pendingDrops, pendingDrop{reason, n, attrs})
}

// pendingDrop is reported (log + OnDrop) only once its commit succeeded.
type pendingDrop struct {
	reason string
	n      int
	attrs  []any
}

func (s *Store) reportDrops() {
	for _, d := range s.pendingDrops {
		s.log.Warn("events dropped", append([]any{"reason", d.reason, "events", d.n}, d.attrs...)...)
		if s.opt.OnDrop != nil {
			s.opt.OnDrop(d.reason, d.n)
		}
	}
	s.pendingDrops = s.pendingDrops[:0]
}

func sortKeys(keys [][]byte) {
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
}

func (b buckets) head() ksuid.KSUID {
	k, _ := b.events.Cursor().First()
	if k == nil {
		return ksuid.Nil
	}
	id, _ := ksuid.FromBytes(k)
	return id
}

func encodeCounts(c counts) []byte {
	buf := make([]byte, 0, 40)
	for _, v := range []int64{c.Events, c.Bytes, c.DeadBatches, c.DeadEvents, c.DeadBytes} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(v))
	}
	return buf
}

func readCounts(meta interface{ Get([]byte) []byte }) (counts, error) {
	v := meta.Get(metaCounts)
	if v == nil {
		return counts{}, nil
	}
	p, err := decodeRecord(v)
	if err != nil || len(p) != 40 {
		return counts{}, fmt.Errorf("meta counters: %w", errs.ErrChecksum)
	}
	g := func(i int) int64 { return int64(binary.BigEndian.Uint64(p[i*8:])) }
	return counts{g(0), g(1), g(2), g(3), g(4)}, nil
}
