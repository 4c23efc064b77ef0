package format

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/outboxhq/outbox/pkg/errs"
)

// Several sources share one file: each source's events are a FIFO of their own, in a bucket of
// their own, so that a batch is read from one source and one source's backlog never sits in
// front of another's events.
//
//	events            the source named "default" (the one bucket of files written before
//	                  there were several sources, which therefore open unchanged)
//	events.<name>     the source <name>
//	meta "n/<name>"   → record(2 × u64: events, bytes) of a source other than default;
//	                  default's are the totals ("counts") less the others'
//	meta "r/"+KSUID   retry state of a default batch; "r.<name>/"+KSUID of a batch of <name>
//
// Keys are strictly increasing across every source (one writer hands them out), so a key
// names one event of the whole file, and a dead batch's id never equals an event's key.

// DefaultSource is the name of the source that a single-source configuration means.
const DefaultSource = "default"

// MetaSourceCountsPrefix starts the meta key of a source's counters (see above).
const MetaSourceCountsPrefix = "n/"

// EventsBucket is the name of source's events bucket ("" is DefaultSource).
func EventsBucket(source string) []byte {
	if source == "" || source == DefaultSource {
		return BucketEvents
	}
	return []byte(string(BucketEvents) + "." + source)
}

// SourceOfBucket returns the source whose events bucket is name, false when name is not an
// events bucket.
func SourceOfBucket(name []byte) (string, bool) {
	if bytes.Equal(name, BucketEvents) {
		return DefaultSource, true
	}
	if rest, ok := bytes.CutPrefix(name, append(BucketEvents[:len(BucketEvents):len(BucketEvents)], '.')); ok && len(rest) > 0 {
		return string(rest), true
	}
	return "", false
}

// RetryPrefixOf is the prefix of the meta keys of source's retry states.
func RetryPrefixOf(source string) string {
	if source == "" || source == DefaultSource {
		return RetryPrefix
	}
	return "r." + source + "/"
}

// SourceCountsKey is the meta key of the counters of source (not DefaultSource).
func SourceCountsKey(source string) []byte { return []byte(MetaSourceCountsPrefix + source) }

// EncodeSourceCounts is the payload of a source's counters record.
func EncodeSourceCounts(events, bytes int64) []byte {
	buf := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(events))
	return binary.BigEndian.AppendUint64(buf, uint64(bytes))
}

// DecodeSourceCounts reads a source's counters record; errs.ErrChecksum when it fails its
// checksum or has the wrong length.
func DecodeSourceCounts(rec []byte) (events, bytes int64, err error) {
	p, err := DecodeRecord(rec)
	if err != nil || len(p) != 16 {
		return 0, 0, fmt.Errorf("source counters: %w", errs.ErrChecksum)
	}
	return int64(binary.BigEndian.Uint64(p)), int64(binary.BigEndian.Uint64(p[8:])), nil
}
