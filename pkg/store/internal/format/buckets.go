package format

import (
	"encoding/binary"
	"fmt"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/segmentio/ksuid"
)

// The buckets of the file and the keys of meta (the layout is in doc.go). Every value under
// them is a record (record.go).
var (
	BucketEvents = []byte("events")
	BucketDead   = []byte("dead")
	BucketMeta   = []byte("meta")
	MetaCounts   = []byte("counts")
	MetaRetry    = []byte("retry")
	MetaFormat   = []byte("format")
)

// RetryPrefix starts every per-batch retry key in meta.
const RetryPrefix = "r/"

// Counts are the file's totals: kept in memory by the store, persisted in meta "counts" by
// every commit, recomputed by the full check and by recover.
type Counts struct {
	Events, Bytes                      int64
	DeadBatches, DeadEvents, DeadBytes int64
}

// EncodeCounts is the payload of the meta "counts" record: the five totals, big endian.
func EncodeCounts(c Counts) []byte {
	buf := make([]byte, 0, 40)
	for _, v := range []int64{c.Events, c.Bytes, c.DeadBatches, c.DeadEvents, c.DeadBytes} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(v))
	}
	return buf
}

// ReadCounts reads meta's "counts" record (zero when absent: a new file); a record that fails
// its checksum or has the wrong length is errs.ErrChecksum.
func ReadCounts(meta interface{ Get([]byte) []byte }) (Counts, error) {
	v := meta.Get(MetaCounts)
	if v == nil {
		return Counts{}, nil
	}
	p, err := DecodeRecord(v)
	if err != nil || len(p) != 40 {
		return Counts{}, fmt.Errorf("meta counters: %w", errs.ErrChecksum)
	}
	g := func(i int) int64 { return int64(binary.BigEndian.Uint64(p[i*8:])) }
	return Counts{g(0), g(1), g(2), g(3), g(4)}, nil
}

// KeyString is a key as text: its KSUID, or hex for a key that is not one (a damaged key).
func KeyString(k []byte) string {
	id, err := ksuid.FromBytes(k)
	if err != nil {
		return fmt.Sprintf("%x", k)
	}
	return id.String()
}
