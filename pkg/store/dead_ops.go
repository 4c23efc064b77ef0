package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/segmentio/ksuid"
)

// The writer's dead-letter operations: moving a batch to dead letters, replaying and purging.

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
