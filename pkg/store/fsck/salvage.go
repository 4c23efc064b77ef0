package fsck

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// Salvage: every record of a damaged file whose checksum verifies, found by following the
// tree where it can be followed and by scanning the pages it does not reach, then written in
// key order into a fresh file (writeSalvage) with the counters recomputed.

// kv is one salvaged record: its key, its whole record bytes and, for events and dead
// batches, its payload (opened when sealed); for an event, its source too (from its bucket's
// name; "" for the default source, and for an event a page scan found, whose bucket is not
// known).
type kv struct {
	k, v, p []byte
	src     string
}

type salvaged struct {
	codec format.Codec // opens sealed records (with the keys recover was given)
	// missing counts the records sealed with a key the codec lacks, by key id: they cannot be
	// read, and recover refuses rather than leave them behind.
	missing      map[keyring.ID]int
	countMissing bool // while records are known to be live (the tree walk, or a scan without one)
	scratch      format.Scratch
	events, dead []kv
	retry        []byte
	retries      []kv           // per-batch retry states of every source and the source registry, kept as they are
	stored       *format.Counts // the file's counters; nil when unreadable
	badRecords   int
	badPages     int
	pageSize     int
	hwm          uint64 // 0 when unknown
	scanned      bool
}

// report copies what salvage found into rep; size is the old file's size.
func (s *salvaged) report(rep *Report, size int64) {
	rep.BadRecords, rep.BadPages = s.badRecords, s.badPages
	rep.Unreadable = s.badRecords + s.badPages
	rep.Scanned, rep.PageSize = s.scanned, s.pageSize
	if want := int64(s.hwm) * int64(s.pageSize); want > size {
		rep.MissingBytes = want - size
	}
	if s.stored != nil {
		rep.StoredEvents, rep.StoredDeadBatches = s.stored.Events, s.stored.DeadBatches
	}
}

// oneValue is a bucket holding one value, for format.ReadCounts.
type oneValue []byte

func (v oneValue) Get([]byte) []byte { return v }

// safeSalvage is salvage, with a panic (a bug: the walker checks every
// bound) reported as an error rather than taking the process down.
func safeSalvage(data []byte, codec format.Codec) (s salvaged, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("salvage failed: %v", r)
		}
	}()
	return salvage(data, codec), nil
}

// open reads the record v under key k of an events or dead bucket whose name may be damaged
// (name is then neither): the payload and which bucket it belongs to. A sealed record says so
// itself (its tag binds the bucket); a plain one whose bucket is unknown is a dead batch when
// its payload is one. A sealed record whose key is not given is counted in missing (while
// countMissing) and is unreadable.
func (s *salvaged) open(name, k, v []byte) (bucket, p []byte, ok bool) {
	if id, sealed := format.SealedBy(v); sealed {
		if _, have := s.codec.Keys().Find(id); !have {
			if s.countMissing {
				if s.missing == nil {
					s.missing = map[keyring.ID]int{}
				}
				s.missing[id]++
			}
			return nil, nil, false
		}
		candidates := [][]byte{format.BucketEvents, format.BucketDead}
		if src, ok := format.SourceOfBucket(name); ok && src != format.DefaultSource {
			candidates = [][]byte{name} // a source's bucket: its tag binds that bucket's name
		}
		for _, b := range candidates {
			if len(name) > 0 && (bytes.Equal(name, format.BucketEvents) || bytes.Equal(name, format.BucketDead)) && !bytes.Equal(name, b) {
				continue
			}
			if _, p, err := s.codec.OpenSealed(nil, b, k, v, &s.scratch); err == nil {
				return b, p, true
			}
		}
		return nil, nil, false
	}
	p, err := format.DecodeRecord(v)
	if err != nil {
		return nil, nil, false
	}
	if _, ok := format.SourceOfBucket(name); ok {
		return name, p, true // the events bucket of the default source or of another
	}
	switch {
	case bytes.Equal(name, format.BucketDead) || isDeadPayload(p):
		return format.BucketDead, p, true
	}
	return format.BucketEvents, p, true
}

// salvage collects every record whose CRC verifies from the three buckets,
// following the tree from the newest valid meta page. Where the tree could
// not be followed completely, or fails the structure check, it also scans
// the pages it did not reach; with no valid meta page it scans every page.
func salvage(data []byte, codec format.Codec) salvaged {
	m, valid := metaPages(data)
	if valid == 0 {
		return scanAll(data, codec)
	}
	s := salvaged{pageSize: m.pageSize, hwm: m.hwm, codec: codec, countMissing: true}
	var lastEvent, lastDead []byte
	found := 0 // of the events and dead buckets
	f := &pageFile{data: data, pageSize: m.pageSize, seen: map[uint64]bool{}}
	f.walk(m.root, 0, func(flags uint32, name, v []byte) {
		if flags&bucketLeafFlag == 0 {
			return
		}
		if bytes.Equal(name, format.BucketEvents) || bytes.Equal(name, format.BucketDead) {
			found++
		}
		_ = f.walkBucket(v, func(k, val []byte) {
			events, dead := bytes.Equal(name, format.BucketEvents), bytes.Equal(name, format.BucketDead)
			if bytes.Equal(name, format.BucketMeta) || (!events && !dead && len(k) != 20) {
				// The meta bucket, or one whose name was damaged holding meta keys.
				if _, err := format.DecodeRecord(val); err != nil {
					s.badRecords++
					return
				}
				rec := kv{k: append([]byte(nil), k...), v: append([]byte(nil), val...)}
				switch {
				case bytes.Equal(k, format.MetaRetry):
					s.retry = rec.v
				case bytes.HasPrefix(k, []byte(format.RetryPrefix)), bytes.HasPrefix(k, []byte("r.")), bytes.HasPrefix(k, []byte("s/")):
					// A retry state (of the default source, or "r.<name>/" of another) or a
					// source registry entry ("s/<name>").
					s.retries = append(s.retries, rec)
				case bytes.Equal(k, format.MetaCounts):
					if c, err := format.ReadCounts(oneValue(val)); err == nil {
						s.stored = &c
					}
				}
				return
			}
			if len(k) != 20 {
				s.badRecords++
				return
			}
			bucket, p, ok := s.open(name, k, val)
			if !ok {
				s.badRecords++
				return
			}
			rec := kv{k: append([]byte(nil), k...), v: append([]byte(nil), val...), p: p}
			if src, ok := format.SourceOfBucket(bucket); ok && src != format.DefaultSource {
				rec.src = src
			}
			if bytes.Equal(bucket, format.BucketDead) {
				if !isDeadPayload(p) {
					s.badRecords++
					return
				}
				s.dead = append(s.dead, rec)
				lastDead = later(lastDead, rec.k)
				return
			}
			s.events = append(s.events, rec) // the events bucket, or one whose name was damaged
			lastEvent = later(lastEvent, rec.k)
		})
	})
	s.badPages = f.badPages
	s.badRecords += f.nested
	s.resolveMissing(data, m)
	s.countMissing = false // what the scans below find may be stale: freed pages
	switch {
	case f.badPages > 0 || found < 2 || f.revisits > 0 || validateTree(data, m) != nil:
		// Part of the tree is lost, or misleads (a damaged reference sends
		// the walk to another page, a bucket's header is lost, so pages
		// were not reached): take every record the walk missed.
		s.scanLeaves(f, nil, nil)
	case valid == 1:
		// The other meta page is damaged and may have been the newer one:
		// its commit's records sit on pages this tree does not reach.
		// Take those with keys after the newest the walk found.
		s.scanLeaves(f, lastEvent, lastDead)
	}
	return s
}

func writeSalvage(db *bolt.DB, sal salvaged, rep *Report) error {
	var c format.Counts
	var seal format.SealSet
	note := func(r kv) {
		if id, ok := format.SealedBy(r.v); ok {
			seal = seal.With(id)
		} else {
			seal.Plain = true
		}
	}
	put := func(name []byte, recs []kv, each func(kv)) error {
		for len(recs) > 0 {
			n := min(len(recs), 10000)
			chunk := recs[:n]
			recs = recs[n:]
			if err := db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				b.FillPercent = 1.0
				for _, r := range chunk {
					if err := b.Put(r.k, r.v); err != nil {
						return err
					}
					each(r)
				}
				return nil
			}); err != nil {
				return fmt.Errorf("recover: write: %w", err)
			}
		}
		return nil
	}
	// A page scan does not know an event's bucket: one it found that the tree walk found in
	// another source's bucket is a stale copy of that event, and stays out of the default
	// source (its key would send it under the default source's credentials).
	inSource := map[string]bool{}
	for _, r := range sal.events {
		if r.src != "" {
			inSource[string(r.k)] = true
		}
	}
	bySource := map[string][]kv{}
	for _, r := range sal.events {
		if r.src == "" && inSource[string(r.k)] {
			continue
		}
		bySource[r.src] = append(bySource[r.src], r)
	}
	perSource := map[string]format.Counts{}
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		bucket := format.EventsBucket(src)
		if err := put(bucket, sortKV(bySource[src], sal.reseal(bucket)), func(r kv) {
			note(r)
			c.Events++
			c.Bytes += int64(len(r.p))
			sc := perSource[src]
			sc.Events++
			sc.Bytes += int64(len(r.p))
			perSource[src] = sc
			rep.Saved++
		}); err != nil {
			return err
		}
	}
	sal.dead = sortKV(sal.dead, sal.reseal(format.BucketDead))
	if err := put(format.BucketDead, sal.dead, func(r kv) {
		note(r)
		h, _ := format.DecodeDeadHeader(r.p)
		c.DeadBatches++
		c.DeadEvents += int64(h.Events)
		c.DeadBytes += h.Bytes
		rep.DeadSaved++
	}); err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{format.BucketEvents, format.BucketDead, format.BucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(format.BucketMeta)
		if sal.retry != nil {
			if err := meta.Put(format.MetaRetry, sal.retry); err != nil {
				return err
			}
		}
		for _, r := range sal.retries {
			if err := meta.Put(r.k, r.v); err != nil {
				return err
			}
		}
		if err := meta.Put(format.MetaFormat, format.EncodeRecord([]byte{1})); err != nil {
			return err
		}
		if err := meta.Put(format.MetaSeal, format.EncodeRecord(format.EncodeSealSet(seal))); err != nil {
			return err
		}
		for src, sc := range perSource {
			if src == "" {
				continue // the default source's counters are the totals less the others'
			}
			if err := meta.Put(format.SourceCountsKey(src), format.EncodeRecord(format.EncodeSourceCounts(sc.Events, sc.Bytes))); err != nil {
				return err
			}
		}
		return meta.Put(format.MetaCounts, format.EncodeRecord(format.EncodeCounts(c)))
	})
}

// resolveMissing tells a record sealed with a key that was not given from a damaged one: a
// damaged key id names a key the file never used. The file's seal set (meta "seal") names every
// key that may have sealed a record; an id outside it is damage (the walk counted the record
// unreadable already). When the
// set cannot be read, every unknown id is taken as a key that was not given: recover then
// refuses rather than drop records it could read with that key.
func (s *salvaged) resolveMissing(data []byte, m metaInfo) {
	if len(s.missing) == 0 {
		return
	}
	set, ok := s.storedSealSet(data, m)
	if !ok {
		return
	}
	for id := range s.missing {
		if !set.Has(id) {
			delete(s.missing, id)
		}
	}
}

// storedSealSet reads the seal set from the meta bucket of the tree at m.
func (s *salvaged) storedSealSet(data []byte, m metaInfo) (set format.SealSet, ok bool) {
	f := &pageFile{data: data, pageSize: m.pageSize, seen: map[uint64]bool{}}
	f.walk(m.root, 0, func(flags uint32, name, v []byte) {
		if flags&bucketLeafFlag == 0 || !bytes.Equal(name, format.BucketMeta) {
			return
		}
		_ = f.walkBucket(v, func(k, val []byte) {
			if bytes.Equal(k, format.MetaSeal) {
				if got, present, err := format.ReadSealSet(oneValue(val)); err == nil && present {
					set, ok = got, true
				}
			}
		})
	})
	return set, ok
}

// reseal returns how a record of bucket given a new key is sealed for it: a sealed record is
// sealed again (under the sealing key) for its new key, which its tag binds; a plain one is
// kept as it is.
func (s *salvaged) reseal(bucket []byte) func(kv) kv {
	return func(r kv) kv {
		if _, sealed := format.SealedBy(r.v); sealed && s.codec.Sealing() {
			r.v = s.codec.Encode(bucket, r.k, r.p)
		}
		return r
	}
}

// isDeadPayload reports whether p is a well-formed dead batch.
func isDeadPayload(p []byte) bool {
	h, err := format.DecodeDeadHeader(p)
	if err != nil {
		return false
	}
	_, err = format.DeadEvents(h)
	return err == nil
}

// sortKV orders records by key and drops duplicates (a stale copy found by a
// scan: same key, same bytes). Records never change once written, so two
// different records under one key mean a damaged key made one of them
// collide with the other: both are kept, the second under a new key after
// every other (out of order, never lost), sealed again for that key (reseal) when it was sealed.
func sortKV(r []kv, reseal func(kv) kv) []kv {
	slices.SortFunc(r, func(a, b kv) int {
		if c := bytes.Compare(a.k, b.k); c != 0 {
			return c
		}
		return bytes.Compare(a.v, b.v)
	})
	var out, moved []kv
	for i, rec := range r {
		switch {
		case i == 0 || !bytes.Equal(rec.k, r[i-1].k):
			out = append(out, rec)
		case !bytes.Equal(rec.v, r[i-1].v):
			moved = append(moved, rec)
		}
	}
	if len(moved) > 0 {
		last, _ := ksuid.FromBytes(out[len(out)-1].k)
		for _, rec := range moved {
			last = last.Next()
			out = append(out, reseal(kv{k: append([]byte(nil), last.Bytes()...), v: rec.v, p: rec.p, src: rec.src}))
		}
	}
	return out
}
