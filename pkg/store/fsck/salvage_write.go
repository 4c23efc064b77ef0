package fsck

import (
	"fmt"
	"maps"
	"slices"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// writeSalvage writes what salvage found into a fresh file: each source's events in its own
// bucket, the dead letters, and the meta records with the counters recomputed.
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
