package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeRecord returns a fresh record holding payload.
func encodeRecord(payload []byte) []byte {
	rec := make([]byte, recordHeader+len(payload))
	rec[0] = recordVersion
	binary.BigEndian.PutUint32(rec[1:5], crc32.Checksum(payload, castagnoli))
	copy(rec[recordHeader:], payload)
	return rec
}

// decodeRecord verifies rec and returns its payload (aliasing rec).
func decodeRecord(rec []byte) ([]byte, error) {
	if len(rec) < recordHeader {
		return nil, fmt.Errorf("%w: record of %d bytes is shorter than its header", ErrChecksum, len(rec))
	}
	if rec[0] != recordVersion {
		return nil, fmt.Errorf("%w: unknown record version %d", ErrChecksum, rec[0])
	}
	payload := rec[recordHeader:]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rec[1:5]) {
		return nil, ErrChecksum
	}
	return payload, nil
}
