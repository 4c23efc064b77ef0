package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
)

// The writer's dead-letter operations: moving a batch to dead letters, replaying and purging.

func (s *Store) applyDead(b *buckets, source string, keys [][]byte, info []byte, w *writerState) error {
	if len(keys) == 0 {
		return nil
	}
	info = withReplays(info, replaysIn(b.meta, source, keys[0], keys[len(keys)-1]))
	events := make([][]byte, 0, len(keys))
	damaged := 0
	bucketName := format.EventsBucket(source)
	err := s.deleteEvents(b, source, keys, w, func(k, rec []byte) {
		_, p, err := s.codec.Open(nil, bucketName, k, rec, &s.scratch)
		if err != nil {
			damaged++ // never moved on, as it would never be uploaded: counted below
			return
		}
		events = append(events, p)
	})
	if err != nil {
		return err
	}
	s.drop(w, ReasonChecksum, damaged, "dead_lettering", true)
	if len(events) == 0 {
		return nil
	}
	slices.Reverse(events) // deleted last key first
	if err := clearRetry(b, source, keys[0], keys[len(keys)-1]); err != nil {
		return err
	}
	if err := pruneReplayRuns(b); err != nil {
		return err
	}
	id := w.nextKey(s.opt.Now())
	payload := format.EncodeDead(info, events)
	if err := b.dead.Put(id[:], s.codec.Encode(format.BucketDead, id[:], payload)); err != nil {
		return err
	}
	h, _ := format.DecodeDeadHeader(payload)
	w.DeadBatches++
	w.DeadEvents += int64(h.Events)
	w.DeadBytes += h.Bytes
	if s.opt.Policy == nil {
		return nil
	}
	for excess := s.opt.Policy.DeadExcess(w.DeadBytes); excess > 0; {
		k, v := b.dead.Cursor().First()
		if k == nil {
			break
		}
		dh := s.deadHeaderOf(k, v)
		if err := b.dead.Delete(k); err != nil {
			return err
		}
		w.DeadBatches--
		w.DeadEvents -= int64(dh.Events)
		w.DeadBytes -= dh.Bytes
		excess -= max(dh.Bytes, 1)
		s.drop(w, ReasonDeadOverflow, dh.Events, "dead_id", format.KeyString(k))
	}
	return nil
}

// deadHeaderOf decodes the header of the dead record v under key k; a broken one counts as
// empty.
func (s *Store) deadHeaderOf(k, v []byte) format.DeadHeader {
	p, err := s.codec.Payload(format.BucketDead, k, v)
	if err != nil {
		return format.DeadHeader{}
	}
	h, _ := format.DecodeDeadHeader(p)
	return h
}

// deadKeys resolves the dead batches r names, oldest first: its ids (each must exist), else
// those its filter matches (DeadFilter.Match, on each batch as DeadList reads it; a batch
// whose record cannot be read matches no filter but the zero one), else every one.
func (s *Store) deadKeys(b *buckets, r *request) ([][]byte, error) {
	if len(r.keys) == 0 {
		var out [][]byte
		c := b.dead.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if r.filter != nil && !r.filter.IsZero() {
				d, err := s.decodeDeadBatch(k, v, false)
				if err != nil || !r.filter.Match(d) {
					continue
				}
			}
			out = append(out, append([]byte(nil), k...))
		}
		return out, nil
	}
	out := make([][]byte, 0, len(r.keys))
	for _, id := range r.keys {
		if b.dead.Get(id) == nil {
			return nil, fmt.Errorf("dead batch %s: %w", format.KeyString(id), errs.ErrNotFound)
		}
		out = append(out, id)
	}
	sortKeys(out)
	return out, nil
}

func (s *Store) applyReplay(b *buckets, r *request, w *writerState) error {
	keys, err := s.deadKeys(b, r)
	if err != nil {
		return err
	}
	type item struct {
		key     []byte
		h       format.DeadHeader
		events  [][]byte
		source  string
		replays int // of the dead batch
	}
	items := make([]item, 0, len(keys))
	var need int64
	perSource := map[string]int64{}
	for _, k := range keys {
		p, err := s.codec.Payload(format.BucketDead, k, b.dead.Get(k))
		if err != nil {
			return fmt.Errorf("dead batch %s: %w", format.KeyString(k), err)
		}
		h, err := format.DecodeDeadHeader(p)
		if err != nil {
			return fmt.Errorf("dead batch %s: %w", format.KeyString(k), err)
		}
		evs, err := format.DeadEvents(h)
		if err != nil {
			return fmt.Errorf("dead batch %s: %w", format.KeyString(k), err)
		}
		var info DeadInfo
		_ = json.Unmarshal(h.Info, &info) // an unreadable info replays into the default source
		items = append(items, item{k, h, evs, sourceName(info.Source), info.Replays})
		need += h.Bytes
		perSource[sourceName(info.Source)] += h.Bytes
	}
	// Every check before anything is written: a refusal fails only this request.
	for src, n := range perSource {
		if err := s.admitSource(src, n, 0, true, w); err != nil {
			return err
		}
	}
	if err := s.admitQueue(b, need, true, w); err != nil {
		return err
	}
	if err := pruneReplayRuns(b); err != nil {
		return err
	}
	now := s.opt.Now()
	run := intakeRun{at: now}
	for _, it := range items {
		bk, err := b.eventsOf(it.source)
		if err != nil {
			return err
		}
		src := s.source(w, it.source, false)
		replayed := format.ReplayRun{Replays: it.replays + 1}
		for _, e := range it.events {
			k := w.nextKey(now)
			if run.first.IsNil() {
				run.first = k
			}
			if replayed.First == nil {
				replayed.First = k.Bytes()
			}
			replayed.Last = k.Bytes()
			if err := bk.Put(k[:], s.codec.Encode(format.EventsBucket(it.source), k[:], e)); err != nil {
				return err
			}
			w.Events++
			w.Bytes += int64(len(e))
			src.events++
			src.bytes += int64(len(e))
			src.tail = k
			r.n++
		}
		if replayed.First != nil {
			if err := putReplayRun(b.meta, it.source, replayed); err != nil {
				return err
			}
		}
		if err := b.dead.Delete(it.key); err != nil {
			return err
		}
		r.batches++
		w.DeadBatches--
		w.DeadEvents -= int64(it.h.Events)
		w.DeadBytes -= it.h.Bytes
	}
	if r.n > 0 {
		run.last = w.last
		s.pendingRuns = append(s.pendingRuns, run)
	}
	return nil
}

func (s *Store) applyPurge(b *buckets, r *request, w *writerState) error {
	keys, err := s.deadKeys(b, r)
	if err != nil {
		return err
	}
	for _, k := range keys {
		h := s.deadHeaderOf(k, b.dead.Get(k))
		if err := b.dead.Delete(k); err != nil {
			return err
		}
		w.DeadBatches--
		w.DeadEvents -= int64(h.Events)
		w.DeadBytes -= h.Bytes
		r.n++
		r.events += h.Events
		s.drop(w, ReasonPurged, h.Events, "dead_id", format.KeyString(k))
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
