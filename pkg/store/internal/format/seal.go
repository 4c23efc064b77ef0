package format

import (
	"crypto/rand"
	"fmt"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// Sealed record layout (queue.encryption.key_files set; events and dead batches):
//
//	[0]       sealedVersion
//	[1:5]     id of the key that sealed it (keyring.ID)
//	[5:17]    nonce (12 bytes: one of a run from a random start, see Nonces)
//	[17:]     AES-256-GCM ciphertext of the payload, then its 16-byte tag
//
// The additional data is the record's first 5 bytes, the bucket's name and the record's key:
// a record copied under another key or into another bucket fails its tag, as a record damaged
// on disk does, and is read as damaged (errs.ErrChecksum). A failed tag is the sealed record's
// checksum failure. Nonces are random (see Nonces): a key should seal well under 2^32 records
// (a few billion events) before it is rotated (keygen, put the new key first, restart).
//
// Meta records (counters, retry states, the seal set) hold no event data and stay plain
// records.
const (
	sealedVersion = 2
	sealedHeader  = 1 + keyring.IDSize + nonceSize
	nonceSize     = 12
	tagSize       = 16
	// SealedOverhead is the bytes a sealed record adds to its payload.
	SealedOverhead = sealedHeader + tagSize
)

// Scratch is the room a Codec call builds the additional data in; one per goroutine, so that
// sealing and opening allocate nothing.
type Scratch [64]byte

// Codec writes and reads the records of the events and dead buckets: sealed with the keyring's
// first key when it has one, plain records otherwise. It is a value, safe for concurrent use
// (each goroutine brings its own Scratch).
type Codec struct {
	keys *keyring.Keyring
	seal keyring.Key
	on   bool
}

// NewCodec returns the codec of kr (nil: plain records).
func NewCodec(kr *keyring.Keyring) Codec {
	k, on := kr.Sealing()
	return Codec{keys: kr, seal: k, on: on}
}

// Sealing reports whether the codec seals what it writes.
func (c Codec) Sealing() bool { return c.on }

// Keys returns the codec's keyring (nil when plain).
func (c Codec) Keys() *keyring.Keyring { return c.keys }

// Overhead is the bytes a record written by c adds to its payload.
func (c Codec) Overhead() int {
	if c.on {
		return SealedOverhead
	}
	return RecordHeader
}

// PayloadLen is the length of rec's payload, known from its version and length alone (nothing
// is verified); 0 for a record too short or of an unknown version.
func PayloadLen(rec []byte) int {
	if len(rec) == 0 {
		return 0
	}
	switch rec[0] {
	case recordVersion:
		return max(len(rec)-RecordHeader, 0)
	case sealedVersion:
		return max(len(rec)-SealedOverhead, 0)
	}
	return 0
}

// SealedBy returns the id of the key that sealed rec, and false when rec is not a sealed record.
func SealedBy(rec []byte) (keyring.ID, bool) {
	var id keyring.ID
	if len(rec) < SealedOverhead || rec[0] != sealedVersion {
		return id, false
	}
	copy(id[:], rec[1:1+keyring.IDSize])
	return id, true
}

// Nonces hands out the nonces of the records one caller seals: consecutive 96-bit values
// (big-endian, wrapping) from a start drawn from crypto/rand, drawn again every nonceRun
// records. Two records share a nonce only if two runs' ranges overlap, which is less likely
// than two of as many nonces drawn one by one colliding (a run of L values is one draw instead
// of L); nothing is kept across restarts, so a restart cannot repeat a sequence. It saves the
// crypto/rand call per record (about as costly as sealing a small event's first blocks). The
// zero value is ready; a Nonces is used by one goroutine.
type Nonces struct {
	next [nonceSize]byte
	left int
}

// nonceRun is how many records one random start serves at most.
const nonceRun = 1 << 16

// put writes the next nonce into dst (nonceSize bytes).
func (n *Nonces) put(dst []byte) {
	if n.left == 0 {
		_, _ = rand.Read(n.next[:]) // never fails (crypto/rand crashes the program instead)
		n.left = nonceRun
	}
	copy(dst, n.next[:])
	for i := nonceSize - 1; i >= 0; i-- {
		n.next[i]++
		if n.next[i] != 0 {
			break
		}
	}
	n.left--
}

// AppendUnsealed appends to dst the record of payload as c writes it, but not yet sealed: a
// sealed record's nonce (the next of nonces; nil draws a fresh random one) and its payload in
// the clear, with room for the tag. Seal finishes it once its key is known. For a plain codec
// the record is complete. It lets the copy of each event be made before the record's key is
// chosen (the store's writer chooses it).
func (c Codec) AppendUnsealed(dst, payload []byte, nonces *Nonces) []byte {
	if !c.on {
		return AppendRecord(dst, payload)
	}
	if nonces == nil {
		nonces = new(Nonces)
	}
	dst = append(dst, sealedVersion)
	dst = append(dst, c.seal.ID[:]...)
	n := len(dst)
	dst = append(dst, make([]byte, nonceSize)...)
	nonces.put(dst[n:])
	dst = append(dst, payload...)
	return append(dst, make([]byte, tagSize)...)
}

// Seal seals, in place, a record AppendUnsealed built, as the record of key in bucket. For a
// plain codec it does nothing.
func (c Codec) Seal(rec, bucket, key []byte, s *Scratch) {
	if !c.on {
		return
	}
	end := len(rec) - tagSize
	plain := rec[sealedHeader:end:len(rec)]
	c.seal.AEAD.Seal(plain[:0], rec[1+keyring.IDSize:sealedHeader], plain, additional(s, rec, bucket, key))
}

// Append appends the finished record of payload, stored under key in bucket.
func (c Codec) Append(dst, bucket, key, payload []byte, s *Scratch) []byte {
	n := len(dst)
	var nonces Nonces
	dst = c.AppendUnsealed(dst, payload, &nonces)
	c.Seal(dst[n:], bucket, key, s)
	return dst
}

// Encode returns a fresh finished record of payload, stored under key in bucket.
func (c Codec) Encode(bucket, key, payload []byte) []byte {
	var s Scratch
	return c.Append(make([]byte, 0, c.Overhead()+len(payload)), bucket, key, payload, &s)
}

// Open verifies rec, stored under key in bucket, and appends its payload to dst, returning
// the extended dst and the payload (the part appended). A plain record that fails its CRC, a
// sealed one whose tag fails (damage, or a record moved to another key or bucket), one sealed
// by a key the codec does not have and, when the codec seals, a plain record (an encrypted
// queue holds none) are errs.ErrChecksum, wrapped; dst is then returned unchanged.
func (c Codec) Open(dst, bucket, key, rec []byte, s *Scratch) ([]byte, []byte, error) {
	if len(rec) > 0 && rec[0] == recordVersion {
		if c.on {
			return dst, nil, fmt.Errorf("%w: a plain record in an encrypted queue", errs.ErrChecksum)
		}
		p, err := DecodeRecord(rec)
		if err != nil {
			return dst, nil, err
		}
		n := len(dst)
		dst = append(dst, p...)
		return dst, dst[n:], nil
	}
	return c.OpenSealed(dst, bucket, key, rec, s)
}

// OpenAny is Open accepting a plain record whatever the codec: for the tools that turn a plain
// queue into a sealed one and back (the store's seal-at-start, rekey, recover).
func (c Codec) OpenAny(dst, bucket, key, rec []byte, s *Scratch) ([]byte, []byte, error) {
	if len(rec) > 0 && rec[0] == recordVersion {
		return NewCodec(nil).Open(dst, bucket, key, rec, s)
	}
	return c.OpenSealed(dst, bucket, key, rec, s)
}

// OpenSealed is Open for a sealed record.
func (c Codec) OpenSealed(dst, bucket, key, rec []byte, s *Scratch) ([]byte, []byte, error) {
	if len(rec) < RecordHeader {
		return dst, nil, fmt.Errorf("%w: record of %d bytes is shorter than its header", errs.ErrChecksum, len(rec))
	}
	if rec[0] != sealedVersion {
		return dst, nil, fmt.Errorf("%w: unknown record version %d", errs.ErrChecksum, rec[0])
	}
	id, ok := SealedBy(rec)
	if !ok {
		return dst, nil, fmt.Errorf("%w: sealed record of %d bytes is shorter than its header and tag", errs.ErrChecksum, len(rec))
	}
	k, ok := c.keys.Find(id)
	if !ok {
		return dst, nil, fmt.Errorf("%w: record sealed with key %s, which is not configured", errs.ErrChecksum, id)
	}
	n := len(dst)
	out, err := k.AEAD.Open(dst, rec[1+keyring.IDSize:sealedHeader], rec[sealedHeader:], additional(s, rec, bucket, key))
	if err != nil {
		return dst[:n], nil, fmt.Errorf("%w: sealed record fails its tag (damaged, or not stored where it was sealed)", errs.ErrChecksum)
	}
	return out, out[n:], nil
}

// Payload is Open into a fresh slice for a sealed record, or rec's own payload (aliasing it)
// for a plain one.
func (c Codec) Payload(bucket, key, rec []byte) ([]byte, error) {
	var s Scratch
	if len(rec) > 0 && rec[0] == recordVersion && !c.on {
		return DecodeRecord(rec)
	}
	_, p, err := c.Open(nil, bucket, key, rec, &s)
	return p, err
}

// additional builds the additional data of a sealed record in s: its version and key id, the
// bucket's name (with its length) and the record's key.
func additional(s *Scratch, rec, bucket, key []byte) []byte {
	ad := append(s[:0], rec[:1+keyring.IDSize]...)
	ad = append(ad, byte(len(bucket)))
	ad = append(ad, bucket...)
	return append(ad, key...)
}
