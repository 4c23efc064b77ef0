package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Report is what Recover did.
type Report struct {
	Saved      int    // queued events copied into the fresh file
	DeadSaved  int    // dead-letter batches copied
	Unreadable int    // records that failed their checksum + pages that could not be read
	MovedTo    string // where the old file now lives (inside the data directory)
}

// Recover moves dir's data file aside as <name>.corrupt-<UTC time> (never
// deleting it) and copies every readable record into a fresh file. It reads
// the old file page by page without trusting it (out-of-range, misnamed or
// malformed pages are skipped and counted), keeps original keys (so order),
// and recomputes the counters. It takes the directory lock (ErrLocked while an
// agent runs). A healthy file is recovered completely.
func Recover(dir string) (Report, error) {
	var rep Report
	lock, err := lockDir(dir)
	if err != nil {
		return rep, err
	}
	defer func() { _ = lock.unlock() }()
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("recover: read %s: %w", path, err)
	}
	rep.MovedTo = path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(path, rep.MovedTo); err != nil {
		return rep, fmt.Errorf("recover: move aside: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	sal := salvage(data)
	rep.Unreadable = sal.unreadable
	db, err := openDB(path, false, 0)
	if err != nil {
		return rep, fmt.Errorf("recover: create fresh file: %w", err)
	}
	err = writeSalvage(db, sal, &rep)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return rep, err
}

type kv struct{ k, v []byte }

type salvaged struct {
	events, dead []kv
	retry        []byte
	unreadable   int
}

// salvage collects every record whose CRC verifies from the three buckets.
func salvage(data []byte) salvaged {
	var s salvaged
	m, err := bestMeta(data)
	if err != nil {
		s.unreadable++
		return s
	}
	f := &pageFile{data: data, pageSize: m.pageSize, seen: map[uint64]bool{}}
	f.walk(m.root, 0, func(flags uint32, name, v []byte) {
		if flags&bucketLeafFlag == 0 {
			return
		}
		_ = f.walkBucket(v, func(k, val []byte) {
			p, err := decodeRecord(val)
			if err != nil {
				s.unreadable++
				return
			}
			rec := kv{append([]byte(nil), k...), append([]byte(nil), val...)}
			switch {
			case bytes.Equal(name, bucketEvents) && len(k) == 20:
				s.events = append(s.events, rec)
			case bytes.Equal(name, bucketDead) && len(k) == 20:
				if h, err := decodeDeadHeader(p); err != nil {
					s.unreadable++
				} else if _, err := deadEvents(h); err != nil {
					s.unreadable++
				} else {
					s.dead = append(s.dead, rec)
				}
			case bytes.Equal(name, bucketMeta) && bytes.Equal(k, metaRetry):
				s.retry = rec.v
			}
		})
	})
	s.unreadable += f.badPages
	if f.badPages > 0 {
		s.scanLeaves(f)
	}
	return s
}

// scanLeaves is the fallback when part of the tree was unreadable: it reads
// every leaf page the walk did not reach and keeps records that look like
// events (20-byte key, valid record) or dead batches (valid dead payload).
// Such pages may be stale copies or freed pages, so already-acknowledged
// events can come back (at-least-once; collectors dedupe on messageId).
func (s *salvaged) scanLeaves(f *pageFile) {
	n := uint64(len(f.data) / f.pageSize)
	for id := uint64(2); id < n; id++ {
		if f.seen[id] {
			continue
		}
		p := f.page(id)
		if p == nil || binary.LittleEndian.Uint16(p[8:]) != flagLeaf {
			continue
		}
		bad := f.badPages
		f.walkPage(p, 1, func(flags uint32, k, v []byte) {
			if flags&bucketLeafFlag != 0 || len(k) != 20 {
				return
			}
			p, err := decodeRecord(v)
			if err != nil {
				return // not countable: it may not be ours or may be stale
			}
			rec := kv{append([]byte(nil), k...), append([]byte(nil), v...)}
			if h, err := decodeDeadHeader(p); err == nil && h.events >= 0 {
				if evs, err := deadEvents(h); err == nil && deadSize(evs) == len(h.body) {
					s.dead = append(s.dead, rec)
					return
				}
			}
			s.events = append(s.events, rec)
		})
		f.badPages = bad
	}
}

func deadSize(evs [][]byte) int {
	n := 0
	for _, e := range evs {
		n += 4 + len(e)
	}
	return n
}

func writeSalvage(db *bolt.DB, sal salvaged, rep *Report) error {
	var c counts
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
	if err := put(bucketEvents, sal.events, func(r kv) {
		c.Events++
		c.Bytes += int64(len(r.v) - recordHeader)
		rep.Saved++
	}); err != nil {
		return err
	}
	if err := put(bucketDead, sal.dead, func(r kv) {
		h, _ := decodeDeadHeader(r.v[recordHeader:])
		c.DeadBatches++
		c.DeadEvents += int64(h.events)
		c.DeadBytes += h.bytes
		rep.DeadSaved++
	}); err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketEvents, bucketDead, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if sal.retry != nil {
			if err := meta.Put(metaRetry, sal.retry); err != nil {
				return err
			}
		}
		if err := meta.Put(metaFormat, encodeRecord([]byte{1})); err != nil {
			return err
		}
		return meta.Put(metaCounts, encodeRecord(encodeCounts(c)))
	})
}

// sortKV orders records by key and drops duplicate keys.
func sortKV(r []kv) []kv {
	slices.SortFunc(r, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	return slices.CompactFunc(r, func(a, b kv) bool { return bytes.Equal(a.k, b.k) })
}
