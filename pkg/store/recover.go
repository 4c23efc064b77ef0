package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"time"

	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// Report is what Recover did. Unreadable, BadRecords and BadPages count what
// could be seen to be lost; MissingBytes and StoredEvents − Saved show loss
// that cannot be counted record by record (a truncated file, a lost page).
type Report struct {
	Saved      int    // queued events copied into the fresh file
	DeadSaved  int    // dead-letter batches copied
	Unreadable int    // BadRecords + BadPages
	MovedTo    string // where the old file now lives (inside the data directory); empty when nothing was moved

	// Healthy is true when the file opened and passed the full check
	// (bbolt's structure and every record's checksum). Without
	// RecoverOptions.Force, Recover then changes nothing: MovedTo is empty
	// and Saved is 0, and StoredEvents/StoredDeadBatches are what the file
	// holds.
	Healthy bool
	// BadRecords counts records that were found but fail their checksum (or
	// are malformed dead batches): each was one event or one dead batch.
	BadRecords int
	// BadPages counts pages the file's tree points at that could not be read
	// (beyond the end of the file, not naming themselves, malformed). Each
	// may have held many events; how many is not known.
	BadPages int
	// MissingBytes is how much shorter the file is than its meta page says it
	// must be (high-water page id × page size − file size): the file was
	// truncated and whatever those bytes held is lost. 0 when the file is
	// whole, or when no meta page was readable (Scanned).
	MissingBytes int64
	// StoredEvents and StoredDeadBatches are the file's own counters as of
	// its last commit, or -1 when that record could not be read. When Saved
	// is smaller, at least StoredEvents − Saved events were lost.
	StoredEvents, StoredDeadBatches int64
	// Scanned is true when neither meta page was readable, so the file's
	// tree could not be followed: records were found by reading every page
	// as a leaf (at the page size PageSize that yields the most). Events that
	// were already acknowledged but still sat on freed pages may come back
	// (at-least-once; collectors dedupe on messageId), and neither
	// truncation nor lost pages can be measured.
	Scanned bool
	// PageSize is the page size the old file was read with (0 when nothing
	// in it could be read).
	PageSize int
}

// RecoverOptions change what Recover does.
type RecoverOptions struct {
	// Force salvages even a file that passes the full check (moving it
	// aside and copying it). Without it, a healthy file is left as is.
	Force bool
	// Now is the clock for the set-aside name; time.Now when nil.
	Now func() time.Time
}

// Recover is RecoverWith(dir, RecoverOptions{}).
func Recover(dir string) (Report, error) {
	return RecoverWith(dir, RecoverOptions{})
}

// RecoverWith repairs dir's data file. It takes the directory lock
// (ErrLocked while an agent runs). A file that opens and passes the full
// check is left untouched (Report.Healthy) unless opt.Force. Otherwise it
// reads the old file page by page without trusting it (out-of-range,
// misnamed or malformed pages are skipped and counted; with both meta pages
// lost, every page is scanned), copies every readable record, with its
// original key (so order), into a fresh file and recomputes the counters.
// Only when that file is complete and synced does the old one get its new
// name, <name>.corrupt-<UTC time to the microsecond>[-n]: a hard link (or a
// rename where links are not supported) that never replaces an existing
// file, so no earlier .corrupt file is ever overwritten. Then the fresh file
// is renamed over <name>. The old bytes are never modified or deleted.
func RecoverWith(dir string, opt RecoverOptions) (Report, error) {
	rep := Report{StoredEvents: -1, StoredDeadBatches: -1}
	if opt.Now == nil {
		opt.Now = time.Now
	}
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
	if len(data) == 0 {
		// What bbolt makes a new queue from (Open treats it so): nothing to salvage.
		rep.Healthy, rep.StoredEvents, rep.StoredDeadBatches = true, 0, 0
		return rep, nil
	}
	if res, ok := checkHealthy(path, data); ok {
		rep.Healthy = true
		if !opt.Force {
			rep.StoredEvents, rep.StoredDeadBatches = res.actual.Events, res.actual.DeadBatches
			return rep, nil
		}
	}
	sal, err := safeSalvage(data)
	if err != nil {
		return rep, fmt.Errorf("recover: read %s: %w; nothing was changed", path, err)
	}
	sal.report(&rep, int64(len(data)))
	tmp := path + ".recover"
	_ = os.Remove(tmp) // ours: left by a recover that crashed before its rename
	db, err := openDB(tmp, false, 0)
	if err != nil {
		return rep, fmt.Errorf("recover: create fresh file: %w", err)
	}
	err = writeSalvage(db, sal, &rep)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return rep, err
	}
	if rep.MovedTo, err = setAside(path, opt.Now()); err != nil {
		_ = os.Remove(tmp)
		return rep, fmt.Errorf("recover: move aside: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return rep, fmt.Errorf("recover: put the fresh file %s in place: %w", tmp, err)
	}
	if err := syncDir(dir); err != nil {
		return rep, fmt.Errorf("recover: %w", err)
	}
	return rep, nil
}

// setAside gives path the name <path>.corrupt-<UTC time>, adding -1, -2, …
// when that is taken. It never replaces a file: a hard link fails when the
// name exists; where links are not supported it renames after checking
// that the name is free (the directory lock keeps other outbox processes
// out meanwhile). With a link, path still names the old file until the
// caller renames the fresh one over it.
func setAside(path string, now time.Time) (string, error) {
	base := path + ".corrupt-" + now.UTC().Format("20060102T150405.000000Z")
	for i := 0; i < 1000; i++ {
		target := base
		if i > 0 {
			target = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Link(path, target)
		if err == nil {
			return target, nil
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if _, serr := os.Lstat(target); serr == nil {
			continue
		} else if !errors.Is(serr, fs.ErrNotExist) {
			return "", serr
		}
		if err := os.Rename(path, target); err != nil {
			return "", err
		}
		return target, nil
	}
	return "", fmt.Errorf("every name %s-n is taken", base)
}

// checkHealthy reports whether the file at path (whose bytes are data)
// passes the full check: the structure check of validateData first (so a
// file with a damaged meta page is not healthy: bbolt would silently fall
// back to the previous commit, losing the newest; and a damaged file is never
// handed to bbolt), then every record's checksum, read with bbolt read-only.
func checkHealthy(path string, data []byte) (res checkResult, ok bool) {
	if validateData(data) != nil {
		return res, false
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	if err != nil {
		return res, false
	}
	defer func() { _ = db.Close() }()
	res, err = checkDB(db, nil)
	return res, err == nil
}

type kv struct{ k, v []byte }

type salvaged struct {
	events, dead []kv
	retry        []byte
	stored       *counts // the file's counters; nil when unreadable
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

// oneValue is a bucket holding one value, for readCounts.
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
// not be followed completely it also scans the pages it did not reach; with
// no valid meta page it scans every page.
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
		if bytes.Equal(name, bucketEvents) || bytes.Equal(name, bucketDead) {
			found++
		}
		_ = f.walkBucket(v, func(k, val []byte) {
			p, err := decodeRecord(val)
			if err != nil {
				s.badRecords++
				return
			}
			rec := kv{append([]byte(nil), k...), append([]byte(nil), val...)}
			switch {
			case bytes.Equal(name, bucketMeta) || (!bytes.Equal(name, bucketEvents) && !bytes.Equal(name, bucketDead) && len(k) != 20):
				// The meta bucket, or one whose name was damaged holding meta keys.
				switch {
				case bytes.Equal(k, metaRetry):
					s.retry = rec.v
				case bytes.Equal(k, metaCounts):
					if c, err := readCounts(oneValue(val)); err == nil {
						s.stored = &c
					}
				}
			case len(k) != 20:
				s.badRecords++
			case bytes.Equal(name, bucketDead) || (!bytes.Equal(name, bucketEvents) && isDeadPayload(p)):
				if !isDeadPayload(p) {
					s.badRecords++
					return
				}
				s.dead = append(s.dead, rec)
				lastDead = later(lastDead, rec.k)
			default: // the events bucket, or one whose name was damaged
				s.events = append(s.events, rec)
				lastEvent = later(lastEvent, rec.k)
			}
		})
	})
	s.badPages = f.badPages
	s.badRecords += f.nested
	switch {
	case f.badPages > 0 || found < 2:
		// Part of the tree is lost (or a bucket's header, so its pages were
		// not reached): take every record the walk missed.
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

// isDeadPayload reports whether p is a well-formed dead batch.
func isDeadPayload(p []byte) bool {
	h, err := decodeDeadHeader(p)
	if err != nil {
		return false
	}
	_, err = deadEvents(h)
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
			out = append(out, kv{append([]byte(nil), last.Bytes()...), rec.v})
		}
	}
	return out
}
