package fsck

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// Salvage: every record of a damaged file whose checksum verifies, found by following the
// tree where it can be followed and by scanning the pages it does not reach, then written in
// key order into a fresh file (writeSalvage) with the counters recomputed.

// kv is one salvaged record: its key and its whole record bytes, and for an event its source
// (from its bucket's name; "" for the default source, and for an event found by a page scan,
// whose bucket is not known).
type kv struct {
	k, v []byte
	src  string
}

type salvaged struct {
	events, dead []kv
	retry        []byte
	retries      []kv           // per-batch retry states (retryKey) and the source registry, kept as they are
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
func safeSalvage(data []byte) (s salvaged, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("salvage failed: %v", r)
		}
	}()
	return salvage(data), nil
}

// salvage collects every record whose CRC verifies from the three buckets,
// following the tree from the newest valid meta page. Where the tree could
// not be followed completely, or fails the structure check, it also scans
// the pages it did not reach; with no valid meta page it scans every page.
func salvage(data []byte) salvaged {
	m, valid := metaPages(data)
	if valid == 0 {
		return scanAll(data)
	}
	s := salvaged{pageSize: m.pageSize, hwm: m.hwm}
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
			p, err := format.DecodeRecord(val)
			if err != nil {
				s.badRecords++
				return
			}
			rec := kv{k: append([]byte(nil), k...), v: append([]byte(nil), val...)}
			switch {
			case bytes.Equal(name, format.BucketMeta) || (!bytes.Equal(name, format.BucketEvents) && !bytes.Equal(name, format.BucketDead) && len(k) != 20):
				// The meta bucket, or one whose name was damaged holding meta keys.
				switch {
				case bytes.Equal(k, format.MetaRetry):
					s.retry = rec.v
				case bytes.HasPrefix(k, []byte(format.RetryPrefix)), bytes.HasPrefix(k, []byte("r.")), bytes.HasPrefix(k, []byte("s/")):
					s.retries = append(s.retries, rec)
				case bytes.Equal(k, format.MetaCounts):
					if c, err := format.ReadCounts(oneValue(val)); err == nil {
						s.stored = &c
					}
				}
			case len(k) != 20:
				s.badRecords++
			case bytes.Equal(name, format.BucketDead) || (!bytes.Equal(name, format.BucketEvents) && isDeadPayload(p)):
				if !isDeadPayload(p) {
					s.badRecords++
					return
				}
				s.dead = append(s.dead, rec)
				lastDead = later(lastDead, rec.k)
			default: // an events bucket, or one whose name was damaged
				if src, ok := format.SourceOfBucket(name); ok && src != format.DefaultSource {
					rec.src = src
				}
				s.events = append(s.events, rec)
				lastEvent = later(lastEvent, rec.k)
			}
		})
	})
	s.badPages = f.badPages
	s.badRecords += f.nested
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
	sal.events = sortKV(sal.events)
	sal.dead = sortKV(sal.dead)
	bySource := map[string][]kv{}
	for _, r := range sal.events {
		bySource[r.src] = append(bySource[r.src], r)
	}
	perSource := map[string]format.Counts{}
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		if err := put(format.EventsBucket(src), bySource[src], func(r kv) {
			c.Events++
			c.Bytes += int64(len(r.v) - format.RecordHeader)
			sc := perSource[src]
			sc.Events++
			sc.Bytes += int64(len(r.v) - format.RecordHeader)
			perSource[src] = sc
			rep.Saved++
		}); err != nil {
			return err
		}
	}
	if err := put(format.BucketDead, sal.dead, func(r kv) {
		h, _ := format.DecodeDeadHeader(r.v[format.RecordHeader:])
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
		for src, sc := range perSource {
			if src == "" {
				continue
			}
			if err := meta.Put(format.SourceCountsKey(src), format.EncodeRecord(format.EncodeSourceCounts(sc.Events, sc.Bytes))); err != nil {
				return err
			}
		}
		return meta.Put(format.MetaCounts, format.EncodeRecord(format.EncodeCounts(c)))
	})
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
// every other (out of order, never lost).
func sortKV(r []kv) []kv {
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
			out = append(out, kv{k: append([]byte(nil), last.Bytes()...), v: rec.v, src: rec.src})
		}
	}
	return out
}
