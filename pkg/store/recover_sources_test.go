package store_test

import (
	"context"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
)

// recover keeps each event in its source, each source's counters, and the source registry.
func TestRecover_KeepsEverySourceAndTheRegistry(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := func(s string) [][]byte { return [][]byte{[]byte(`{"e":"` + s + `"}`)} }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	appendIn := func(src, e string) {
		t.Helper()
		must(s.AppendAwaitedIn(ctx, src, ev(e), func(err error) { done <- err }))
		must(<-done)
	}
	appendIn("app-a", "a1")
	must(s.Append(ctx, ev("d1")))
	appendIn("app-a", "a2")
	must(s.SaveSourceRecord(ctx, "relay-x", []byte(`{"write_key":"k"}`)))
	must(s.Close())

	rep, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Force: true})
	if err != nil {
		t.Fatalf("recover: %v (%+v)", err, rep)
	}
	s, err = store.Open(dir, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := map[string]int64{}
	for _, st := range s.Sources() {
		got[st.Name] = st.Events
	}
	if got["app-a"] != 2 || got["default"] != 1 {
		t.Fatalf("sources after recover: %v, want app-a 2 and default 1", got)
	}
	b, err := s.HeadIn(ctx, "app-a", 10, 1<<20)
	if err != nil || b.Len() != 2 || string(b.Events[0]) != `{"e":"a1"}` || b.Source != "app-a" {
		t.Fatalf("app-a after recover: %+v, %v", b, err)
	}
	if recs, err := s.SourceRecords(); err != nil || string(recs["relay-x"]) != `{"write_key":"k"}` {
		t.Fatalf("registry after recover: %v, %v", recs, err)
	}
}
