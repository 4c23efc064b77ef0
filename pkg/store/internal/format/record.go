package format

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/outboxhq/outbox/pkg/errs"
)

// Record layout (every value in every bucket):
//
//	[0]    format version (recordVersion)
//	[1:5]  CRC-32C (Castagnoli) of the payload, big endian
//	[5:]   payload
const (
	recordVersion = 1
	// RecordHeader is the bytes before a record's payload: its version and CRC.
	RecordHeader = 5
)

// castagnoli is computed once; crc32 uses the SSE4.2/ARM64 instruction for it where present.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeRecord returns a fresh record holding payload.
func EncodeRecord(payload []byte) []byte {
	return AppendRecord(make([]byte, 0, RecordHeader+len(payload)), payload)
}

// AppendRecord appends the record holding payload to dst.
func AppendRecord(dst, payload []byte) []byte {
	dst = append(dst, recordVersion)
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// DecodeRecord verifies rec and returns its payload (aliasing rec).
func DecodeRecord(rec []byte) ([]byte, error) {
	if len(rec) < RecordHeader {
		return nil, fmt.Errorf("%w: record of %d bytes is shorter than its header", errs.ErrChecksum, len(rec))
	}
	if rec[0] != recordVersion {
		return nil, fmt.Errorf("%w: unknown record version %d", errs.ErrChecksum, rec[0])
	}
	payload := rec[RecordHeader:]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rec[1:5]) {
		return nil, errs.ErrChecksum
	}
	return payload, nil
}
