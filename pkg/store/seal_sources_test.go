package store_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/outboxhq/outbox/pkg/store"
)

// A source's records are sealed with its own bucket's name as additional data: a plain queue
// with two sources is sealed whole at an Open with a key, reads back per source, and a record
// moved from one source's bucket into another's is damaged, never read as the other's.
func TestEncryption_EverySourceIsSealedWithItsOwnBucket(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := mustOpen(t, dir, store.Options{})
	done := make(chan error, 1)
	for i := range 4 {
		for _, src := range []string{"app-a", store.DefaultSource} {
			if err := s.AppendAwaitedIn(ctx, src, [][]byte{personalEvent(i)}, func(err error) { done <- err }); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = s.Close()
	s = mustOpen(t, dir, store.Options{Keys: testKeys(t, 7)})
	if raw := rawFile(t, dir); bytes.Contains(raw, secretEmail) {
		t.Fatal("a source's plain records were left in the file once Open with a key returned")
	}
	for _, src := range []string{"app-a", store.DefaultSource} {
		b, err := s.HeadIn(ctx, src, 10, 1<<20)
		if err != nil || b.Len() != 4 || !bytes.Equal(b.Events[0], personalEvent(0)) {
			t.Fatalf("source %s sealed: %v, %v", src, b, err)
		}
	}
	_ = s.Close()
	swap(t, dir, "events", "events.app-a", 0)
	s = mustOpen(t, dir, store.Options{Keys: testKeys(t, 7), BackgroundCheckBytes: -1})
	defer s.Close()
	b, err := s.HeadIn(ctx, "app-a", 10, 1<<20)
	if err == nil && b != nil && b.Len() == 4 {
		t.Fatalf("a record moved into app-a's bucket was read as app-a's: %d events", b.Len())
	}
}
