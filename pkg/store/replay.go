package store

import (
	"bytes"
	"encoding/json"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// Replay counts. A replay puts a dead batch's events back at its source's tail with new keys,
// and the batch they form there is cut by the uploader's batching, not by the dead batch they
// were: it may hold part of them, or them and others. So the count cannot travel with a
// batch. It travels with the keys instead: each dead batch replayed becomes one run of
// consecutive keys (the writer hands them out in order, one request at a time), noted in meta
// with the batch's replays plus one (internal/format, replay.go). A batch that dies takes the
// most replays of the runs its keys fall in; events never replayed count none. The events
// themselves, and so their messageIds, are put back byte for byte.
//
// A run is deleted once none of its events is queued any more: an ack looks at the runs its
// keys fall in (a seek in meta when there are none), and a dead-lettering or a replay, which are
// rare, looks at them all, which also catches the runs whose events were forgotten, evicted or
// dropped.

// replayRunsIn returns the replay runs of source that share a key with [first, last].
func replayRunsIn(meta *bolt.Bucket, source string, first, last []byte) []format.ReplayRun {
	p := []byte(format.ReplayPrefixOf(sourceName(source)))
	c := meta.Cursor()
	if k, _ := c.Seek(p); k == nil || !bytes.HasPrefix(k, p) {
		return nil // the common case: no run of this source
	}
	var out []format.ReplayRun
	from := append(p[:len(p):len(p)], first...)
	// Runs never share a key, so of those starting before first only the last can reach it.
	k, _ := c.Seek(from)
	pk, pv := c.Last()
	if k != nil {
		pk, pv = c.Prev()
	}
	if run, ok := readReplayRun(p, pk, pv); ok && bytes.Compare(run.Last, first) >= 0 {
		out = append(out, run)
	}
	for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, p) && bytes.Compare(k[len(p):], last) <= 0; k, v = c.Next() {
		if run, ok := readReplayRun(p, k, v); ok {
			out = append(out, run)
		}
	}
	return out
}

// readReplayRun decodes the run under meta key k (with prefix p) and value v, copied; ok is
// false for a key that is not a run of p or a record that fails its checksum (ignored: it
// counts no replay).
func readReplayRun(p, k, v []byte) (format.ReplayRun, bool) {
	if len(k) != len(p)+20 || !bytes.HasPrefix(k, p) {
		return format.ReplayRun{}, false
	}
	payload, err := format.DecodeRecord(v)
	if err != nil {
		return format.ReplayRun{}, false
	}
	run, err := format.DecodeReplayRun(bytes.Clone(k[len(p):]), bytes.Clone(payload))
	return run, err == nil
}

// replaysIn is the most replays of the runs of source that share a key with [first, last].
func replaysIn(meta *bolt.Bucket, source string, first, last []byte) int {
	n := 0
	for _, run := range replayRunsIn(meta, source, first, last) {
		n = max(n, run.Replays)
	}
	return n
}

// putReplayRun notes a run of source.
func putReplayRun(meta *bolt.Bucket, source string, run format.ReplayRun) error {
	k := append([]byte(format.ReplayPrefixOf(sourceName(source))), run.First...)
	return meta.Put(k, format.EncodeRecord(format.EncodeReplayRun(run)))
}

// runQueued reports whether an event of run is still queued in source.
func runQueued(b *buckets, source string, run format.ReplayRun) bool {
	bk := b.lookup(source)
	if bk == nil {
		return false
	}
	k, _ := bk.Cursor().Seek(run.First)
	return k != nil && bytes.Compare(k, run.Last) <= 0
}

// pruneReplayRunsIn deletes the runs of source that share a key with [first, last] (keys just
// deleted) and have no event queued any more.
func pruneReplayRunsIn(b *buckets, source string, first, last []byte) error {
	for _, run := range replayRunsIn(b.meta, source, first, last) {
		if runQueued(b, source, run) {
			continue
		}
		if err := b.meta.Delete(append([]byte(format.ReplayPrefixOf(sourceName(source))), run.First...)); err != nil {
			return err
		}
	}
	return nil
}

// pruneReplayRuns deletes every run, of every source, that has no event queued any more.
func pruneReplayRuns(b *buckets) error {
	const all = "p."
	var gone [][]byte
	c := b.meta.Cursor()
	for k, v := c.Seek([]byte(all)); k != nil && bytes.HasPrefix(k, []byte(all)); k, v = c.Next() {
		slash := bytes.IndexByte(k, '/') // source names hold no '/'; the key after it may
		if slash < 0 {
			continue
		}
		source := string(k[len(all):slash])
		run, ok := readReplayRun(k[:slash+1], k, v)
		if !ok || !runQueued(b, source, run) {
			gone = append(gone, bytes.Clone(k))
		}
	}
	for _, k := range gone {
		if err := b.meta.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// withReplays is the encoded DeadInfo info with Replays set to n (info as it is when n is 0:
// MoveDeadIn encodes it with none).
func withReplays(info []byte, n int) []byte {
	if n == 0 {
		return info
	}
	var d DeadInfo
	if err := json.Unmarshal(info, &d); err != nil {
		return info // our own encoding: cannot fail
	}
	d.Replays = n
	return encodeDeadInfo(d)
}
