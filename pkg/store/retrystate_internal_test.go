package store

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

// evictBeyond is a Policy that keeps at most max event bytes, evicting from the head.
type evictBeyond struct{ max int64 }

func (p evictBeyond) Fits(int64) error { return nil }
func (p evictBeyond) Admit(stored, need int64, _ bool) (int64, error) {
	return max(stored+need-p.max, 0), nil
}
func (p evictBeyond) DeadExcess(int64) int64 { return 0 }

// retryStates returns the keys of the retry states saved in meta.
func retryStates(t *testing.T, s *Store) []string {
	t.Helper()
	var keys []string
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(format.BucketMeta).Cursor()
		for k, _ := c.Seek([]byte(format.RetryPrefix)); k != nil && bytes.HasPrefix(k, []byte(format.RetryPrefix)); k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestEvictOldest_TakesTheRetryStatesOfEvictedBatchesWithIt(t *testing.T) {
	ev := func(i int) []byte {
		return fmt.Appendf(nil, `{"messageId":"m%04d","pad":"%s"}`, i, strings.Repeat("x", 100))
	}
	size := int64(len(ev(0)))
	s, err := Open(t.TempDir(), Options{NoSync: true, Policy: evictBeyond{max: 30 * size}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	batch := func(first, n int) [][]byte {
		evs := make([][]byte, n)
		for i := range evs {
			evs[i] = ev(first + i)
		}
		return evs
	}
	if err := s.Append(ctx, batch(0, 30)); err != nil {
		t.Fatal(err)
	}
	all, err := s.Head(ctx, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, head := range [][]byte{all.Keys[0], all.Keys[10], all.Keys[20]} { // three batches in flight
		if err := s.SaveRetry(ctx, head, 10, []byte("state")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, batch(30, 15)); err != nil { // evicts the first 15 events
		t.Fatal(err)
	}
	got := retryStates(t, s)
	want := []string{string(retryKey(all.Keys[20]))}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("retry states after evicting the first batch and half the second: %q, want only the third's %q", got, want)
	}
}
