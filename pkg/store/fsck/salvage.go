package fsck

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	"github.com/segmentio/ksuid"
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
				case bytes.HasPrefix(k, []byte(format.RetryPrefix)), bytes.HasPrefix(k, []byte("r.")), bytes.HasPrefix(k, []byte("s/")),
					bytes.HasPrefix(k, []byte("p.")):
					// A retry state (of the default source, or "r.<name>/" of another), a
					// source registry entry ("s/<name>") or a replay run ("p.<name>/": events
					// keep their keys, so a batch of them dying after the recovery still counts
					// its replays).
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
