package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
)

// apply runs one request inside the group's transaction, updating w.
func (s *Store) apply(b *buckets, r *request, w *writerState) error {
	switch r.kind {
	case opAppend:
		return s.applyAppend(b, r.source, *r.block, r.count, r.need, w)
	case opDelete:
		if err := s.deleteEvents(b, r.source, r.keys, w, nil); err != nil {
			return err
		}
		if len(r.keys) > 0 {
			if err := pruneReplayRunsIn(b, r.source, r.keys[0], r.keys[len(r.keys)-1]); err != nil {
				return err
			}
			return clearRetry(b, r.source, r.keys[0], r.keys[len(r.keys)-1])
		}
		return nil
	case opPutMeta:
		return b.meta.Put(r.keys[0], format.EncodeRecord(r.info))
	case opDead:
		return s.applyDead(b, r.source, r.keys, r.info, w)
	case opRetry:
		if bk := b.lookup(r.source); bk == nil || bk.Get(r.keys[0]) == nil {
			return nil
		}
		if err := clearLegacyRetry(b, r.keys[0]); err != nil {
			return err
		}
		v := append(append([]byte(nil), r.keys[0]...), binary.BigEndian.AppendUint32(nil, uint32(r.count))...)
		return b.meta.Put(retryKey(r.source, r.keys[0]), format.EncodeRecord(append(v, r.info...)))
	case opReplay:
		return s.applyReplay(b, r, w)
	case opPurge:
		return s.applyPurge(b, r, w)
	case opDropCorrupt:
		n := w.Events
		if err := s.deleteEvents(b, r.source, r.keys[:1], w, nil); err != nil {
			return err
		}
		if w.Events < n {
			s.drop(w, ReasonChecksum, 1, "key", fmt.Sprintf("%x", r.keys[0]), "source", sourceName(r.source))
		}
		return clearRetry(b, r.source, r.keys[0], r.keys[0])
	case opForget:
		return s.applyForget(b, r, w)
	case opSalt:
		return applySalt(b, r)
	case opFixCounts:
		w.Events += r.delta.Events
		w.Bytes += r.delta.Bytes
		w.DeadBatches += r.delta.DeadBatches
		w.DeadEvents += r.delta.DeadEvents
		w.DeadBytes += r.delta.DeadBytes
		for name, d := range r.srcDelta {
			p := s.source(w, name, true)
			p.events += d.Events
			p.bytes += d.Bytes
		}
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
//
// With encryption on, the block holds each record unsealed (its nonce, one of a run from a
// random start, and the event in the clear): its additional data binds the key, which only the
// writer knows, so each record is sealed in place once the writer has put it under its key
// (applyAppend, sealer.go), without a copy or an allocation.
func (s *Store) appendBlock(events [][]byte) *[]byte {
	n := 0
	over := s.codec.Overhead()
	for _, e := range events {
		n += blockEntryHeader + over + len(e)
	}
	p := getBlock(n)
	buf := *p
	var nonces format.Nonces
	for _, e := range events {
		buf = binary.BigEndian.AppendUint32(buf, uint32(over+len(e)))
		buf = append(buf, ksuid.Nil[:]...)
		buf = s.codec.AppendUnsealed(buf, e, &nonces)
	}
	*p = buf
	return p
}

// blockEntryHeader is what precedes each record in an append block: its length and its key.
const blockEntryHeader = 4 + len(ksuid.Nil)

// applyAppend stores the count events of block (need bytes in all; Append has already
// refused events that could never fit, so eviction can always make room).
func (s *Store) applyAppend(b *buckets, source string, block []byte, count int, need int64, w *writerState) error {
	if err := s.admit(b, source, need, count, false, w); err != nil {
		return err
	}
	bk, err := b.eventsOf(source)
	if err != nil {
		return err
	}
	src := s.source(w, source, false)
	bucketName := format.EventsBucket(source)
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
		rec := block[off:end:end]
		// Put before it is sealed: the sealer seals it in place before anything reads it
		// (sealer.go).
		if err := bk.Put(key, rec); err != nil {
			return err
		}
		off = end
		w.Events++
		w.Bytes += int64(format.PayloadLen(rec))
		w.enqueued++
		src.events++
		src.bytes += int64(size - format.RecordHeader)
	}
	s.sealer.add(sealJob{block: block, count: count, bucket: bucketName}, &s.scratch)
	src.tail = w.last
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

// admit asks the policy whether need more bytes (count events) of source's events may be
// stored: first within the source's own share (admitSource), then within the queue's bound
// (admitQueue).
func (s *Store) admit(b *buckets, source string, need int64, count int, replay bool, w *writerState) error {
	if err := s.admitSource(source, need, count, replay, w); err != nil {
		return err
	}
	return s.admitQueue(b, need, replay, w)
}

// admitSource asks the policy whether need more bytes of source's events fit in the source's
// own share. A refusal refuses only this source; an append refused is counted as dropped with
// reason source_full (its caller is told to come back later).
func (s *Store) admitSource(source string, need int64, count int, replay bool, w *writerState) error {
	if s.opt.Policy == nil {
		return nil
	}
	var stored int64
	if p := w.sources[sourceName(source)]; p != nil {
		stored = p.bytes
	}
	err := s.opt.Policy.AdmitSource(sourceName(source), stored, need)
	if err != nil && errors.Is(err, errs.ErrSourceFull) && !replay {
		s.drop(w, ReasonSourceFull, count, "source", sourceName(source))
	}
	return err
}

// admitQueue asks the policy whether need more bytes of events may be stored in the queue, and
// evicts from the head what it says (counted as dropped).
func (s *Store) admitQueue(b *buckets, need int64, replay bool, w *writerState) error {
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
