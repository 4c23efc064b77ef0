package store

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	"github.com/segmentio/ksuid"
	bolt "go.etcd.io/bbolt"
)

// replayRunKeys returns the meta keys of every replay run.
func replayRunKeys(t *testing.T, s *Store) [][]byte {
	t.Helper()
	var keys [][]byte
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(format.BucketMeta).Cursor()
		for k, _ := c.Seek([]byte("p.")); k != nil && bytes.HasPrefix(k, []byte("p.")); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestReplayRuns_AreDeletedOnceNoneOfTheirEventsIsQueued(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dead := func(n int) {
		t.Helper()
		b, err := s.Head(ctx, n, 1<<20)
		if err != nil || b.Len() != n {
			t.Fatalf("head: %v, %v", b, err)
		}
		if err := s.MoveDead(ctx, b.Keys(), DeadInfo{Reason: DeadRejected}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if err := s.Append(ctx, [][]byte{fmt.Appendf(nil, `{"messageId":"m%d"}`, i)}); err != nil {
			t.Fatal(err)
		}
		dead(1)
	}
	if _, err := s.Replay(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if runs := replayRunKeys(t, s); len(runs) != 2 {
		t.Fatalf("after replaying two dead batches: %d runs, want 2", len(runs))
	}
	// An ack of the first run's event deletes that run at once.
	b, _ := s.Head(ctx, 1, 1<<20)
	if err := s.Delete(ctx, b.Keys()); err != nil {
		t.Fatal(err)
	}
	if runs := replayRunKeys(t, s); len(runs) != 1 {
		t.Fatalf("after acking the first run: %d runs, want 1", len(runs))
	}
	// The second run's event is forgotten, not acked: its run goes at the next dead-lettering.
	if _, err := s.Forget(ctx, func(ev []byte) bool { return bytes.Contains(ev, []byte(`"m1"`)) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, [][]byte{[]byte(`{"messageId":"other"}`)}); err != nil {
		t.Fatal(err)
	}
	dead(1)
	if runs := replayRunKeys(t, s); len(runs) != 0 {
		t.Fatalf("after the next dead-lettering: %d runs, want none", len(runs))
	}
}

// TestDeadGet_ReadsADeadBatchAsTheReleaseBeforeReasonsWroteIt writes, straight into the file,
// a dead batch as the uploader of the release before dead-letter reasons and result codes
// wrote it: its reason the whole sentence, no code. It reads back with its reason, the
// sentence as its detail and its status as its code, and filters match it.
func TestDeadGet_ReadsADeadBatchAsTheReleaseBeforeReasonsWroteIt(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const sentence = `retry budget spent: retry.max_retries reached after 1 retries (last: collector answered 500: {"error":"Internal Server Error"})`
	infoJSON := `{"reason":` + fmt.Sprintf("%q", sentence) + `,"status":500,"attempts":2,"first_attempt":"2025-01-01T00:00:15Z",` +
		`"last_attempt":"2025-01-01T00:00:15.489882698Z","body":"eyJlcnJvciI6IkludGVybmFsIFNlcnZlciBFcnJvciJ9","source":"a"}`
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadID := ksuid.New()
	err = db.Update(func(tx *bolt.Tx) error {
		dead := format.EncodeRecord(format.EncodeDead([]byte(infoJSON), [][]byte{[]byte(`{"messageId":"d0"}`)}))
		return tx.Bucket(format.BucketDead).Put(deadID.Bytes(), dead)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.DeadGet(deadID.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if d.Info.Reason != DeadBudgetSpent || d.Info.Detail != sentence || d.Info.Code != "500" || d.Info.Status != 500 ||
		d.Info.Source != "a" || d.Info.Attempts != 2 || d.Info.Replays != 0 || string(d.Events[0]) != `{"messageId":"d0"}` {
		t.Fatalf("dead batch of the release before: %+v; want reason budget_spent, the sentence as detail, code 500, source a", d.Info)
	}
	for _, f := range []DeadFilter{{Reason: DeadBudgetSpent}, {Status: "500"}, {Source: "a"}} {
		if list, err := s.DeadListMatching(f); err != nil || len(list) != 1 {
			t.Errorf("filter %+v: %d batches, %v; want the old batch", f, len(list), err)
		}
	}
	res, err := s.ReplayMatching(context.Background(), DeadFilter{Reason: DeadBudgetSpent})
	if err != nil || res.Batches != 1 {
		t.Fatalf("replay of the old batch: %+v, %v", res, err)
	}
	b, err := s.HeadIn(context.Background(), "a", 10, 1<<20)
	if err != nil || b.Len() != 1 || string(b.Events[0]) != `{"messageId":"d0"}` {
		t.Fatalf("a's queue after the replay: %v, %v", b, err)
	}
}
