package format

import (
	"encoding/binary"
	"errors"
)

// Replay runs: a replay puts each dead batch's events back at its source's tail with new keys,
// one run of consecutive keys per batch, and notes the run in meta, so that the dead batch the
// events may form again knows how many times they were replayed:
//
//	meta "p.<source>/"+first key  → record([last key (20)][replays (u32, big-endian)])
//
// A run is deleted once none of its events is queued any more.

// ReplayPrefixOf is the prefix of the meta keys of source's replay runs (source is never "":
// the default source is spelled out, unlike in RetryPrefixOf, as no older file has runs).
func ReplayPrefixOf(source string) string { return "p." + source + "/" }

// ReplayRun is one replay run of a source: its first and last event keys and the replays of
// the batch its events were.
type ReplayRun struct {
	First, Last []byte
	Replays     int
}

// EncodeReplayRun is the payload of r's meta record (its key holds First).
func EncodeReplayRun(r ReplayRun) []byte {
	return binary.BigEndian.AppendUint32(append(make([]byte, 0, 24), r.Last...), uint32(r.Replays))
}

var errReplayFormat = errors.New("malformed replay run")

// DecodeReplayRun reads the payload p of the run whose first key is first.
func DecodeReplayRun(first, p []byte) (ReplayRun, error) {
	if len(p) != 24 {
		return ReplayRun{}, errReplayFormat
	}
	return ReplayRun{First: first, Last: p[:20], Replays: int(binary.BigEndian.Uint32(p[20:]))}, nil
}
