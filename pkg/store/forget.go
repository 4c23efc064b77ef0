package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// This file deletes the events of users who asked to be forgotten, from the queue and the dead
// letters, in one transaction of the writer.

// ForgetResult is what Forget removed.
type ForgetResult struct {
	Queued      int // events deleted from the queue
	Dead        int // events deleted from dead batches
	DeadBatches int // dead batches deleted because every event in them was; a batch left with other events keeps them
	// Sources is the same, per source, for every source that lost an event (Sources
	// is nil when nothing matched).
	Sources map[string]SourceForgotten
}

// SourceForgotten is what Forget removed from one source's events.
type SourceForgotten struct {
	Queued, Dead, DeadBatches int
}

// add counts into source's row of r.
func (r *ForgetResult) add(source string, f func(*SourceForgotten)) {
	if r.Sources == nil {
		r.Sources = map[string]SourceForgotten{}
	}
	row := r.Sources[sourceName(source)]
	f(&row)
	r.Sources[sourceName(source)] = row
}

// Forget deletes every queued and dead-lettered event for which match returns true, in one
// transaction: the counters, the quota and the dead-letter bound see all of it at once or none
// of it. A dead batch whose events all match is deleted; one where only some do is rewritten
// under the same id with the others and its info. The retry state saved for a batch that loses
// an event is cleared (that batch, when leased again, starts its retries afresh).
//
// match runs on the writer goroutine inside the transaction, once per stored event with its
// payload (valid only during the call): it must be quick and must not call the store. Every
// event is read, so the transaction takes as long as a walk over the queue. A record that
// fails its checksum is not offered to match and is left as it is (it is never uploaded;
// `outbox recover` deals with it).
func (s *Store) Forget(ctx context.Context, match func(event []byte) bool) (ForgetResult, error) {
	r := &request{kind: opForget, match: match}
	err := s.submit(ctx, r)
	return r.forgot, err
}

// applyForget is Forget's part of the group's transaction: every source's events, then the
// dead letters.
func (s *Store) applyForget(b *buckets, r *request, w *writerState) error {
	found := map[string][][]byte{}
	var buf []byte // each event's payload, opened (a sealed record) or copied
	err := eventBuckets(b.tx, func(src string, bk *bolt.Bucket) error {
		name := format.EventsBucket(src)
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var p []byte
			var err error
			if buf, p, err = s.codec.Open(buf[:0], name, k, v, &s.scratch); err == nil && r.match(p) {
				found[src] = append(found[src], append([]byte(nil), k...))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	before := w.Events
	for _, src := range slices.Sorted(maps.Keys(found)) {
		keys := found[src]
		if err := clearRetryOf(b, src, keys); err != nil {
			return err
		}
		n := w.Events
		if err := s.deleteEvents(b, src, keys, w, nil); err != nil {
			return err
		}
		r.forgot.add(src, func(row *SourceForgotten) { row.Queued += int(n - w.Events) })
	}
	r.forgot.Queued = int(before - w.Events)
	return s.forgetDead(b, r, w)
}

// forgetDead deletes the matching events of the dead batches.
func (s *Store) forgetDead(b *buckets, r *request, w *writerState) error {
	type rewrite struct {
		key  []byte
		h    format.DeadHeader // as stored
		keep [][]byte          // the events left; none: delete the batch
	}
	var todo []rewrite
	c := b.dead.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		p, err := s.codec.Payload(format.BucketDead, k, v)
		if err != nil {
			continue
		}
		h, err := format.DecodeDeadHeader(p)
		if err != nil {
			continue
		}
		evs, err := format.DeadEvents(h)
		if err != nil {
			continue
		}
		keep := evs[:0]
		for _, e := range evs {
			if !r.match(e) {
				keep = append(keep, e)
			}
		}
		if len(keep) == len(evs) {
			continue
		}
		h.Info = append([]byte(nil), h.Info...) // h aliases the page, which the writes below may move
		todo = append(todo, rewrite{key: append([]byte(nil), k...), h: h, keep: keep})
	}
	for _, t := range todo {
		var info DeadInfo
		_ = json.Unmarshal(t.h.Info, &info) // an unreadable info counts under the default source
		r.forgot.Dead += t.h.Events - len(t.keep)
		r.forgot.add(info.Source, func(row *SourceForgotten) {
			row.Dead += t.h.Events - len(t.keep)
			if len(t.keep) == 0 {
				row.DeadBatches++
			}
		})
		w.DeadEvents -= int64(t.h.Events)
		w.DeadBytes -= t.h.Bytes
		if len(t.keep) == 0 {
			if err := b.dead.Delete(t.key); err != nil {
				return err
			}
			w.DeadBatches--
			r.forgot.DeadBatches++
			continue
		}
		payload := format.EncodeDead(t.h.Info, t.keep)
		if err := b.dead.Put(t.key, s.codec.Encode(format.BucketDead, t.key, payload)); err != nil {
			return err
		}
		h, _ := format.DecodeDeadHeader(payload)
		w.DeadEvents += int64(h.Events)
		w.DeadBytes += h.Bytes
	}
	return nil
}

// clearRetryOf deletes the retry states saved for the batches of source that hold one of keys
// (sorted ascending): such a batch is no longer the one its state describes. Few batches have
// a saved state (those in flight), so each one's run is walked from its first key.
func clearRetryOf(b *buckets, source string, keys [][]byte) error {
	bk := b.lookup(source)
	if bk == nil {
		return nil
	}
	gone := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		gone[string(k)] = struct{}{}
	}
	holds := func(first []byte, count int) bool {
		c := bk.Cursor()
		k, _ := c.Seek(first)
		for i := 0; k != nil && i < count; i, k = i+1, nextKey(c) {
			if _, ok := gone[string(k)]; ok {
				return true
			}
		}
		return false
	}
	var clear [][]byte
	mc := b.meta.Cursor()
	prefix := []byte(format.RetryPrefixOf(source))
	for mk, mv := mc.Seek(prefix); mk != nil && bytes.HasPrefix(mk, prefix); mk, mv = mc.Next() {
		p, err := format.DecodeRecord(mv)
		if err != nil || len(p) < 24 {
			continue
		}
		if holds(p[:20], int(binary.BigEndian.Uint32(p[20:24]))) {
			clear = append(clear, append([]byte(nil), mk...))
		}
	}
	if v := b.meta.Get(format.MetaRetry); v != nil && sourceName(source) == DefaultSource {
		if p, err := format.DecodeRecord(v); err == nil && len(p) >= 24 && holds(p[:20], int(binary.BigEndian.Uint32(p[20:24]))) {
			clear = append(clear, format.MetaRetry)
		}
	}
	for _, k := range clear {
		if err := b.meta.Delete(k); err != nil {
			return fmt.Errorf("clear retry state: %w", err)
		}
	}
	return nil
}

// nextKey steps c and returns its key.
func nextKey(c *bolt.Cursor) []byte {
	k, _ := c.Next()
	return k
}

// LastKey returns the greatest key handed out so far (nil before the first event): every
// event stored before the call has a key at most this one. A consumer that forgot a user
// (Forget) tells with it which of the batches it holds were read before.
func (s *Store) LastKey() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pub.last.IsNil() {
		return nil
	}
	return append([]byte(nil), s.pub.last[:]...)
}

// metaSalt is the meta key of the data directory's random salt (Salt).
var metaSalt = []byte("salt")

// saltBytes is the size of the salt.
const saltBytes = 32

// Salt returns the data directory's random salt, creating it (in meta, in a commit of the
// writer) on first use: a key for hashes that must not be computable from the data alone,
// such as the id hashes of Forget's audit log line when no hash key is configured. It
// stays the same for the life of the data file (compaction copies it; recover does not).
func (s *Store) Salt(ctx context.Context) ([]byte, error) {
	r := &request{kind: opSalt}
	if err := s.submit(ctx, r); err != nil {
		return nil, err
	}
	return r.info, nil
}

// applySalt reads or creates the salt into r.info.
func applySalt(b *buckets, r *request) error {
	if v := b.meta.Get(metaSalt); v != nil {
		if p, err := format.DecodeRecord(v); err == nil && len(p) == saltBytes {
			r.info = append([]byte(nil), p...)
			return nil
		}
	}
	salt := make([]byte, saltBytes)
	_, _ = rand.Read(salt) // never fails (crypto/rand, Go ≥ 1.24)
	if err := b.meta.Put(metaSalt, format.EncodeRecord(salt)); err != nil {
		return err
	}
	r.info = salt
	return nil
}
