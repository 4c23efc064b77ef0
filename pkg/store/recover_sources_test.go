package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/store/fsck"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// recover keeps each event in its source (never under another source's credentials), each
// source's counters, the per-source retry states and the source registry; with encryption on,
// a source's records (sealed for their own bucket) are opened and kept, not counted unreadable.
func TestRecover_KeepsEverySourceAndTheRegistry(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys *keyring.Keyring
	}{
		{"plain", nil},
		{"sealed", testKeys(t, 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, store.Options{NoSync: true, Keys: tc.keys})
			ctx := context.Background()
			ev := func(s string) [][]byte { return [][]byte{[]byte(`{"e":"` + s + `","email":"x@example.com"}`)} }
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

			rep, err := fsck.RecoverWith(dir, fsck.RecoverOptions{Force: true, Keys: tc.keys})
			if err != nil {
				t.Fatalf("recover: %v (%+v)", err, rep)
			}
			if rep.Saved != 3 || rep.Unreadable != 0 {
				t.Fatalf("recover saved %d, unreadable %d; want 3 and 0 (%+v)", rep.Saved, rep.Unreadable, rep)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "outbox.db"))
			must(err)
			if sealed := tc.keys != nil; sealed == bytes.Contains(raw, []byte("x@example.com")) {
				t.Fatalf("the recovered file holds the email: %v, want %v", !sealed, !sealed)
			}
			s = mustOpen(t, dir, store.Options{NoSync: true, Keys: tc.keys})
			defer s.Close()
			got := map[string]int64{}
			for _, st := range s.Sources() {
				got[st.Name] = st.Events
			}
			if got["app-a"] != 2 || got["default"] != 1 {
				t.Fatalf("sources after recover: %v, want app-a 2 and default 1", got)
			}
			b, err := s.HeadIn(ctx, "app-a", 10, 1<<20)
			if err != nil || b == nil || b.Len() != 2 || !bytes.Contains(b.Events[0], []byte(`"a1"`)) || b.Source != "app-a" {
				t.Fatalf("app-a after recover: %+v, %v", b, err)
			}
			d, err := s.HeadIn(ctx, "default", 10, 1<<20)
			if err != nil || d == nil || d.Len() != 1 || !bytes.Contains(d.Events[0], []byte(`"d1"`)) {
				t.Fatalf("default after recover: %+v, %v", d, err)
			}
			if recs, err := s.SourceRecords(); err != nil || string(recs["relay-x"]) != `{"write_key":"k"}` {
				t.Fatalf("registry after recover: %v, %v", recs, err)
			}
		})
	}
}

// A queue whose only sealed records are another source's is refused without its key, as the
// default source's would be: they are never opened with the wrong key and dropped as damage.
func TestEncryption_MissingKeyIsRefusedWhenOnlyAnotherSourceHoldsRecords(t *testing.T) {
	dir := t.TempDir()
	a := testKeys(t, 1)
	s := mustOpen(t, dir, store.Options{Keys: a})
	done := make(chan error, 1)
	if err := s.AppendAwaitedIn(context.Background(), "app-a", [][]byte{[]byte(`{"e":"a1"}`)}, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := rawFile(t, dir)
	_, err := store.Open(dir, store.Options{Keys: testKeys(t, 2)})
	var me *keyring.MissingError
	if !errors.As(err, &me) || len(me.IDs) != 1 || me.IDs[0] != a.IDs()[0] {
		t.Fatalf("open with another key = %v, want a *keyring.MissingError naming %s", err, a.IDs()[0])
	}
	if !bytes.Equal(rawFile(t, dir), before) {
		t.Fatal("the data file changed")
	}
}
