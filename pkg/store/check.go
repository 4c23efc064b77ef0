package store

import (
	"context"
	"errors"

	"github.com/outboxhq/outbox/pkg/store/fsck"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
)

// The running store's side of the full check (fsck.CheckRecords): on a large file it runs in
// the background while intake runs, and counters found off are corrected through the writer.

// backgroundCheck checks a large file while intake runs. On failure it stops
// every write (they return the *CorruptError) and calls OnCorrupt.
func (s *Store) backgroundCheck() {
	defer s.checking.Store(false)
	s.dbmu.RLock()
	res, err := fsck.CheckRecords(s.db, s.opt.Keys, false, s.quit)
	s.dbmu.RUnlock()
	if errors.Is(err, fsck.ErrCheckAborted) {
		return
	}
	if err != nil {
		ce := &CorruptError{Path: s.path, Dir: s.dir, Err: err}
		s.failed.Store(ce)
		s.log.Error("data file failed its check; intake stopped", "path", s.path, "error", err)
		if s.opt.OnCorrupt != nil {
			s.opt.OnCorrupt(ce)
		}
		return
	}
	s.log.Info("data file check passed", "path", s.path, "events", res.Actual.Events)
	s.fixCounts(res)
}

// fixCounts corrects the persisted counters (the totals and each source's) when a check found
// them off.
func (s *Store) fixCounts(res fsck.CheckResult) {
	srcDelta := map[string]format.Counts{}
	for name, got := range res.ActualSources {
		if st := res.StoredSources[name]; st != got {
			srcDelta[name] = format.Counts{Events: got.Events - st.Events, Bytes: got.Bytes - st.Bytes}
		}
	}
	if res.Actual == res.Stored && len(srcDelta) == 0 {
		return
	}
	d := format.Counts{
		Events: res.Actual.Events - res.Stored.Events, Bytes: res.Actual.Bytes - res.Stored.Bytes,
		DeadBatches: res.Actual.DeadBatches - res.Stored.DeadBatches,
		DeadEvents:  res.Actual.DeadEvents - res.Stored.DeadEvents, DeadBytes: res.Actual.DeadBytes - res.Stored.DeadBytes,
	}
	// Fewer records than counted: a damaged page header can hide records
	// (the file still passes every check), so say so where an operator looks.
	s.log.Warn("stored counters were off; corrected (fewer events than counted can mean a damaged page: outbox recover --force reports what it can read)",
		"path", s.path, "events_delta", d.Events, "bytes_delta", d.Bytes, "dead_batches_delta", d.DeadBatches, "sources_off", len(srcDelta))
	_ = s.submit(context.Background(), &request{kind: opFixCounts, delta: d, srcDelta: srcDelta})
}
