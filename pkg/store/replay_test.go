package store_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
)

// appendIn stores events in source's FIFO and waits for the commit.
func appendIn(t *testing.T, s *store.Store, source string, events ...[]byte) {
	t.Helper()
	done := make(chan error, 1)
	if err := s.AppendAwaitedIn(context.Background(), source, events, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// deadHead moves the first n events of source's FIFO to a dead batch and returns it as
// DeadList reads it.
func deadHead(t *testing.T, s *store.Store, source string, n int) store.DeadBatch {
	t.Helper()
	b, err := s.HeadIn(context.Background(), source, n, 1<<20)
	if err != nil || b == nil || len(b.Keys()) != n {
		t.Fatalf("head of %s: %v, %v; want %d events", source, b, err, n)
	}
	// A caller's Replays is not the store's count: it is ignored.
	if err := s.MoveDeadIn(context.Background(), source, b.Keys(), store.DeadInfo{Reason: store.DeadRejected, Status: 400, Replays: 7}); err != nil {
		t.Fatal(err)
	}
	list, err := s.DeadList()
	if err != nil || len(list) == 0 {
		t.Fatalf("dead list: %v, %v", list, err)
	}
	return list[len(list)-1]
}

func replayAll(t *testing.T, s *store.Store, wantBatches int) {
	t.Helper()
	res, err := s.ReplayMatching(context.Background(), store.DeadFilter{})
	if err != nil || res.Batches != wantBatches {
		t.Fatalf("replay: %+v, %v; want %d batches", res, err, wantBatches)
	}
}

func TestStore_Replay_CountsTheReplaysOfABatchAcrossDeathsAndRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{NoSync: true})
	var sent [][]byte
	for i := range 4 {
		sent = append(sent, fmt.Appendf(nil, `{"messageId":"m%d"}`, i))
	}
	if err := s.Append(ctx, sent); err != nil {
		t.Fatal(err)
	}
	if d := deadHead(t, s, "default", 4); d.Info.Replays != 0 {
		t.Fatalf("first death: replays %d, want 0", d.Info.Replays)
	}
	replayAll(t, s, 1)
	// Restarted between the replay and the next death: the count is in the file.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, store.Options{NoSync: true})
	// The uploader's batches need not be the dead batch: half of it dies, half is delivered.
	d := deadHead(t, s, "default", 2)
	b, _ := s.Head(ctx, 10, 1<<20)
	if err := s.Delete(ctx, b.Keys()); err != nil {
		t.Fatal(err)
	}
	if d.Info.Replays != 1 {
		t.Fatalf("died again after one replay: replays %d, want 1", d.Info.Replays)
	}
	got, err := s.DeadGet(mustKey(t, d.ID))
	if err != nil || len(got.Events) != 2 || !bytes.Equal(got.Events[0], sent[0]) || !bytes.Equal(got.Events[1], sent[1]) {
		t.Fatalf("events after a replay: %q, %v; want the first two as sent (messageIds kept)", got.Events, err)
	}
	replayAll(t, s, 1)
	if d := deadHead(t, s, "default", 2); d.Info.Replays != 2 {
		t.Fatalf("died a third time: replays %d, want 2", d.Info.Replays)
	}
	// A batch of replayed events and fresh ones counts the replays of the replayed ones.
	replayAll(t, s, 1)
	if err := s.Append(ctx, [][]byte{[]byte(`{"messageId":"fresh"}`)}); err != nil {
		t.Fatal(err)
	}
	if d := deadHead(t, s, "default", 3); d.Info.Replays != 3 {
		t.Fatalf("replayed and fresh events died together: replays %d, want 3", d.Info.Replays)
	}
	// Events never replayed count none.
	if _, err := s.PurgeMatching(ctx, store.DeadFilter{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, [][]byte{[]byte(`{"messageId":"new"}`)}); err != nil {
		t.Fatal(err)
	}
	if d := deadHead(t, s, "default", 1); d.Info.Replays != 0 {
		t.Fatalf("a batch never replayed: replays %d, want 0", d.Info.Replays)
	}
}

func TestStore_Replay_ARunOfAnotherSourceCountsNothing(t *testing.T) {
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true})
	appendIn(t, s, "b", []byte(`{"messageId":"b0"}`))
	deadHead(t, s, "b", 1)
	// a's batch spans keys before and after b's replayed run.
	appendIn(t, s, "a", []byte(`{"messageId":"a0"}`))
	replayAll(t, s, 1)
	appendIn(t, s, "a", []byte(`{"messageId":"a1"}`))
	if d := deadHead(t, s, "a", 2); d.Info.Replays != 0 || d.Info.Source != "a" {
		t.Fatalf("a's batch around b's replayed run: %+v; want source a, no replays", d.Info)
	}
	if d := deadHead(t, s, "b", 1); d.Info.Replays != 1 || d.Info.Source != "b" {
		t.Fatalf("b's replayed batch: %+v; want source b, one replay", d.Info)
	}
}

func TestStore_ReplayAndPurgeMatching_ActOnTheMatchesOnly(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true})
	for i, src := range []string{"a", "b", "a"} {
		appendIn(t, s, src, fmt.Appendf(nil, `{"messageId":"m%d"}`, i), fmt.Appendf(nil, `{"messageId":"n%d"}`, i))
		b, _ := s.HeadIn(ctx, src, 10, 1<<20)
		info := store.DeadInfo{Reason: store.DeadRejected, Status: 400 + i}
		if err := s.MoveDeadIn(ctx, src, b.Keys(), info); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Stats()
	if res, err := s.ReplayMatching(ctx, store.DeadFilter{Reason: store.DeadTooLarge}); err != nil || res != (store.DeadResult{}) {
		t.Fatalf("replay matching nothing: %+v, %v", res, err)
	}
	if res, err := s.PurgeMatching(ctx, store.DeadFilter{Source: "c"}); err != nil || res != (store.DeadResult{}) {
		t.Fatalf("purge matching nothing: %+v, %v", res, err)
	}
	if st := s.Stats(); st.DeadBatches != before.DeadBatches || st.Events != before.Events {
		t.Fatalf("a filter matching nothing changed the store: %+v, was %+v", st, before)
	}
	if res, err := s.PurgeMatching(ctx, store.DeadFilter{Status: "401"}); err != nil || res != (store.DeadResult{Batches: 1, Events: 2}) {
		t.Fatalf("purge status 401: %+v, %v; want b's batch of 2", res, err)
	}
	if res, err := s.ReplayMatching(ctx, store.DeadFilter{Source: "a", Status: "402"}); err != nil || res != (store.DeadResult{Batches: 1, Events: 2}) {
		t.Fatalf("replay a's status 402: %+v, %v; want one batch of 2", res, err)
	}
	list, _ := s.DeadList()
	if len(list) != 1 || list[0].Info.Status != 400 || list[0].Info.Source != "a" {
		t.Fatalf("left: %+v; want a's status-400 batch alone", list)
	}
	if b, _ := s.HeadIn(ctx, "a", 10, 1<<20); b == nil || string(b.Events[0]) != `{"messageId":"m2"}` {
		t.Fatalf("a's queue after the replay: %v; want the replayed batch", b)
	}
	matched, err := s.DeadListMatching(store.DeadFilter{Status: "400"})
	if err != nil || len(matched) != 1 || matched[0].ID != list[0].ID {
		t.Fatalf("list status 400: %+v, %v", matched, err)
	}
}

// recover keeps the replay runs with the events (which keep their keys): a replayed batch that
// dies after a recovery still counts its replay.
func TestRecover_KeepsTheReplayCounts(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{NoSync: true})
	appendIn(t, s, "a", []byte(`{"messageId":"a0"}`))
	deadHead(t, s, "a", 1)
	replayAll(t, s, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, store.Options{NoSync: true})
	if d := deadHead(t, s, "a", 1); d.Info.Replays != 1 {
		t.Fatalf("replayed batch dead after a recovery: replays %d, want 1", d.Info.Replays)
	}
}
