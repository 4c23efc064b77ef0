package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/outboxhq/outbox/pkg/store/fsck"
	"github.com/outboxhq/outbox/pkg/store/internal/datadir"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
	bolt "go.etcd.io/bbolt"
)

// Encryption at rest at open, and rekey: which keys the file needs (the seal set, checked
// before anything is written), sealing what a plain queue holds when keys are given, and
// rewriting every record under another key or none (Rekey). doc.go, "Encryption at rest",
// has the model.

// keyState is what checkKeys found: the seal set to store, and whether plain records are left
// to seal (keys given over a queue that held plain records).
type keyState struct {
	set       format.SealSet
	sealPlain bool
}

// checkKeys reads which keys the file's records need and fails with a *keyring.MissingError,
// before anything is written, when kr lacks one of them. The seal set in meta is a superset;
// only when it names a key kr lacks are the records themselves read (their headers only), so
// that a key no record uses any more is not asked for.
func checkKeys(db *bolt.DB, path string, kr *keyring.Keyring) (ks keyState, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fsck.PanicErr(r)
		}
	}()
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(format.BucketMeta)
		// Every bucket of records: each source's events (format.SourceOfBucket) and the dead.
		var records []*bolt.Bucket
		_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if _, ok := format.SourceOfBucket(name); ok || bytes.Equal(name, format.BucketDead) {
				records = append(records, b)
			}
			return nil
		})
		empty := true
		for _, b := range records {
			if b != nil {
				if k, _ := b.Cursor().First(); k != nil {
					empty = false
				}
			}
		}
		set := format.SealSet{}
		if meta != nil && !empty {
			var err error
			if set, _, err = format.ReadSealSet(meta); err != nil {
				return err
			}
		}
		if len(set.Missing(kr)) > 0 {
			set = exactSealSet(records...) // the set may name a key no record uses any more
		}
		if missing := set.Missing(kr); len(missing) > 0 {
			return &keyring.MissingError{Path: path, IDs: missing, Plain: kr.Len() == 0}
		}
		ks.set = set
		if first, ok := kr.Sealing(); ok {
			ks.sealPlain = set.Plain
			ks.set = ks.set.With(first.ID)
		} else {
			ks.set.Plain = true
		}
		return nil
	})
	return ks, err
}

// exactSealSet reads every record's header: the keys that sealed them, and whether any is plain.
func exactSealSet(buckets ...*bolt.Bucket) format.SealSet {
	var set format.SealSet
	for _, b := range buckets {
		if b == nil {
			continue
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if id, ok := format.SealedBy(v); ok {
				set = set.With(id)
			} else {
				set.Plain = true
			}
		}
	}
	return set
}

// rewriteChunk bounds the records one transaction of a rewrite changes: its dirty pages live
// on the heap until it commits.
const rewriteChunk = 4096

// rewrite writes again, with to, every record of the events and dead buckets that need says
// needs it (opened with from, plain records included), in transactions of at most
// rewriteChunk records, so that a crash leaves every record whole (in one form or the other).
// Before the first it stores the seal set of both forms (during), after the last the set of
// the result (after): a crash in between leaves a set that names every key still needed. A
// record that cannot be opened is left as it is and counted in bad: it was damaged already.
func rewrite(db *bolt.DB, from, to format.Codec, need func(v []byte) bool, during, after format.SealSet) (done, bad int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fsck.PanicErr(r)
		}
	}()
	putSet := func(set format.SealSet) error {
		return db.Update(func(tx *bolt.Tx) error {
			return tx.Bucket(format.BucketMeta).Put(format.MetaSeal, format.EncodeRecord(format.EncodeSealSet(set)))
		})
	}
	if err := putSet(during); err != nil {
		return 0, 0, err
	}
	var scratch format.Scratch
	names := [][]byte{format.BucketDead}
	if err := db.View(func(tx *bolt.Tx) error { // every source's events bucket, and dead
		return eventBuckets(tx, func(src string, _ *bolt.Bucket) error {
			names = append(names, format.EventsBucket(src))
			return nil
		})
	}); err != nil {
		return 0, 0, err
	}
	for _, name := range names {
		var next []byte // where the next chunk starts; nil: the first key
		for more := true; more; {
			more = false
			err := db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(name)
				type put struct{ k, v []byte }
				var puts []put
				c := b.Cursor()
				k, v := c.First()
				if next != nil {
					k, v = c.Seek(next)
				}
				for ; k != nil; k, v = c.Next() {
					if len(puts) == rewriteChunk {
						next, more = append(next[:0], k...), true
						break
					}
					if !need(v) {
						continue
					}
					_, p, err := from.OpenAny(nil, name, k, v, &scratch)
					if err != nil {
						bad++
						continue
					}
					key := append([]byte(nil), k...)
					puts = append(puts, put{key, to.Encode(name, key, p)})
				}
				b.FillPercent = 1.0
				for _, p := range puts {
					if err := b.Put(p.k, p.v); err != nil {
						return err
					}
				}
				done += len(puts)
				return nil
			})
			if err != nil {
				return done, bad, err
			}
		}
	}
	return done, bad, putSet(after)
}

// sealPlain seals, at open, the plain records a queue holds when keys are given (encryption
// turned on over a plain queue), before the writer runs: once Open returns, no event is
// stored in the clear.
func (s *Store) sealPlain(db *bolt.DB, set format.SealSet) error {
	plain := func(v []byte) bool { _, sealed := format.SealedBy(v); return !sealed }
	after := set
	after.Plain = false
	n, bad, err := rewrite(db, s.codec, s.codec, plain, set, after)
	if err != nil {
		return fmt.Errorf("seal the plain records: %w", err)
	}
	if n == 0 && bad == 0 {
		return nil
	}
	s.log.Info("encryption at rest turned on: plain records sealed", "path", s.path, "records", n, "unreadable", bad)
	// The pages that held them in the clear are free but still in the file: a compaction
	// copies the live (sealed) records into a fresh file, which replaces it.
	if err := s.compact(); err != nil {
		return fmt.Errorf("rewrite the file without the plain records' pages: %w", err)
	}
	return nil
}

// RekeyOptions are Rekey's.
type RekeyOptions struct {
	// Keys open every sealed record; the first seals them all. Required unless Decrypt.
	Keys *keyring.Keyring
	// Decrypt writes every record plain again (turning encryption off).
	Decrypt bool
}

// RekeyReport is what Rekey did.
type RekeyReport struct {
	Rewritten int // records sealed again (or written plain)
	Kept      int // records already in the form asked for
}

// Rekey rewrites every record of dir's data file sealed under the first of opt.Keys (after a
// key rotation, so that the older keys can go), or plain with opt.Decrypt (`outbox rekey`). It
// takes the directory lock (errs.ErrLocked while an agent runs), runs the full check first
// (a damaged file is refused with a *CorruptError: recover it first) and fails with a
// *keyring.MissingError, changing nothing, when a record needs a key opt.Keys lacks. Records
// are rewritten in transactions of a few thousand, each whole: a crash leaves a file that
// opens with the same keys, and running Rekey again finishes the work.
func Rekey(dir string, opt RekeyOptions) (RekeyReport, error) {
	rep, err := rekey(dir, opt)
	if err != nil || rep.Rewritten == 0 {
		return rep, err
	}
	// The pages that held the records in their old form are free but still in the file:
	// compaction writes a fresh file of the live records only.
	keys := opt.Keys
	if opt.Decrypt {
		keys = nil
	}
	if _, _, err := Compact(dir, keys); err != nil {
		return rep, fmt.Errorf("rekey: compact: %w", err)
	}
	return rep, nil
}

func rekey(dir string, opt RekeyOptions) (rep RekeyReport, err error) {
	first, sealing := opt.Keys.Sealing()
	if !sealing && !opt.Decrypt {
		return rep, fmt.Errorf("rekey needs the keys: set queue.encryption.key_files (the first key seals)")
	}
	lock, err := datadir.Lock(dir)
	if err != nil {
		return rep, err
	}
	defer func() { _ = lock.Unlock() }()
	path := filepath.Join(dir, FileName)
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return rep, fmt.Errorf("rekey: no data file at %s", path)
	}
	if err := fsck.ValidateFile(path); err != nil {
		return rep, &CorruptError{Path: path, Dir: dir, Err: err}
	}
	db, err := format.OpenDB(path, false, 0)
	if err != nil {
		return rep, &CorruptError{Path: path, Dir: dir, Err: err}
	}
	defer func() {
		db.NoFreelistSync = false // store it in the last commit, as a clean close does
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := checkKeys(db, path, opt.Keys); err != nil {
		return rep, err
	}
	res, err := fsck.CheckRecords(db, opt.Keys, true, nil)
	if err != nil {
		return rep, &CorruptError{Path: path, Dir: dir, Err: err}
	}
	from := format.NewCodec(opt.Keys)
	to, after := from, format.SealSet{IDs: []keyring.ID{first.ID}}
	need := func(v []byte) bool { id, ok := format.SealedBy(v); return !ok || id != first.ID }
	if opt.Decrypt {
		to, after = format.NewCodec(nil), format.SealSet{Plain: true}
		need = func(v []byte) bool { _, ok := format.SealedBy(v); return ok }
	}
	during := res.Seal
	during.Plain = during.Plain || after.Plain
	for _, id := range after.IDs {
		during = during.With(id)
	}
	done, _, err := rewrite(db, from, to, need, during, after)
	rep.Rewritten = done
	rep.Kept = int(res.Actual.Events+res.Actual.DeadBatches) - done
	return rep, err
}

// sameSet reports whether the stored seal set is set.
func sameSet(meta *bolt.Bucket, set format.SealSet) bool {
	v := meta.Get(format.MetaSeal)
	return v != nil && bytes.Equal(v, format.EncodeRecord(format.EncodeSealSet(set)))
}
