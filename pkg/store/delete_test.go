package store_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/outboxhq/outbox/pkg/store"
)

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// sized is event i with a size that varies with i, so that byte counters are checked for real.
func sized(i int) []byte {
	return []byte(fmt.Sprintf(`{"messageId":"m%06d","pad":"%s"}`, i, strings.Repeat("y", 40+(i*37)%400)))
}

// appendSized appends events first … first+n-1 (sized) in one commit.
func appendSized(t tb, s *store.Store, first, n int) {
	t.Helper()
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = sized(first + i)
	}
	if err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
}

// everything returns every queued event with its key, oldest first, without removing any.
func everything(t tb, s *store.Store) *store.Batch {
	t.Helper()
	b, err := s.Head(context.Background(), 1<<30, 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		return &store.Batch{}
	}
	return b
}

// wantQueued fails unless the store holds exactly events (oldest first) and its counters
// agree with them.
func wantQueued(t tb, s *store.Store, events [][]byte) {
	t.Helper()
	got := everything(t, s)
	if len(got.Events) != len(events) {
		t.Fatalf("%d events queued, want %d", len(got.Events), len(events))
	}
	var bytesWant int64
	for i, e := range events {
		if !bytes.Equal(got.Events[i], e) {
			t.Fatalf("event %d = %.20q…, want %.20q…", i, got.Events[i], e)
		}
		bytesWant += int64(len(e))
	}
	if st := s.Stats(); st.Events != int64(len(events)) || st.Bytes != bytesWant {
		t.Fatalf("Stats: %d events, %d bytes; want %d, %d", st.Events, st.Bytes, len(events), bytesWant)
	}
}

func TestDelete_RemovesExactlyTheGivenKeysAndKeepsCountsExact(t *testing.T) {
	const n = 400 // ~100 leaf pages
	run := func(lo, hi int) []int {
		var out []int
		for i := lo; i < hi; i++ {
			out = append(out, i)
		}
		return out
	}
	cases := []struct {
		name string
		del  []int // indexes of the events to delete, in the order given to Delete
	}{
		{"a batch at the head", run(0, 100)},
		{"consecutive batches at the head in one delete", run(0, 300)},
		{"the whole queue", run(0, n)},
		{"a lone event", run(17, 18)},
		{"a batch that is not at the head", run(150, 250)},
		{"batches with gaps between them", slices.Concat(run(0, 50), run(60, 61), run(62, 120), run(300, 310))},
		{"gaps within one leaf page", []int{0, 1, 2, 4, 5, 7, 9, 10, 11}},
		{"every other event", func() []int {
			var out []int
			for i := 0; i < n; i += 2 {
				out = append(out, i)
			}
			return out
		}()},
		{"keys out of order", []int{30, 10, 11, 12, 5, 200, 199, 31}},
		{"a key given twice is deleted once", []int{3, 4, 4, 5, 5, 5, 6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, dir, store.Options{NoSync: true})
			appendSized(t, s, 0, n)
			all := everything(t, s)
			keys := make([][]byte, len(tc.del))
			gone := map[int]bool{}
			for i, d := range tc.del {
				keys[i] = all.Keys()[d]
				gone[d] = true
			}
			if err := s.Delete(context.Background(), keys); err != nil {
				t.Fatal(err)
			}
			var left [][]byte
			for i := 0; i < n; i++ {
				if !gone[i] {
					left = append(left, sized(i))
				}
			}
			wantQueued(t, s, left)

			// Deleting the same keys again finds none of them and changes nothing.
			if err := s.Delete(context.Background(), keys); err != nil {
				t.Fatal(err)
			}
			wantQueued(t, s, left)

			// The counters were persisted with the commit.
			_ = s.Close()
			s = mustOpen(t, dir, store.Options{NoSync: true})
			wantQueued(t, s, left)
		})
	}
}

func TestDelete_ClearsTheRetryStateOfItsFirstKeyOnly(t *testing.T) {
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true})
	appendSized(t, s, 0, 30)
	all := everything(t, s)
	ctx := context.Background()
	saved := []byte(`{"a":3,"r":2}`)
	if err := s.SaveRetry(ctx, all.Keys()[0], 10, saved); err != nil {
		t.Fatal(err)
	}
	// Acking a later batch leaves the head's saved state alone.
	if err := s.Delete(ctx, all.Keys()[10:20]); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Head(ctx, 100, 1<<20); err != nil || string(h.Retry) != string(saved) || len(h.Events) != 10 {
		t.Fatalf("head after acking a later batch: %v, %v; want the saved batch of 10 with its state", h, err)
	}
	if err := s.Delete(ctx, all.Keys()[:10]); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Head(ctx, 100, 1<<20); err != nil || h.Retry != nil || len(h.Events) != 10 {
		t.Fatalf("head after acking the saved batch: %v, %v; want the last 10 events without state", h, err)
	}
}

// TestDelete_AnyKeysInAnyGroupKeepTheQueueAndCountsExact deletes random key sets (runs,
// gaps, disorder, repeats, keys already gone), some submitted together with appends and other
// deletes so that they share a transaction, and checks the queue against a model.
func TestDelete_AnyKeysInAnyGroupKeepTheQueueAndCountsExact(t *testing.T) {
	root := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp(root, "")
		if err != nil {
			rt.Fatal(err)
		}
		s, err := store.Open(dir, store.Options{NoSync: true})
		if err != nil {
			rt.Fatal(err)
		}
		defer s.Close()
		next := 0
		var model []int // queued event numbers, oldest first
		appendN := func(n int) {
			appendSized(rt, s, next, n)
			for i := 0; i < n; i++ {
				model = append(model, next+i)
			}
			next += n
		}
		appendN(rapid.IntRange(1, 300).Draw(rt, "initial"))
		var gone [][]byte // keys deleted earlier
		for step := rapid.IntRange(1, 4).Draw(rt, "steps"); step > 0; step-- {
			all := everything(rt, s)
			var keys [][]byte
			del := map[int]bool{}
			for r := rapid.IntRange(1, 3).Draw(rt, "runs"); r > 0 && len(all.Keys()) > 0; r-- {
				lo := rapid.IntRange(0, len(all.Keys())-1).Draw(rt, "lo")
				hi := rapid.IntRange(lo+1, min(len(all.Keys()), lo+120)).Draw(rt, "hi")
				for i := lo; i < hi; i++ {
					keys = append(keys, all.Keys()[i])
					del[i] = true
				}
			}
			if len(gone) > 0 && rapid.Bool().Draw(rt, "stale") {
				keys = append(keys, gone[rapid.IntRange(0, len(gone)-1).Draw(rt, "stale_key")])
			}
			if len(keys) > 1 && rapid.Bool().Draw(rt, "shuffle") {
				keys = rapid.Permutation(keys).Draw(rt, "perm")
			}
			split := rapid.IntRange(0, len(keys)).Draw(rt, "split") // two requests, maybe one group
			more := rapid.IntRange(0, 40).Draw(rt, "append_beside")
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i, part := range [][][]byte{keys[:split], keys[split:]} {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = s.Delete(context.Background(), part) }()
			}
			if more > 0 {
				evs := make([][]byte, more)
				for i := range evs {
					evs[i] = sized(next + i)
				}
				wg.Add(1)
				go func() { defer wg.Done(); errs[2] = s.Append(context.Background(), evs) }()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					rt.Fatal(err)
				}
			}
			var left []int
			for i, e := range model {
				if del[i] {
					gone = append(gone, all.Keys()[i])
				} else {
					left = append(left, e)
				}
			}
			model = left
			for i := 0; i < more; i++ {
				model = append(model, next+i)
			}
			next += more
			want := make([][]byte, len(model))
			for i, e := range model {
				want[i] = sized(e)
			}
			wantQueued(rt, s, want)
		}
	})
}

func TestAppend_DropOldestEvictsJustEnoughHeadEventsWithExactCounts(t *testing.T) {
	var max int64
	for i := 0; i < 300; i++ {
		max += int64(len(sized(i)))
	}
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true, Policy: quotaPolicy(max, true)})
	appendSized(t, s, 0, 300)
	appendSized(t, s, 300, 150) // evicts from the head, across many leaf pages, until these fit
	var need, held int64
	for i := 300; i < 450; i++ {
		need += int64(len(sized(i)))
	}
	first := 0
	for held = max; held+need > max; first++ {
		held -= int64(len(sized(first)))
	}
	var want [][]byte
	for i := first; i < 450; i++ {
		want = append(want, sized(i))
	}
	wantQueued(t, s, want)
	if got := s.Stats().Dropped[store.ReasonDropOldest]; got != int64(first) {
		t.Fatalf("%d counted as dropped, want %d", got, first)
	}
}
