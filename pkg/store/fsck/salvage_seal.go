package fsck

import (
	"bytes"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// Salvaging a sealed file: which bucket a sealed record belongs to, which keys the file
// needs, and sealing a record again for the key it is moved to.

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
