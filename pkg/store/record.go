package store

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
	recordHeader  = 5
)

// castagnoli is computed once; crc32 uses the SSE4.2/ARM64 instruction for it where present.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeRecord returns a fresh record holding payload.
func encodeRecord(payload []byte) []byte {
	return appendRecord(make([]byte, 0, recordHeader+len(payload)), payload)
}

// appendRecord appends the record holding payload to dst.
func appendRecord(dst, payload []byte) []byte {
	dst = append(dst, recordVersion)
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// decodeRecord verifies rec and returns its payload (aliasing rec).
func decodeRecord(rec []byte) ([]byte, error) {
	if len(rec) < recordHeader {
		return nil, fmt.Errorf("%w: record of %d bytes is shorter than its header", errs.ErrChecksum, len(rec))
	}
	if rec[0] != recordVersion {
		return nil, fmt.Errorf("%w: unknown record version %d", errs.ErrChecksum, rec[0])
	}
	payload := rec[recordHeader:]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rec[1:5]) {
		return nil, errs.ErrChecksum
	}
	return payload, nil
}
