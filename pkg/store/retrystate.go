package store

import (
	"bytes"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
)

// Per-batch retry states: each batch in flight saves its own under its first key in meta, as
// [first key (20)][event count (4, big-endian)][state (the caller's bytes, opaque here)].

// clearRetry deletes the retry states saved for batches of source that start between first
// and last (the keys of one batch, or of several consecutive ones acknowledged together), in
// either form (see retryKey).
func clearRetry(b *buckets, source string, first, last []byte) error {
	if err := clearLegacyRetry(b, first); err != nil {
		return err
	}
	var gone [][]byte
	prefix := format.RetryPrefixOf(source)
	c := b.meta.Cursor()
	for k, _ := c.Seek(retryKey(source, first)); k != nil && bytes.HasPrefix(k, []byte(prefix)) &&
		bytes.Compare(k[len(prefix):], last) <= 0; k, _ = c.Next() {
		gone = append(gone, append([]byte(nil), k...))
	}
	for _, k := range gone {
		if err := b.meta.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// clearLegacyRetry deletes the single head retry state of files written before several
// batches could be in flight, when it belongs to headKey.
func clearLegacyRetry(b *buckets, headKey []byte) error {
	if v := b.meta.Get(format.MetaRetry); v != nil && len(v) >= format.RecordHeader+20 && bytes.Equal(v[format.RecordHeader:format.RecordHeader+20], headKey) {
		return b.meta.Delete(format.MetaRetry)
	}
	return nil
}

// retryKey is the meta key of the retry state of the batch of source whose first event key is
// headKey: one per batch in flight, so that each keeps its own across a restart. Each source
// has its own prefix (format.RetryPrefixOf), so a cursor seek finds the next saved batch of
// the same source at or after a key.
func retryKey(source string, headKey []byte) []byte {
	prefix := format.RetryPrefixOf(source)
	return append(append(make([]byte, 0, len(prefix)+len(headKey)), prefix...), headKey...)
}
