package store_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/segmentio/ksuid"
)

// userEvent is an event of user u.
func userEvent(u string, i int) []byte {
	return []byte(fmt.Sprintf(`{"userId":%q,"messageId":"m%03d"}`, u, i))
}

// ofUser matches the events of user u.
func ofUser(u string) func([]byte) bool {
	needle := []byte(fmt.Sprintf(`"userId":%q`, u))
	return func(ev []byte) bool { return bytes.Contains(ev, needle) }
}

func TestStore_Forget_DeletesQueuedAndDeadEventsOfTheUser(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := mustOpen(t, dir, store.Options{})
	// Dead letters: one batch of the user alone, one mixed.
	if err := s.Append(ctx, [][]byte{userEvent("gone", 0), userEvent("gone", 1)}); err != nil {
		t.Fatal(err)
	}
	b, _ := s.Head(ctx, 10, 1<<20)
	if err := s.MoveDead(ctx, b.Keys(), store.DeadInfo{Reason: "rejected", Status: 400, Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, [][]byte{userEvent("kept", 2), userEvent("gone", 3), userEvent("kept", 4)}); err != nil {
		t.Fatal(err)
	}
	b, _ = s.Head(ctx, 10, 1<<20)
	if err := s.MoveDead(ctx, b.Keys(), store.DeadInfo{Reason: "budget_spent", Attempts: 11}); err != nil {
		t.Fatal(err)
	}
	// The queue: the user's events among others, the first batch in flight with a saved state.
	var evs [][]byte
	for i := 5; i < 15; i++ {
		u := "kept"
		if i%3 == 0 {
			u = "gone"
		}
		evs = append(evs, userEvent(u, i))
	}
	if err := s.Append(ctx, evs); err != nil {
		t.Fatal(err)
	}
	head, _ := s.Head(ctx, 4, 1<<20)
	if err := s.SaveRetry(ctx, head.Keys()[0], len(head.Keys()), []byte(`{"a":3,"r":3}`)); err != nil {
		t.Fatal(err)
	}

	res, err := s.Forget(ctx, ofUser("gone"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.ForgetResult{Queued: 3, Dead: 3, DeadBatches: 1,
		Sources: map[string]store.SourceForgotten{"default": {Queued: 3, Dead: 3, DeadBatches: 1}}}); !reflect.DeepEqual(res, want) {
		t.Fatalf("Forget = %+v, want %+v", res, want)
	}
	check := func(s *store.Store) {
		t.Helper()
		st := s.Stats()
		if st.Events != 7 || st.DeadBatches != 1 || st.DeadEvents != 2 {
			t.Fatalf("stats after forget: %d queued, %d dead batches of %d events; want 7, 1, 2", st.Events, st.DeadBatches, st.DeadEvents)
		}
		dead, err := s.DeadList()
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.DeadGet(mustKey(t, dead[0].ID))
		if err != nil {
			t.Fatal(err)
		}
		if d.Info.Reason != "budget_spent" || d.Count != 2 || d.Bytes != int64(len(userEvent("kept", 2))+len(userEvent("kept", 4))) ||
			string(d.Events[0]) != string(userEvent("kept", 2)) || string(d.Events[1]) != string(userEvent("kept", 4)) {
			t.Fatalf("mixed dead batch after forget: %+v", d)
		}
	}
	check(s)
	// The batch that lost an event is no longer the one its saved state describes.
	head, _ = s.Head(ctx, 4, 1<<20)
	if head.Retry != nil {
		t.Errorf("saved retry state kept for a batch that lost an event: %q", head.Retry)
	}
	// The counters are the file's: a reopen (which checks them) agrees.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, store.Options{})
	check(s)
	for _, id := range drainIDs(t, s) {
		if id == "" {
			t.Fatal("empty id")
		}
	}
}

func TestStore_Forget_MatchingNothingChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, t.TempDir(), store.Options{})
	fill(t, s, 50)
	before := s.Stats()
	res, err := s.Forget(ctx, ofUser("nobody"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, store.ForgetResult{}) || s.Stats().Events != before.Events || s.Stats().Bytes != before.Bytes {
		t.Fatalf("Forget of nobody = %+v, stats %+v", res, s.Stats())
	}
}

func TestStore_CountDropped_CountsInStatsAndOnDrop(t *testing.T) {
	var got []string
	s := mustOpen(t, t.TempDir(), store.Options{OnDrop: func(reason string, n int) { got = append(got, fmt.Sprint(reason, n)) }})
	s.CountDropped(store.ReasonSuppressed, 3)
	s.CountDropped(store.ReasonSuppressed, 2)
	s.CountDropped(store.ReasonSuppressed, 0)
	if n := s.Stats().Dropped[store.ReasonSuppressed]; n != 5 {
		t.Fatalf("Stats.Dropped[suppressed] = %d, want 5", n)
	}
	if fmt.Sprint(got) != "[suppressed3 suppressed2]" {
		t.Fatalf("OnDrop calls: %v", got)
	}
}

// mustKey is the key of a dead batch id.
func mustKey(t *testing.T, id string) []byte {
	t.Helper()
	k, err := ksuid.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	return k.Bytes()
}

func TestStore_Forget_ReachesEverySource(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, t.TempDir(), store.Options{})
	done := make(chan error, 1)
	for i, src := range []string{"app-a", "app-b", store.DefaultSource} {
		if err := s.AppendAwaitedIn(ctx, src, [][]byte{userEvent("gone", i), userEvent("kept", 10+i)}, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Forget(ctx, ofUser("gone"))
	want := map[string]store.SourceForgotten{"app-a": {Queued: 1}, "app-b": {Queued: 1}, "default": {Queued: 1}}
	if err != nil || res.Queued != 3 || !reflect.DeepEqual(res.Sources, want) {
		t.Fatalf("forget: %+v, %v; want 3 queued events, one per source", res, err)
	}
	for _, st := range s.Sources() {
		b, err := s.HeadIn(ctx, st.Name, 10, 1<<20)
		if err != nil || st.Events != 1 || b.Len() != 1 || bytes.Contains(b.Events[0], []byte("gone")) {
			t.Fatalf("source %s after forget: %d counted, batch %v, %v", st.Name, st.Events, b, err)
		}
	}
}
