package store

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// Sources: each source's events are their own FIFO, in their own bucket (internal/format,
// sources.go, has the layout), and one writer serves them all, so a group commit holds the
// appends of every source. The writer keeps each source's counters, head and tail beside the
// totals; they are published with the totals after each commit.

// DefaultSource is the source a single-source configuration means, and the one every
// method without a source argument uses. A data file written before there were several
// sources holds only events of this source.
const DefaultSource = format.DefaultSource

// sourceName is source with "" meaning DefaultSource.
func sourceName(source string) string {
	if source == "" {
		return DefaultSource
	}
	return source
}

// sourceState is one source's share of the queue.
type sourceState struct {
	events, bytes int64
	head, tail    ksuid.KSUID // first and last key queued; Nil when empty
	headTime      time.Time   // intake time of head; zero when empty
}

// sources are the writer's per-source states. A published map is never modified: the writer
// clones it (sourcesFor) before the first change of a group, so Stats reads it without a copy
// per commit and a rolled-back group leaves the published one as it was.
type sources map[string]*sourceState

func (ss sources) clone() sources {
	out := make(sources, len(ss)+1)
	for k, v := range ss {
		c := *v
		out[k] = &c
	}
	return out
}

// source returns the state of name in w, cloning w's map first when this group has not yet
// changed it, and marks it changed (its counters are saved with the group); moved says its
// head may have changed (events left it, or it was empty): it is looked up after the group.
func (s *Store) source(w *writerState, name string, moved bool) *sourceState {
	name = sourceName(name)
	if !s.srcCloned {
		w.sources = w.sources.clone()
		s.srcCloned = true
	}
	p := w.sources[name]
	if p == nil {
		p = &sourceState{}
		w.sources[name] = p
	}
	if s.srcDirty == nil {
		s.srcDirty = map[string]bool{}
	}
	s.srcDirty[name] = s.srcDirty[name] || moved || p.events == 0
	return p
}

// sourceHeads looks up, after a group, the head of every source whose head may have moved, and
// then the head of the whole queue (the oldest of them). It reports whether any moved.
func (s *Store) sourceHeads(b *buckets, w *writerState) bool {
	changed := false
	for name, moved := range s.srcDirty {
		p := w.sources[name]
		if !moved || p == nil {
			continue
		}
		changed = true
		if p.events <= 0 {
			p.head, p.tail = ksuid.Nil, ksuid.Nil
			continue
		}
		bk := b.lookup(name)
		p.head = firstKey(bk)
		if p.tail.IsNil() {
			p.tail = lastKey(bk)
		}
	}
	if changed {
		w.head = ksuid.Nil
		for _, p := range w.sources {
			if p.events > 0 && !p.head.IsNil() && (w.head.IsNil() || ksuid.Compare(p.head, w.head) < 0) {
				w.head = p.head
			}
		}
	}
	return changed
}

// putCounts saves the totals, and the counters of every source other than the default one
// that the group changed (the default source's are the totals less the others').
func (s *Store) putCounts(b *buckets, w *writerState) error {
	if err := b.meta.Put(format.MetaCounts, format.EncodeRecord(format.EncodeCounts(w.Counts))); err != nil {
		return err
	}
	for name := range s.srcDirty {
		if name == DefaultSource {
			continue
		}
		p := w.sources[name]
		if err := b.meta.Put(format.SourceCountsKey(name), format.EncodeRecord(format.EncodeSourceCounts(p.events, p.bytes))); err != nil {
			return err
		}
	}
	return nil
}

// lookup returns source's events bucket in the group's transaction, nil when it does not exist.
func (b *buckets) lookup(source string) *bolt.Bucket {
	source = sourceName(source)
	if source == DefaultSource {
		return b.events
	}
	if bk := b.src[source]; bk != nil {
		return bk
	}
	return b.tx.Bucket(format.EventsBucket(source))
}

// SourceStats is one source's share of the queue (Store.Sources).
type SourceStats struct {
	Name          string
	Events, Bytes int64     // queued events of this source and their bytes
	Oldest        time.Time // intake time of its head event; zero when empty
	tail          []byte
}

// Tail returns the key of the source's newest queued event, nil when it is empty: a reader
// that has read up to it has read the whole source.
func (st SourceStats) Tail() []byte { return st.tail }

// Sources returns every source that holds events or held some since the file was opened, by
// name, from memory.
func (s *Store) Sources() []SourceStats {
	s.mu.Lock()
	ss := s.pub.sources
	s.mu.Unlock()
	out := make([]SourceStats, 0, len(ss))
	for _, name := range slices.Sorted(maps.Keys(ss)) {
		p := ss[name]
		st := SourceStats{Name: name, Events: p.events, Bytes: p.bytes}
		if p.events > 0 {
			st.Oldest = p.headTime
			st.tail = append([]byte(nil), p.tail[:]...)
		}
		out = append(out, st)
	}
	return out
}

// eventsOf returns source's events bucket in the group's transaction, creating it on first
// use.
func (b *buckets) eventsOf(source string) (*bolt.Bucket, error) {
	source = sourceName(source)
	if source == DefaultSource {
		return b.events, nil
	}
	if bk := b.src[source]; bk != nil {
		return bk, nil
	}
	bk, err := b.tx.CreateBucketIfNotExists(format.EventsBucket(source))
	if err != nil {
		return nil, err
	}
	bk.FillPercent = 1.0 // keys only grow, as in events
	if b.src == nil {
		b.src = map[string]*bolt.Bucket{}
	}
	b.src[source] = bk
	return bk, nil
}

// firstKey is the first key of bk, Nil when it is empty (or nil).
func firstKey(bk *bolt.Bucket) ksuid.KSUID {
	if bk == nil {
		return ksuid.Nil
	}
	k, _ := bk.Cursor().First()
	if k == nil {
		return ksuid.Nil
	}
	id, _ := ksuid.FromBytes(k)
	return id
}

// lastKey is the last key of bk, Nil when it is empty (or nil).
func lastKey(bk *bolt.Bucket) ksuid.KSUID {
	if bk == nil {
		return ksuid.Nil
	}
	k, _ := bk.Cursor().Last()
	if k == nil {
		return ksuid.Nil
	}
	id, _ := ksuid.FromBytes(k)
	return id
}

// eventBuckets calls fn for every events bucket of tx with its source's name.
func eventBuckets(tx *bolt.Tx, fn func(source string, bk *bolt.Bucket) error) error {
	return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
		if src, ok := format.SourceOfBucket(name); ok {
			return fn(src, bk)
		}
		return nil
	})
}

// Chain is how far a consumer's chain of leases has read each source: per source, the key of
// the last event handed out. A batch carries the chain up to and including itself
// (Batch.Chain), so that the batch after it (in any source) can be read without the store or
// the queue keeping track of what the consumer holds.
type Chain struct {
	sources []string
	keys    [][]byte
}

// After returns the last key read of source, nil when the chain has read nothing of it.
func (c Chain) After(source string) []byte {
	if i := slices.Index(c.sources, sourceName(source)); i >= 0 {
		return c.keys[i]
	}
	return nil
}

// With returns a copy of c that has read source up to key.
func (c Chain) With(source string, key []byte) Chain {
	source = sourceName(source)
	out := Chain{sources: slices.Clone(c.sources), keys: slices.Clone(c.keys)}
	if i := slices.Index(out.sources, source); i >= 0 {
		out.keys[i] = key
		return out
	}
	out.sources = append(out.sources, source)
	out.keys = append(out.keys, key)
	return out
}

// Pending reports whether st holds events after what c has read of it.
func (c Chain) Pending(st SourceStats) bool {
	if st.Events == 0 {
		return false
	}
	after := c.After(st.Name)
	return after == nil || bytes.Compare(st.tail, after) > 0
}

// loadSources reads every source's head, tail and counters at open: those of a source other
// than the default one from its meta record, the default source's as the totals less theirs.
// A source's head time is its key's second (appended by an earlier process).
func loadSources(tx *bolt.Tx, total format.Counts) (sources, error) {
	ss := sources{}
	def := &sourceState{events: total.Events, bytes: total.Bytes}
	err := eventBuckets(tx, func(name string, bk *bolt.Bucket) error {
		p := def
		if name != DefaultSource {
			p = &sourceState{}
			if v := tx.Bucket(format.BucketMeta).Get(format.SourceCountsKey(name)); v != nil {
				var err error
				if p.events, p.bytes, err = format.DecodeSourceCounts(v); err != nil {
					return fmt.Errorf("source %s: %w", name, err)
				}
			}
			def.events -= p.events
			def.bytes -= p.bytes
		}
		p.head, p.tail = firstKey(bk), lastKey(bk)
		if !p.head.IsNil() {
			p.headTime = p.head.Time()
		}
		ss[name] = p
		return nil
	})
	ss[DefaultSource] = def
	return ss, err
}

// metaRegistryPrefix starts the meta keys of the source registry (SaveSourceRecord).
const metaRegistryPrefix = "s/"

// SaveSourceRecord stores rec (opaque to the store) under name in the source registry, in
// meta, durable (fsynced unless NoSync) when it returns nil: what a source that is not in the
// configuration (a relay source) needs to be uploaded after a restart.
func (s *Store) SaveSourceRecord(ctx context.Context, name string, rec []byte) error {
	return s.submit(ctx, &request{kind: opPutMeta, keys: [][]byte{[]byte(metaRegistryPrefix + name)}, info: rec})
}

// SourceRecords returns every record of the source registry by name.
func (s *Store) SourceRecords() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(format.BucketMeta).Cursor()
		prefix := []byte(metaRegistryPrefix)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			p, err := format.DecodeRecord(v)
			if err != nil {
				return fmt.Errorf("source registry %q: %w", k[len(prefix):], err)
			}
			out[string(k[len(prefix):])] = append([]byte(nil), p...)
		}
		return nil
	})
	return out, err
}
