package format

import (
	"fmt"
	"slices"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// MetaSeal is the meta key of the seal set: which keys may have sealed a stored record, and
// whether plain records may be stored. It is a superset, kept so that an open finds a missing
// key without reading every record: the store adds its sealing key (or the plain mark) before
// it writes its first record, and only a rewrite of every record (seal-at-start, rekey,
// recover) or an empty queue makes it exact again.
var MetaSeal = []byte("seal")

// SealSet is the payload of the meta "seal" record: [flags][n × key id], flag 1 = plain
// records may be stored.
type SealSet struct {
	Plain bool
	IDs   []keyring.ID
}

// Has reports whether id is in the set.
func (s SealSet) Has(id keyring.ID) bool { return slices.Contains(s.IDs, id) }

// With returns the set with id added.
func (s SealSet) With(id keyring.ID) SealSet {
	if s.Has(id) {
		return s
	}
	return SealSet{Plain: s.Plain, IDs: append(slices.Clone(s.IDs), id)}
}

// Equal reports whether two sets hold the same marks and ids, in any order.
func (s SealSet) Equal(o SealSet) bool {
	if s.Plain != o.Plain || len(s.IDs) != len(o.IDs) {
		return false
	}
	for _, id := range s.IDs {
		if !o.Has(id) {
			return false
		}
	}
	return true
}

// Missing returns the ids of the set that kr does not have.
func (s SealSet) Missing(kr *keyring.Keyring) []keyring.ID {
	var out []keyring.ID
	for _, id := range s.IDs {
		if _, ok := kr.Find(id); !ok {
			out = append(out, id)
		}
	}
	return out
}

// EncodeSealSet is the payload of the meta "seal" record.
func EncodeSealSet(s SealSet) []byte {
	b := make([]byte, 1, 1+len(s.IDs)*keyring.IDSize)
	if s.Plain {
		b[0] = 1
	}
	for _, id := range s.IDs {
		b = append(b, id[:]...)
	}
	return b
}

// ReadSealSet reads meta's "seal" record; ok is false when there is none (a file written before
// records could be sealed: every record is plain).
func ReadSealSet(meta interface{ Get([]byte) []byte }) (s SealSet, ok bool, err error) {
	v := meta.Get(MetaSeal)
	if v == nil {
		return SealSet{Plain: true}, false, nil
	}
	p, err := DecodeRecord(v)
	if err != nil || len(p) < 1 || (len(p)-1)%keyring.IDSize != 0 || p[0] > 1 {
		return SealSet{}, false, fmt.Errorf("meta seal set: %w", errs.ErrChecksum)
	}
	s.Plain = p[0] == 1
	for b := p[1:]; len(b) > 0; b = b[keyring.IDSize:] {
		var id keyring.ID
		copy(id[:], b)
		s.IDs = append(s.IDs, id)
	}
	return s, true, nil
}
